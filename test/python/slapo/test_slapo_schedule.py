"""The schedule objects of Slapo's API (Slapo's schedule.py; its
tests/test_utils.py and tests/test_trace.py without HuggingFace models):
the tree of schedules, addressing, metadata, tracing, and the world size
taken from the launched MPI world."""

import pytest
import torch
from torch import fx, nn

import lamina.slapo as slapo
from lamina import ScheduleError


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc_in = nn.Linear(16, 64)
        self.act = nn.GELU()
        self.fc_out = nn.Linear(64, 16)

    def forward(self, x):
        return self.fc_out(self.act(self.fc_in(x)))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(16)
        self.mlp = MLP()

    def forward(self, x):
        return x + self.mlp(self.ln(x))


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.h = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(16, 8)

    def forward(self, x):
        for block in self.h:
            x = block(x)
        return self.head(x)


def test_tree_and_addressing():
    model = Stack()
    sch = slapo.create_schedule(model)
    assert sch.mod is model and sch.path == "" and sch.parent is None
    assert set(sch.child) == {"h.0", "h.1", "head"}
    fc = sch["h.0"]["mlp"]["fc_in"]
    assert fc is sch["h.0.mlp.fc_in"]
    assert fc.mod is model.h[0].mlp.fc_in
    assert fc.path == "h.0.mlp.fc_in" and fc.name == "fc_in"
    assert fc.parent is sch["h.0.mlp"]
    assert fc.get_top_schedule() is sch
    assert "h.1.ln" in sch and "h.2" not in sch
    # torch.nn's own modules are leaves.
    assert fc.child == {}
    names = [name for name, _ in sch.named_schedules()]
    assert names[:4] == ["", "h.0", "h.0.ln", "h.0.mlp"]
    assert "h.1.mlp.fc_out" in names
    assert sch.get_module("h.1.mlp.act") is model.h[1].mlp.act


def test_unknown_path_is_a_key_error_and_a_schedule_error():
    sch = slapo.create_schedule(Stack())
    for path in ("h.0.attn", "h.3", "mlp"):
        with pytest.raises(KeyError):
            sch[path]
        with pytest.raises(ScheduleError, match="not a child"):
            sch[path]


def test_metadata_records_primitives():
    sch = slapo.create_schedule(Stack(), world_size=2)
    fc = sch["h.0.mlp.fc_in"]
    fc.shard("weight", axis=0)
    fc.shard("bias", axis=0)
    fc.sync(mode="bwd_post", sync_op_or_fn="all_reduce")
    assert fc.metadata.primitives["shard"] == {"weight": 0, "bias": 0}
    assert fc.metadata.primitives["sync"]["bwd_post"] == [("all_reduce", {})]
    assert fc.mod.weight.orig_shape == (64, 16)
    assert "orig_shape" in sch.metadata.param_tags
    assert "transform.lamina.shard" in sch.lamina_schedule.transform_script()
    with pytest.raises(ScheduleError, match="already sharded"):
        fc.shard("weight", axis=1)


def test_tied_weights_are_found():
    model = Stack()
    model.head.weight = nn.Parameter(torch.randn(8, 16))
    model.h[1].mlp.fc_out.weight = model.h[0].mlp.fc_out.weight
    sch = slapo.create_schedule(model)
    assert list(sch.metadata.tie_weights) == [model.h[0].mlp.fc_out.weight]
    assert sch["h.1"].metadata.tie_weights is sch.metadata.tie_weights


def test_trace_keeps_hierarchy_or_flattens():
    model = Stack()
    x = torch.randn(2, 4, 16)
    expected = model(x)
    sch = slapo.create_schedule(model)
    assert sch.trace()
    assert isinstance(sch.mod, fx.GraphModule)
    assert isinstance(sch["h.0"].mod, fx.GraphModule)
    assert isinstance(sch["h.0.mlp"].mod, fx.GraphModule)
    assert not isinstance(sch["h.0.mlp.fc_in"].mod, fx.GraphModule)
    torch.testing.assert_close(sch.mod(x), expected)

    flat = slapo.create_schedule(Stack())
    flat.mod.load_state_dict(model.state_dict())
    assert flat.trace(flatten=True)
    targets = [n.target for n in flat.mod.graph.nodes
               if n.op == "call_module"]
    assert "h.0.mlp.fc_in" in targets and "head" in targets
    torch.testing.assert_close(flat.mod(x), expected)


def test_trace_until():
    sch = slapo.create_schedule(Stack())
    assert sch.trace_until("h.0")
    # Traced down to the blocks: their children (named as Slapo names
    # them, ln and mlp, at every depth) stay untraced calls.
    top = [n.target for n in sch.mod.graph.nodes if n.op == "call_module"]
    assert top == ["h.0", "h.1", "head"]
    for block in ("h.0", "h.1"):
        assert isinstance(sch[block].mod, fx.GraphModule)
        calls = [n.target for n in sch[block].mod.graph.nodes
                 if n.op == "call_module"]
        assert calls == ["ln", "mlp"]
        assert isinstance(sch[f"{block}.mlp"].mod, MLP)
    with pytest.raises(ScheduleError, match="only be called on the top"):
        sch["h.1"].trace_until("mlp")


def test_untraceable_module_warns_and_returns_false(caplog):
    class Untraceable(nn.Module):
        def forward(self, x):
            if x.sum() > 0:  # data-dependent control flow
                return x
            return -x

    sch = slapo.create_schedule(Untraceable())
    assert sch.trace() is False
    assert "Failed to trace" in caplog.text
    with pytest.raises(ScheduleError, match="dynamo"):
        sch.trace(tracer="dynamo")


def test_create_schedule_rejections():
    with pytest.raises(ScheduleError, match="process groups"):
        slapo.create_schedule(Stack(), group=object())
    with pytest.raises(ScheduleError, match="nn.Module"):
        slapo.create_schedule(lambda x: x)
    with pytest.raises(ScheduleError, match="unknown arguments"):
        slapo.create_schedule(Stack(), tracer="huggingface")


def test_world_size_defaults_to_the_launched_world():
    # Outside mpirun the world is one process (the 2-rank runs check the
    # MPI world: slapo_on_ranks.py).
    assert slapo.create_schedule(Stack()).world_size == 1
    assert slapo.create_schedule(Stack(), world_size=4).world_size == 4


def test_list_primitives():
    assert set(slapo.list_primitives()) == {
        "annotate", "checkpoint", "cut_pipeline_stage", "decompose",
        "fork_rng", "fuse", "replace", "replace_all", "shard", "sync"}
    assert slapo.list_primitives(name_only=False)["shard"] is \
        slapo.Schedule.shard
