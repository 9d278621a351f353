"""2-D convolutions compiled (nn.Conv2d, F.conv2d): outputs, input and
parameter gradients against eager PyTorch for each geometry the importer
takes (strides, dilations, symmetric, asymmetric "same" and "valid"
padding, no bias, windows that leave input rows out), and the clear
errors for what it does not take."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lamina
from eager_twins import TOL, compiled_matches_eager, twins


class ConvReLU(nn.Module):
    """Slapo's fusion tests' model: conv, ReLU, + 1."""

    def __init__(self, **conv):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, **conv)

    def forward(self, x):
        return F.relu(self.conv(x)) + 1


GEOMETRIES = {
    "plain": dict(),
    "stride2": dict(stride=2),
    "padding1": dict(padding=1),
    "padding_hw": dict(padding=(2, 1)),
    "dilation2": dict(dilation=2),
    "mixed": dict(stride=(2, 3), padding=(1, 0), dilation=(1, 2)),
    # 11 rows, stride 3: the windows reach rows 0-9, row 10 gets no gradient
    "unreached_rows": dict(stride=3),
    "same": dict(padding="same", dilation=(2, 1)),
    "valid": dict(padding="valid"),
    "no_bias": dict(bias=False),
}


@pytest.mark.parametrize("geometry", GEOMETRIES.values(), ids=GEOMETRIES)
def test_conv2d_matches_eager(geometry):
    compiled_matches_eager(lambda: ConvReLU(**geometry), (2, 3, 11, 10))


def test_imports_as_upstream_convolution():
    compiled = compiled_matches_eager(lambda: ConvReLU(padding=1),
                                      (1, 3, 8, 8))
    imported = compiled.ir("imported")
    assert "linalg.conv_2d_nchw_fchw" in imported
    assert "tensor.pad" in imported


class Functional(nn.Module):
    """F.conv2d on the module's own parameters, then a linear head."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 2, 2, 3) * 0.3)
        self.bias = nn.Parameter(torch.randn(4) * 0.1)
        self.head = nn.Linear(4 * 6 * 3, 5)

    def forward(self, x):
        y = F.conv2d(x, self.weight, self.bias, stride=(1, 2), padding=1)
        return self.head(torch.tanh(y).flatten(1))


def test_functional_conv2d_in_a_network():
    compiled_matches_eager(Functional, (3, 2, 5, 6))


def test_slapo_conv_model_trains_with_sgd():
    """Five SGD steps of Slapo's conv model, compiled, equal eager's."""
    model, eager = twins(ConvReLU)
    compiled = lamina.build(lamina.create_schedule(model))
    ours = torch.optim.SGD(compiled.parameters(), lr=0.05)
    theirs = torch.optim.SGD(eager.parameters(), lr=0.05)
    x = torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(3))
    for _ in range(5):
        for net, opt in ((compiled, ours), (eager, theirs)):
            opt.zero_grad()
            net(x).square().mean().backward()
            opt.step()
    for (name, p), q in zip(compiled.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p, q, **TOL, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("conv, message", [
    (nn.Conv2d(4, 4, 3, groups=2), "groups=2"),
    (nn.Conv2d(4, 4, 3, padding=1, padding_mode="reflect"),
     "padding_mode='reflect'"),
], ids=["groups", "padding_mode"])
def test_unsupported_convolutions_are_named(conv, message):
    with pytest.raises(lamina.UnsupportedOperationError, match=message):
        lamina.build(lamina.create_schedule(conv))(torch.randn(1, 4, 6, 6))


def test_half_precision_convolutions_are_named():
    conv = nn.Conv2d(4, 4, 3).to(torch.bfloat16)
    with pytest.raises(lamina.UnsupportedOperationError,
                       match="bf16 input by bf16 weight"):
        lamina.build(lamina.create_schedule(conv))(
            torch.randn(1, 4, 6, 6).to(torch.bfloat16))


def test_unbatched_input_is_named():
    conv = nn.Conv2d(4, 4, 3)
    with pytest.raises(lamina.UnsupportedOperationError,
                       match="3-D input"):
        lamina.build(lamina.create_schedule(conv))(torch.randn(4, 6, 6))
