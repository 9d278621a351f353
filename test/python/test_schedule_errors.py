"""Misuse of schedule primitives is a ScheduleError, never a crash."""

import pytest
import torch
from torch import nn

import lamina


class _Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 16)

    def forward(self, x):
        return self.fc(x)


@pytest.mark.parametrize("axis", [-1, 2**63])
def test_shard_with_a_negative_or_wrapping_axis_is_rejected(axis):
    sch = lamina.create_schedule(_Model(), world_size=2,
                                 example_inputs=(torch.randn(4, 8),))
    with pytest.raises(lamina.ScheduleError, match="non-negative"):
        sch["fc"].shard("weight", axis)


def test_a_schedule_holding_a_non_transform_op_is_rejected_before_it_runs():
    program = ("func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
               "  return %x : tensor<2xf32>\n}\n")
    schedule = (
        "module attributes {transform.with_named_sequence} {\n"
        "  transform.named_sequence @__transform_main("
        "%root: !transform.any_op {transform.readonly}) {\n"
        "    %c = arith.constant 1 : i64\n"
        "    transform.yield\n  }\n}\n")
    with pytest.raises(ValueError, match="'arith.constant' op is not a "
                       "transform op"):
        lamina._lamina.transform_ir(program, schedule)
    session = lamina._lamina.ScheduleSession(program)
    with pytest.raises(ValueError, match="is not a transform op"):
        session.apply(schedule)
    assert session.interpreter_runs == 0


def test_find_with_an_invalid_regex_is_a_schedule_error():
    sch = lamina.create_schedule(_Model())
    with pytest.raises(lamina.ScheduleError, match="not a valid regular "
                       "expression"):
        sch.find("(")


@pytest.mark.parametrize("seed", [-1, 1.5, 2**70, True, "3"])
def test_manual_seed_rejects_what_the_i64_seed_cannot_hold(seed):
    with pytest.raises(lamina.ScheduleError, match="manual_seed takes"):
        lamina.manual_seed(seed)


def test_manual_seed_takes_the_whole_range():
    for seed in (0, 7, 2**63 - 1):
        lamina.manual_seed(seed)
    lamina.manual_seed(0)
