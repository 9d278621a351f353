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
