"""What the single-process Slapo ports share."""

import torch
import torch.nn.functional as F
from torch import nn

import lamina.slapo as slapo


class ConvModel(nn.Module):
    """Slapo's fusion and Verify tests' model: a convolution, ReLU, + 1."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 32, 3)

    def forward(self, x):
        return F.relu(self.conv(x)) + 1


def forward_matches(sch, reference, *inputs):
    """Builds `sch` (Slapo's build: no optimizer) and asserts its forward
    equals `reference`'s on `inputs`; the built model."""
    model, optimizer = slapo.build(sch, init_weights=False)
    assert optimizer is None
    with torch.no_grad():
        torch.testing.assert_close(model(*inputs), reference(*inputs))
    return model
