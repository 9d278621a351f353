"""lamina.lns convolutions: F.conv1d/conv2d/conv3d on LNS tensors and the
LNSConv1d/2d/3d layers against the xlnstorch reference's codes
(test/data/lns-golden-ops/layers: forward, input, weight and bias
gradients; initial parameters) and against float PyTorch."""

import pathlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lamina import lns
from lamina.lns import convolution
from lamina.lns.layers import LNSConv1d, LNSConv2d, LNSConv3d

GOLDEN = (pathlib.Path(__file__).resolve().parents[1] / "data"
          / "lns-golden-ops" / "layers")
CONV_FILES = sorted(p.name for p in GOLDEN.glob("conv*.npz"))
CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
LAYERS = {1: LNSConv1d, 2: LNSConv2d, 3: LNSConv3d}


def _base(d):
    f = int(d["f"])
    return {"f": f} if f >= 0 else {"b": float(d["b"])}


def _lns(codes, d, requires_grad=False):
    return lns.lnstensor(torch.tensor(codes.astype(np.float64)), from_lns=True,
                         requires_grad=requires_grad, **_base(d))


def test_the_golden_set_is_there():
    assert len(CONV_FILES) == 25


@pytest.mark.parametrize("name", CONV_FILES)
def test_conv_codes_equal_the_reference(name):
    d = np.load(GOLDEN / name, allow_pickle=False)
    nd = int(str(d["op"])[4])
    x = _lns(d["x"], d, True)
    w = _lns(d["weight"], d, True)
    b = _lns(d["bias"], d, True) if bool(d["has_bias"]) else None
    # 'same' / 'valid' files hold the reference's run with the equal
    # integer padding (the reference takes integers only).
    padding = str(d["lamina_padding"]) or tuple(int(p) for p in d["padding"])
    y = CONV[nd](x, w, b, stride=tuple(int(s) for s in d["stride"]),
                 padding=padding,
                 dilation=tuple(int(s) for s in d["dilation"]),
                 groups=int(d["groups"]))
    assert np.array_equal(y.codes.numpy(), d["out"])
    if "g" not in d:
        return
    y.backward(_lns(d["g"], d))
    assert np.array_equal(x.grad.codes.numpy(), d["grad_x"])
    assert np.array_equal(w.grad.codes.numpy(), d["grad_weight"])
    if b is not None:
        assert np.array_equal(b.grad.codes.numpy(), d["grad_bias"])


@pytest.mark.parametrize("name,make", [
    ("init_conv1d", lambda: LNSConv1d(4, 6, 3, groups=2)),
    ("init_conv2d", lambda: LNSConv2d(2, 3, (3, 2), bias=False)),
    ("init_conv3d", lambda: LNSConv3d(3, 3, (2, 2, 1), groups=3)),
])
def test_layers_start_from_the_reference_codes(name, make):
    d = np.load(GOLDEN / f"{name}.npz", allow_pickle=False)
    torch.manual_seed(int(d["seed"]))
    layer = make()
    assert np.array_equal(layer.weight.codes.numpy(), d["weight"])
    if "bias" in d:
        assert np.array_equal(layer.bias.codes.numpy(), d["bias"])
    else:
        assert layer.bias is None


def _float_conv(nd, x, w, b, **kw):
    return CONV[nd](x.value, w.value, None if b is None else b.value, **kw)


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")
@pytest.mark.parametrize("nd,x_shape,w_shape,kw", [
    (1, (2, 3, 9), (4, 3, 4), {"padding": "same"}),
    (2, (2, 4, 6, 5), (6, 2, 2, 3), {"padding": "same", "dilation": (1, 2),
                                     "groups": 2}),
    (2, (3, 5, 6), (2, 3, 3, 2), {"stride": (2, 3), "padding": (2, 0)}),
    (3, (2, 3, 4, 4), (2, 2, 2, 2, 2), {"padding": "same", "dilation": 2}),
])
def test_conv_follows_float_pytorch(nd, x_shape, w_shape, kw):
    # Values and gradients within the precision of f = 23 (an unbatched
    # input, even kernels under 'same' and strides included).
    torch.manual_seed(1)
    x = lns.lnstensor(torch.randn(x_shape), requires_grad=True)
    w = lns.lnstensor(torch.randn(w_shape), requires_grad=True)
    b = lns.lnstensor(torch.randn(w_shape[0]), requires_grad=True)
    y = CONV[nd](x, w, b, **kw)
    xf, wf, bf = (t.value.clone().requires_grad_() for t in (x, w, b))
    yf = CONV[nd](xf, wf, bf, **kw)
    assert y.shape == yf.shape
    np.testing.assert_allclose(y.value, yf.detach(), rtol=1e-4, atol=1e-5)
    g = torch.randn(yf.shape, dtype=torch.float64)
    y.backward(lns.lnstensor(g))
    yf.backward(g)
    for lns_t, float_t in ((x, xf), (w, wf), (b, bf)):
        np.testing.assert_allclose(lns_t.grad.value, float_t.grad,
                                   rtol=1e-4, atol=1e-5)


def test_operands_of_other_bases_and_floats_are_aligned():
    torch.manual_seed(2)
    x = lns.lnstensor(torch.randn(1, 2, 5), f=10)
    w = torch.randn(3, 2, 2, dtype=torch.float64)
    b = lns.lnstensor(torch.randn(3), f=12, requires_grad=True)
    y = F.conv1d(x, w, b)
    assert y.lns_base == x.lns_base
    expected = F.conv1d(x, lns.lnstensor(w, f=10), lns.lnstensor(b, f=10))
    assert torch.equal(y.codes, expected.codes)
    y.backward()
    assert b.grad.lns_base == b.lns_base


def test_torch_conv_layers_take_lns_inputs():
    torch.manual_seed(3)
    layer = torch.nn.Conv2d(2, 3, 3, padding=1).double()
    x = lns.lnstensor(torch.randn(1, 2, 4, 4), f=16)
    y = layer(x)
    expected = F.conv2d(x, lns.lnstensor(layer.weight.detach(), f=16),
                        lns.lnstensor(layer.bias.detach(), f=16), padding=1)
    assert torch.equal(y.codes, expected.codes)


def test_lns_conv_layers_register_and_train_lns_parameters():
    torch.manual_seed(4)
    layer = LNSConv2d(2, 4, (2, 3), stride=(1, 2), padding=1, groups=2,
                      weight_f=12)
    assert [n for n, _ in layer.named_parameters()] == ["weight_lns",
                                                        "bias_lns"]
    assert layer.weight.shape == (4, 1, 2, 3) and layer.bias.shape == (4,)
    assert layer.weight.lns_base == lns.Base(f=12)
    assert layer.bias.lns_base == lns.Base(f=12)
    assert len(layer.lns_parameters()) == 2
    x = lns.lnstensor(torch.randn(2, 2, 5, 6), f=12)
    y = layer(x)
    assert torch.equal(y.codes, F.conv2d(x, layer.weight, layer.bias,
                                         stride=(1, 2), padding=1,
                                         groups=2).codes)
    torch.sum(y).backward()
    assert layer.weight_lns.grad.shape == layer.weight_lns.shape
    state = layer.state_dict()
    again = LNSConv2d(2, 4, (2, 3), stride=(1, 2), padding=1, groups=2,
                      weight_f=12)
    again.load_state_dict(state)
    assert torch.equal(again.weight.codes, layer.weight.codes)
    # A float input is encoded in the weight's base; the result is LNS.
    z = layer(x.value)
    assert isinstance(z, lns.LNSTensor) and torch.equal(z.codes, y.codes)


def test_layer_arguments_and_bases():
    layer = LNSConv1d(2, 2, 3, padding="same", bias=False, weight_b=1.001)
    assert layer.kernel_size == (3,) and layer.padding == "same"
    assert layer.weight.lns_base == lns.Base(b=1.001) and layer.bias is None
    assert "padding='same'" in repr(layer)
    assert LNSConv3d(1, 1, 2).weight.shape == (1, 1, 2, 2, 2)
    with pytest.raises(ValueError, match="in_channels must be divisible"):
        LNSConv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible"):
        LNSConv2d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        LNSConv2d(2, 2, 3, padding_mode="mirror")
    with pytest.raises(NotImplementedError, match="zeros only"):
        LNSConv2d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(RuntimeError, match="strided convolutions"):
        LNSConv2d(2, 2, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="weight_f and weight_b"):
        LNSConv1d(2, 2, 3, weight_f=10, weight_b=1.001)


X = lns.lnstensor(torch.ones(1, 3, 5, 5), f=10)
W = lns.lnstensor(torch.ones(2, 3, 3, 3), f=10)


@pytest.mark.parametrize("call,message", [
    (lambda: F.conv2d(X, lns.lnstensor(torch.ones(2, 2, 3, 3)), groups=2),
     "expected input\\[1, 3, 5, 5\\] to have 4 channels, but got 3"),
    (lambda: F.conv2d(lns.lnstensor(torch.ones(3, 5)), W),
     "Expected 3D \\(unbatched\\) or 4D \\(batched\\) input to conv2d"),
    (lambda: F.conv2d(X, W, stride=(1, 2, 3)),
     "a list of 2 values to match the convolution dimensions"),
    (lambda: F.conv2d(X, W, stride=0), "non-positive stride"),
    (lambda: F.conv2d(X, W, padding=-1), "negative padding"),
    (lambda: F.conv2d(X, W, dilation=0), "dilation should be greater"),
    (lambda: F.conv2d(X, W, groups=0), "non-positive groups"),
    (lambda: F.conv2d(X, W, dilation=3), "Kernel size can't be greater"),
    (lambda: F.conv2d(X, W, padding="full"), "Invalid padding string"),
    (lambda: F.conv2d(X, W, padding="same", stride=2),
     "not supported for strided convolutions"),
    (lambda: F.conv2d(X, W, lns.lnstensor(torch.ones(3))),
     "expected bias to be 1-dimensional with 2 elements"),
    (lambda: F.conv2d(lns.lnstensor(torch.ones(1, 4, 5, 5)),
                      lns.lnstensor(torch.ones(3, 2, 3, 3)), groups=2),
     "expected weight to be divisible by 2 at dimension 0"),
    (lambda: F.conv1d(lns.lnstensor(torch.ones(1, 3, 5)), W),
     "conv1d expects a 3-D weight"),
])
def test_bad_arguments_raise_as_torch_does(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


def test_convolutions_run_eagerly_only():
    net = torch.nn.Sequential(LNSConv1d(2, 2, 3, padding=1, weight_f=10))
    sgd = lns.LNSSGD(net[0].lns_parameters(), lr=0.1)
    x = lns.lnstensor(torch.randn(2, 2, 4), f=10)
    t = lns.lnstensor(torch.randn(2, 2, 4), f=10)
    with pytest.raises(lns.CompileError,
                       match="conv1d does not compile into an LNS training"):
        lns.compile_step(net, F.mse_loss, sgd, (x, t))


def test_the_gather_geometry():
    g = convolution._geometry((1, 1, 7), (1, 1, 3), None, 2, 1, 2, 1, 1)
    assert g.size_out == (3,) and g.size_padded == (9,)
    assert g.window_index(0).tolist() == [[0, 2, 4], [2, 4, 6], [4, 6, 8]]
    # padded input 4 is read by output 2 at k = 0, output 1 at k = 1 and
    # output 0 at k = 2; input 1 by no output (3 = one past the end).
    assert g.source_index(0)[4].tolist() == [2, 1, 0]
    assert g.source_index(0)[1].tolist() == [3, 3, 3]
    # 'same' with an even reach puts the odd padding element after, as
    # torch does.
    same = convolution._geometry((1, 1, 6), (1, 1, 4), None, 1, "same", 1, 1,
                                 1)
    assert (same.pad_before, same.pad_after, same.size_out) == ((1,), (2,),
                                                                (6,))
