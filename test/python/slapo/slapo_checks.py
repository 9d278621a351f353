"""What the single-process Slapo ports share."""

import torch

import lamina.slapo as slapo


def forward_matches(sch, reference, *inputs):
    """Builds `sch` (Slapo's build: no optimizer) and asserts its forward
    equals `reference`'s on `inputs`; the built model."""
    model, optimizer = slapo.build(sch, init_weights=False)
    assert optimizer is None
    with torch.no_grad():
        torch.testing.assert_close(model(*inputs), reference(*inputs))
    return model
