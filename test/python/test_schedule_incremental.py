"""Schedules apply their primitives incrementally: one transform interpreter
run per primitive on IR kept parsed in one MLIRContext, with the same result
as replaying the whole script on the imported IR in one go."""

import pytest
import torch
from torch import nn

import lamina
from lamina import ScheduleError, _lamina


class MLP(nn.Module):
    def __init__(self, hidden=32, inter=64):
        super().__init__()
        self.fc_in = nn.Linear(hidden, inter)
        self.act = nn.GELU(approximate="tanh")
        self.fc_out = nn.Linear(inter, hidden)

    def forward(self, x):
        return x + self.fc_out(self.act(self.fc_in(x)))


class Stack(nn.Module):
    """Several MLP layers one after the other."""

    def __init__(self, layers=3):
        super().__init__()
        self.layers = nn.ModuleList(MLP() for _ in range(layers))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def inputs(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def megatron(sch, prefix):
    """Five primitives: fc_in column-parallel, fc_out row-parallel."""
    sch[f"{prefix}.fc_in"].shard("weight", 0)
    sch[f"{prefix}.fc_in"].shard("bias", 0)
    sch[f"{prefix}.fc_in"].sync("bwd_post", "all_reduce")
    sch[f"{prefix}.fc_out"].shard("weight", 1)
    sch[f"{prefix}.fc_out"].sync("fwd_post", "all_reduce")


def replayed(sch):
    """The imported IR after the whole script, in a context of its own."""
    return _lamina.transform_ir(sch.mlir(), sch.transform_script())


def test_one_interpreter_run_per_primitive_in_one_context():
    sch = lamina.create_schedule(Stack(), world_size=2,
                                 example_inputs=(inputs(2, 4, 32),))
    session = sch._session
    context = session.context_id
    assert session.interpreter_runs == 0
    primitives = 0
    for index in range(3):
        megatron(sch, f"layers.{index}")
        primitives += 5
        assert sch._session is session
        assert session.interpreter_runs == primitives
        assert session.context_id == context
    sch.find(r"layers\.[0-9]\.fc_out").checkpoint()
    sch["layers.1.fc_in"].annotate("weight", "tied", False)
    sch["layers.2.fc_out"].cut_pipeline_stage()
    primitives += 3
    assert primitives >= 8
    assert session.interpreter_runs == primitives
    assert session.context_id == context
    text = sch.scheduled_ir()
    assert text.count("lamina.checkpoint") >= 3 and "tied = false" in text
    assert text == replayed(sch)


def test_failing_primitive_leaves_the_ir_and_later_ones_apply():
    x = inputs(2, 4, 32)
    sch = lamina.create_schedule(Stack(2), world_size=2, example_inputs=(x,))
    megatron(sch, "layers.0")
    before, script = sch.scheduled_ir(), sch.transform_script()
    runs = sch._session.interpreter_runs
    twice = "weight is already sharded on axis 0; sharding a parameter " \
        "twice is an error"
    with pytest.raises(ScheduleError, match=twice) as error:
        sch["layers.0.fc_in"].shard("weight", 1)
    assert sch._session.interpreter_runs == runs + 1
    assert sch.scheduled_ir() == before
    assert sch.transform_script() == script
    # The message is the one the whole script replayed at once reports.
    unchecked = lamina.create_schedule(Stack(2), world_size=2)
    megatron(unchecked, "layers.0")
    unchecked["layers.0.fc_in"].shard("weight", 1)
    with pytest.raises(ValueError) as whole:
        _lamina.transform_ir(sch.mlir(), unchecked.transform_script())
    assert str(error.value) == str(whole.value)
    # Fails on its second layer, after sharding the first one: undone too.
    sch["layers.1.fc_in"].shard("weight", 0)
    before = sch.scheduled_ir()
    with pytest.raises(ScheduleError, match=twice):
        sch.find(r"layers\.[0-9]\.fc_in").shard("weight", 0)
    assert sch.scheduled_ir() == before
    sch["layers.1.fc_in"].shard("bias", 0)
    sch["layers.1.fc_in"].sync("bwd_post", "all_reduce")
    sch["layers.1.fc_out"].shard("weight", 1)
    sch["layers.1.fc_out"].sync("fwd_post", "all_reduce")
    assert sch._session.interpreter_runs == runs + 7
    assert "layers.1.fc_out" in sch.scheduled_ir()
    assert sch.scheduled_ir() == replayed(sch)


def test_new_shapes_replay_the_script_once():
    sch = lamina.create_schedule(Stack(2), world_size=2,
                                 example_inputs=(inputs(2, 4, 32),))
    megatron(sch, "layers.0")
    megatron(sch, "layers.1")
    first = sch._session.context_id
    sch.trace((inputs(3, 5, 32, seed=1),))
    assert sch._session.context_id != first
    assert sch._session.interpreter_runs == 1
    assert "tensor<3x5x32xf32>" in sch.scheduled_ir()
    assert sch.scheduled_ir() == replayed(sch)


def test_built_model_matches_eager_after_incremental_schedule():
    torch.manual_seed(0)
    model = Stack().eval()
    x = inputs(2, 4, 32)
    sch = lamina.create_schedule(model, example_inputs=(x,))
    for index in range(3):
        sch[f"layers.{index}.fc_in"].decompose()
        sch[f"layers.{index}.fc_out"].fuse()
    sch.find(r"layers\.[0-9]\.fc_in").checkpoint()
    assert sch._session.interpreter_runs == 7
    assert sch.scheduled_ir() == replayed(sch)
    torch.testing.assert_close(lamina.build(sch, (x,))(x), model(x))
