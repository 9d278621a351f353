"""Checkpointing in Slapo's terms: `checkpoint(function, *args)` for eager
code, and the wrapper the checkpoint primitive puts in a checkpointed
module's (or subgraph's) place."""

import torch.utils.checkpoint as torch_checkpoint
from torch import nn

from .random import get_cuda_rng_tracker


class CheckPointWrapper(nn.Module):
    """What `sch[...].checkpoint()` puts in a module's place: `mod`, whose
    values the backward recomputes (Lamina checkpoints the layers inside
    when it compiles the model; called eagerly it runs `mod`)."""

    def __init__(self, mod):
        super().__init__()
        self.mod = mod

    def forward(self, *args, **kwargs):
        return self.mod(*args, **kwargs)


def checkpoint(function, *args, use_reentrant=True, **kwargs):
    """torch.utils.checkpoint of `function`, whose recomputation starts
    from the tracked generator states of the forward (so a dropout forked
    from the tracker drops the same mask again)."""
    tracker = get_cuda_rng_tracker()
    forward_states = {name: state.clone()
                      for name, state in tracker.get_states().items()}
    calls = []

    def run(*inputs):
        if not calls:
            calls.append(True)
            return function(*inputs, **kwargs)
        # The recomputation in the backward.
        current = tracker.get_states()
        tracker.set_states({name: state.clone()
                            for name, state in forward_states.items()})
        try:
            return function(*inputs, **kwargs)
        finally:
            tracker.set_states(current)

    return torch_checkpoint.checkpoint(run, *args,
                                       use_reentrant=use_reentrant)
