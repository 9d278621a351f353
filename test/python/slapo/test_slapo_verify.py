"""slapo.Verify (Slapo's tests/test_verify.py, single-process cases):
primitives applied inside the block are checked at its end against the
model as it was at its start, outputs and, beyond Slapo, gradients."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lamina.slapo as slapo
from lamina import ScheduleError
from slapo_checks import ConvModel


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(64, 64)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.linear(x)) + 1


def test_vertical_fusion_verified():
    sch = slapo.create_schedule(Model())
    subgraph = sch.find(lambda x: F.relu(x) + 1)
    with slapo.Verify(sch, [torch.randn(8, 64)]):
        sch.fuse(subgraph, compiler="TorchScript", name="FusedReLU")


def test_conv_vertical_fusion_verified():
    """Slapo's own case: a convolution, ReLU and + 1 fused; outputs and
    gradients (of the convolution's parameters and of the input)."""
    sch = slapo.create_schedule(ConvModel())
    subgraph = sch.find(lambda x: F.relu(x) + 1)
    with slapo.Verify(sch, [torch.randn(1, 3, 32, 32, requires_grad=True)]):
        sch.fuse(subgraph, compiler="TorchScript", name="FusedReLU")


def test_bias_gelu_verified():
    class BiasGelu(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(64, 64)
            self.gelu = nn.GELU()

        def forward(self, x):
            return self.gelu(self.linear(x))

    sch = slapo.create_schedule(BiasGelu())
    with slapo.Verify(sch, [torch.randn(2, 8, 64)]):
        sch["linear"].decompose()
        sch.trace(flatten=True)
        sch["linear"].fuse()


def test_a_wrong_replacement_is_caught():
    sch = slapo.create_schedule(Model())
    with pytest.raises(AssertionError, match="result 0"):
        with slapo.Verify(sch, [torch.randn(8, 64)]):
            sch["act"].replace(nn.GELU())


def test_gradients_are_compared():
    """The gradients of the parameters and inputs are compared: a schedule
    that leaves a parameter without a gradient is reported."""
    sch = slapo.create_schedule(Model())
    with pytest.raises(AssertionError, match="has no gradient"):
        with slapo.Verify(sch, [torch.randn(8, 64)]):
            # The scheduled model computes the same from a frozen copy.
            frozen = nn.Linear(64, 64)
            frozen.load_state_dict(sch["linear"].mod.state_dict())
            frozen.weight = sch["linear"].mod.weight
            frozen.weight.requires_grad_(False)
            sch["linear"].replace(frozen)
    sch = slapo.create_schedule(Model())
    with slapo.Verify(sch, [torch.randn(8, 64)], check_gradients=False):
        sch["act"].replace(nn.ReLU())


def test_errors_inside_the_block_propagate():
    sch = slapo.create_schedule(Model())
    with pytest.raises(ScheduleError, match="no parameter"):
        with slapo.Verify(sch, [torch.randn(8, 64)]):
            sch["linear"].shard("scale", axis=0)


def test_disabled_and_device():
    sch = slapo.create_schedule(Model())
    with slapo.Verify(sch, [torch.randn(8, 64)], enable=False):
        sch["act"].replace(nn.GELU())  # not checked
    # A CUDA device (Slapo's scripts name the rank's GPU) verifies on the
    # CPU; another kind of device is rejected.
    slapo.Verify(sch, [torch.randn(8, 64)], device="cuda:0")
    with pytest.raises(ScheduleError, match="CPU"):
        slapo.Verify(sch, [torch.randn(8, 64)], device="meta")
