"""Every primitive's rejection paths in lamina.slapo: a ScheduleError
saying what cannot be compiled and why, before anything runs."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lamina.slapo as slapo
from lamina import ScheduleError


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 8)
        self.conv = nn.Conv1d(8, 8, 1)
        self.fc1 = nn.Linear(8, 32)
        self.drop = nn.Dropout(0.1)
        self.fc2 = nn.Linear(32, 8)
        self.register_buffer("scale", torch.ones(8))

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.fc1(x)))) * 2


@pytest.fixture
def sch():
    return slapo.create_schedule(Model(), world_size=2)


def test_shard_rejections(sch):
    with pytest.raises(ScheduleError, match="no parameter or buffer"):
        sch["fc1"].shard("scale", axis=0)
    with pytest.raises(ScheduleError, match="is a buffer"):
        sch.shard("scale", axis=0)
    with pytest.raises(ScheduleError, match="out of range"):
        sch["fc1"].shard("weight", axis=2)
    with pytest.raises(ScheduleError, match="axis must be an integer"):
        sch["fc1"].shard("weight", axis=True)
    with pytest.raises(ScheduleError, match="cannot be sharded"):
        slapo.create_schedule(nn.Linear(3, 3), world_size=2).shard(
            "weight", axis=0)
    # A convolution is not a layer Lamina compiles: said, not crashed.
    with pytest.raises(ScheduleError, match="Conv1d"):
        sch["conv"].shard("weight", axis=0)
    # An embedding is one (vocabulary parallel on axis 0).
    sch["emb"].shard("weight", axis=0)
    assert sch["emb"].metadata.primitives["shard"]["weight"] == 0
    sch["fc1"].shard("weight", axis=-2)  # counted from the end: axis 0
    assert sch["fc1"].metadata.primitives["shard"]["weight"] == 0


def test_sync_rejections(sch):
    with pytest.raises(ScheduleError, match="unknown mode"):
        sch["fc1"].sync(mode="bwd_pre", sync_op_or_fn="all_reduce")
    with pytest.raises(ScheduleError, match='shard\\("input", axis\\)'):
        sch["fc1"].sync(mode="fwd_pre", sync_op_or_fn=lambda m, i: i)
    with pytest.raises(ScheduleError, match="unknown arguments"):
        sch["fc1"].sync(mode="fwd_post", sync_op_or_fn="all_reduce",
                        group=None)
    with pytest.raises(ScheduleError, match="input shapes"):
        sch["fc1"].sync(mode="fwd_post", sync_op_or_fn="RS->SR")
    with pytest.raises(ScheduleError, match="Unknown resharding"):
        sch["fc1"].sync(mode="fwd_post", sync_op_or_fn="SS->RR")
    # A block's output computed by an element-wise op, not a layer.
    with pytest.raises(ScheduleError, match="not a Lamina layer"):
        sch["drop"].sync(mode="fwd_post", sync_op_or_fn="all_reduce")


def test_resharding_rejections():
    x = torch.randn(2, 4, 8)
    sch = slapo.create_schedule(Model(), world_size=2,
                                example_inputs=(x,))
    with pytest.raises(ScheduleError, match="forward sync"):
        sch["fc1"].sync(mode="bwd_post", sync_op_or_fn="RS->RR")
    with pytest.raises(ScheduleError, match="scatters a value where it is "
                       "produced"):
        sch["fc2"].sync(mode="fwd_pre", sync_op_or_fn="RR->SR")


def test_block_sync_goes_to_its_boundary_layers():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(8, 32)
            self.fc2 = nn.Linear(32, 8)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x)))

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.mlp = Block()

        def forward(self, x):
            return self.mlp(x) * 2

    sch = slapo.create_schedule(Outer(), world_size=2)
    sch["mlp.fc1"].shard("weight", axis=0)
    sch["mlp.fc1"].shard("bias", axis=0)
    sch["mlp"].sync(mode="bwd_post", sync_op_or_fn="all_reduce")
    sch["mlp.fc2"].shard("weight", axis=1)
    sch["mlp"].sync(mode="fwd_post", sync_op_or_fn="all_reduce")
    ir = sch.lamina_schedule.mlir((torch.randn(2, 8),))
    scheduled = sch.lamina_schedule.scheduled_ir()
    assert "lamina.sync \"mlp.fc1\"" in scheduled and \
        "<bwd_post, all_reduce>" in scheduled
    assert "linear_sync \"mlp.fc2\"" in scheduled
    assert ir != scheduled


def test_other_primitive_rejections(sch):
    with pytest.raises(ScheduleError, match="no dropout"):
        sch["fc1"].fork_rng()
    with pytest.raises(ScheduleError, match="no parameter"):
        sch["fc1"].annotate("gain", "key", 1)
    with pytest.raises(ScheduleError, match="order_args_fn"):
        sch["fc1"].checkpoint(order_args_fn=lambda *a: a)
    with pytest.raises(ScheduleError, match="top module cannot be cut"):
        sch.cut_pipeline_stage()
    with pytest.raises(ScheduleError, match="decompose applies"):
        sch["drop"].decompose()
    with pytest.raises(ScheduleError, match="no bias"):
        slapo.create_schedule(nn.Sequential(nn.Linear(4, 4, bias=False)))[
            "0"].decompose()
    sch["fc1"].shard("weight", axis=0)
    with pytest.raises(ScheduleError, match="before shard"):
        sch["fc1"].decompose()
