"""slapo.pipeline: generate_pipeline_partition splits a traced model after
its cut modules into stages submod_0, submod_1, ... (through the traced
modules between the cut and the top) computing what the model computes;
analyze_tie_weights and DeepSpeed's analyze_tie_ranks find tied weights
across stages; a child torch.fx cannot trace stays a module call."""

import pytest
import torch
from torch import fx, nn

import lamina.slapo as slapo
from lamina import ScheduleError
from lamina.slapo.framework_dialect.deepspeed.pipeline import \
    analyze_tie_ranks
from lamina.slapo.pipeline import analyze_tie_weights, \
    generate_pipeline_partition


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x):
        return torch.relu(self.fc(x))


class Guarded(nn.Module):
    """Control flow on its input: torch.fx cannot trace it."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x):
        if x.sum() > 0:
            return self.fc(x)
        return -self.fc(x)


class Model(nn.Module):
    def __init__(self, guarded=False):
        super().__init__()
        self.embed = Guarded() if guarded else Block()
        self.blocks = nn.Sequential(Block(), Block(), Block())
        self.head = nn.Linear(6, 3)

    def forward(self, x):
        return self.head(self.blocks(self.embed(x)))


def test_stages_split_through_traced_modules_and_compute_the_model():
    torch.manual_seed(0)
    model = Model()
    x = torch.randn(4, 6)
    want = model(x)
    sch = slapo.create_schedule(model)
    sch.trace_until("blocks")
    sch["blocks.0"].cut_pipeline_stage()
    sch["blocks.1"].cut_pipeline_stage()
    sch = generate_pipeline_partition(sch)
    assert [name for name, _ in sch.mod.named_children()] == \
        ["submod_0", "submod_1", "submod_2"]
    assert isinstance(sch["submod_0.embed"].mod, fx.GraphModule)
    assert isinstance(sch["submod_0.submod_0"].mod, fx.GraphModule)
    assert isinstance(sch["submod_1.submod_1.1"].mod, Block)
    assert isinstance(sch["submod_2.head"].mod, nn.Linear)
    torch.testing.assert_close(sch.mod(x), want)


def test_a_partition_without_cuts_or_trace_is_rejected():
    sch = slapo.create_schedule(Model())
    with pytest.raises(ScheduleError, match="no module is cut"):
        generate_pipeline_partition(sch)
    sch["blocks.0"].cut_pipeline_stage()
    with pytest.raises(ScheduleError, match="top module traced"):
        generate_pipeline_partition(sch)


def test_an_untraceable_child_stays_a_module_call():
    sch = slapo.create_schedule(Model(guarded=True))
    sch.trace_until("blocks")
    assert isinstance(sch.mod, fx.GraphModule)
    assert isinstance(sch["embed"].mod, Guarded)
    assert isinstance(sch["blocks"].mod, fx.GraphModule)
    # Cut where the layers cannot be found by tracing: Slapo's partition
    # still works, Lamina's build says why it cannot compile the stages.
    sch["embed"].cut_pipeline_stage()
    with pytest.raises(ScheduleError, match="cut_pipeline_stage on 'embed'"):
        slapo.build(sch)


class Tied(nn.Module):
    def __init__(self):
        super().__init__()
        self.stage0 = nn.Sequential(nn.Embedding(5, 4), nn.Linear(4, 4))
        self.stage1 = nn.Sequential(nn.Linear(4, 4))
        self.stage2 = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
        self.stage1[0].weight = self.stage0[0].weight
        self.stage2[1].weight = self.stage0[0].weight
        self.stage2[0].weight = self.stage0[1].weight


def test_tied_weights_are_found_by_every_name_or_across_stages():
    model = Tied()
    whole = analyze_tie_weights(model, False)
    assert sorted(whole[model.stage0[0].weight]) == [
        ("stage0.0.weight", 0), ("stage1.0.weight", 0),
        ("stage2.1.weight", 0)]
    assert sorted(whole[model.stage0[1].weight]) == [
        ("stage0.1.weight", 0), ("stage2.0.weight", 0)]
    staged = analyze_tie_weights(model, True)
    assert sorted(staged[model.stage0[0].weight]) == [
        ("0.weight", 0), ("0.weight", 1), ("1.weight", 2)]

    class Topology:
        """DeepSpeed's topology for 3 stages of 2 tensor-parallel ranks."""

        @staticmethod
        def filter_match(pipe):
            return [2 * pipe, 2 * pipe + 1]

    ranks, stages = analyze_tie_ranks(list(staged.values()), Topology())
    by_stages = dict(zip(map(tuple, stages), ranks))
    assert by_stages[(0, 1, 2)] == [[0, 2, 4], [1, 3, 5]]
    assert by_stages[(0, 2)] == [[0, 4], [1, 5]]
