"""Slapo's tests/test_fusion.py and tests/test_checkpoint.py
(test_checkpoint_function), ported: decompose, fuse of a found subgraph,
checkpoint of a subgraph, on the same models. Lamina is the compiler of a
fused region (compiler="TorchScript" or None): the region becomes a module
of its own that Lamina compiles with the rest (without a compiler, a chain
of module calls becomes Slapo's nn.Sequential). Slapo's convolutional
models compile too."""

import pytest
import torch
import torch.nn.functional as F
from torch import fx, nn

import lamina
import lamina.slapo as slapo
from lamina import ScheduleError
from lamina.slapo.pattern import call_module
from slapo_checks import ConvModel, forward_matches


def test_decompose():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(10, 20)
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(self.linear(x))

    model = Model()
    reference = Model()
    reference.load_state_dict(model.state_dict())
    weight = model.linear.weight
    sch = slapo.create_schedule(model)
    sch["linear"].decompose()
    assert isinstance(sch["linear"].mod, lamina.op.LinearWithSeparateBias)
    assert sch["linear"].mod.weight is weight  # the same Parameter
    sch.trace(flatten=True)
    built = forward_matches(sch, reference, torch.randn(32, 10))
    assert "lamina.linear_separate_bias" in built.ir("imported")
    with pytest.raises(ScheduleError, match="nn.Linear"):
        sch["relu"].decompose()


def test_vertical_fusion():
    sch = slapo.create_schedule(ConvModel())

    def pattern(x: torch.Tensor):
        return F.relu(call_module("conv", x)) + 1

    subgraph = sch.find(pattern)
    assert len(subgraph[0]) == 3
    sch.fuse(subgraph, compiler="TorchScript", name="FusedReLU")
    fused = sch["FusedReLU_0"].mod
    assert isinstance(fused, fx.GraphModule)
    assert type(fused).__name__ == "FusedReLU"
    x = torch.randn(1, 3, 32, 32)
    torch.testing.assert_close(sch.mod(x), F.relu(sch.mod.conv(x)) + 1)
    built, _ = slapo.build(sch, init_weights=False)
    torch.testing.assert_close(built(x), F.relu(sch.mod.conv(x)) + 1)


def test_fallback_fusion():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 32, 3)
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(self.conv(x)) + 1

    sch = slapo.create_schedule(Model())

    def pattern(x: torch.Tensor):
        return F.relu(call_module("conv", x))

    subgraph = sch.find(pattern)
    assert len(subgraph[0]) == 2
    sch.fuse(subgraph, compiler=None, name="FusedConvReLU")
    fused = sch.mod.FusedConvReLU_0
    assert type(fused).__name__ == "FusedConvReLU"
    assert isinstance(fused, nn.Sequential)
    assert isinstance(getattr(fused, "0"), nn.Conv2d)
    assert isinstance(getattr(fused, "1"), nn.ReLU)
    x = torch.randn(1, 3, 32, 32)
    reference = F.relu(getattr(fused, "0")(x)) + 1
    built, _ = slapo.build(sch, init_weights=False)
    torch.testing.assert_close(built(x), reference)


class LinearAct(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.linear = nn.Linear(256, 256)
        self.act = act

    def forward(self, x):
        return self.act(self.linear(x))


def test_bias_gelu():
    """Slapo decomposes, traces and fuses `gelu(bias + x)` by hand. In
    Lamina the decomposed layer stays one op (its bias add is inside the
    layer, so the pattern has no match) and `fuse()` on the layer folds
    bias and GELU into the matmul's loop nest."""
    model = LinearAct(nn.GELU())
    sch = slapo.create_schedule(model)
    sch["linear"].decompose()
    sch.trace(flatten=True)
    assert sch.find(lambda x, bias: F.gelu(bias + x)) == []
    x = torch.randn(2, 16, 256)
    sch.lamina_schedule.trace((x,))
    sch["linear"].fuse()
    built = forward_matches(sch, model, x)
    assert "lamina.fused_linear" in built.ir("scheduled")


def test_fuse_found_subgraph_compiles():
    """A found element-wise subgraph fused into its own module: Lamina
    compiles the model with it and computes what eager does."""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(64, 64)

        def forward(self, x):
            return F.relu(self.fc(x)) + x

    model = Model()
    sch = slapo.create_schedule(model)
    subgraph = sch.find(lambda x: F.relu(x) + x)
    sch.fuse(subgraph, compiler="TorchScript", name="FusedReLUAdd")
    assert "FusedReLUAdd_0" in sch.child
    forward_matches(sch, lambda x: F.relu(model.fc(x)) + x,
                    torch.randn(4, 64))


def test_fuse_rejections():
    sch = slapo.create_schedule(ConvModel())
    with pytest.raises(ScheduleError, match="vertical fusion"):
        sch.fuse([[]])
    with pytest.raises(ScheduleError, match="compiler"):
        sch.fuse(sch.find(lambda x: F.relu(x) + 1), compiler="nvfuser")


def test_checkpoint_function():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer1 = nn.Linear(32, 32)
            self.layer2 = nn.Linear(32, 32)

        def forward(self, x):
            return self.layer2(F.relu(self.layer1(x)))

    model = Model()
    reference = Model()
    reference.load_state_dict(model.state_dict())
    sch = slapo.create_schedule(model)

    def pattern(x):
        return F.relu(call_module("layer1", x))

    subgraphs = sch.find(pattern)
    assert len(subgraphs) == 1 and len(subgraphs[0]) == 2
    sch.checkpoint(subgraphs)
    # Slapo's wrapper around the region's module.
    region = sch["CheckPointWrapper_0"].mod
    assert type(region).__name__ == "CheckPointWrapper"
    assert isinstance(region.mod.layer1, nn.Linear)
    assert "checkpoint" in sch.lamina_schedule.transform_script()
    built, _ = slapo.build(sch, init_weights=False)
    data = torch.randn(32, 32)
    ours, theirs = data.clone().requires_grad_(), data.clone().requires_grad_()
    out = built(ours)
    ref = reference(theirs)
    torch.testing.assert_close(out, ref)
    out.mean().backward()
    ref.mean().backward()
    params = dict(built.named_parameters())
    for name, param in reference.named_parameters():
        torch.testing.assert_close(params[name].grad, param.grad)
    # Reached through the wrapper too, as Slapo's test reads it.
    torch.testing.assert_close(
        built.CheckPointWrapper_0.mod.layer1.weight.grad,
        reference.layer1.weight.grad)
    torch.testing.assert_close(ours.grad, theirs.grad)
    # Recomputed, not saved: the checkpointed layer's values leave the
    # saved set.
    assert "lamina.checkpoint" in built.ir("scheduled")


def test_checkpoint_of_a_subgraph_without_layers_is_rejected():
    class Model(nn.Module):
        def forward(self, x):
            return F.relu(x) + x

    sch = slapo.create_schedule(Model())
    with pytest.raises(ScheduleError, match="no Lamina layer"):
        sch.checkpoint(sch.find(lambda x: F.relu(x) + x))
    assert "CheckPointWrapper_0" not in sch.child  # the model is unchanged
