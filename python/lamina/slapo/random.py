"""Slapo's random-state helpers over Lamina's dropout stream.

Compiled dropout draws each call's key from PyTorch's default generator
(lamina.manual_seed), and Lamina keys every mask by the element's index in
the whole tensor, so every rank takes the same seed and needs no
tensor-parallel offset. Slapo's CUDA RNG tracker (Megatron's) names
generator states to switch between; on the CPU it tracks the states of that
default generator, so code that forks it (`with
get_cuda_rng_tracker().fork(): ...`) draws eager and compiled randomness
from the named state and returns to the default one after."""

import contextlib
import random as python_random

import numpy as np
import torch

from ..runtime import rng

_MODEL_PARALLEL_RNG = "model-parallel-rng"


def _get_state():
    return torch.get_rng_state()


def _set_state(state):
    torch.set_rng_state(state)


class CudaRNGStatesTracker:
    """Named states of the default generator. `add(name, seed)` records the
    state `seed` gives (each name and seed once); `fork(name)` runs its
    block from that state, keeps where the block left it, and restores the
    state outside."""

    def __init__(self):
        self.states_ = {}
        self.seeds_ = set()

    def reset(self):
        self.states_ = {}
        self.seeds_ = set()

    def get_states(self):
        """The states by name (a new dict of the same tensors)."""
        return dict(self.states_)

    def set_states(self, states):
        self.states_ = states

    def add(self, name, seed):
        if seed in self.seeds_:
            raise Exception(f"seed {seed} already exists")
        if name in self.states_:
            raise Exception(f"rng state {name} already exists")
        self.seeds_.add(seed)
        outside = _get_state()
        torch.manual_seed(seed)
        self.states_[name] = _get_state()
        _set_state(outside)

    @contextlib.contextmanager
    def fork(self, name=_MODEL_PARALLEL_RNG):
        if name not in self.states_:
            raise RuntimeError(f"rng state {name} is not added; call "
                               "set_random_seed with a tp_rank (or add it)")
        outside = _get_state()
        _set_state(self.states_[name])
        try:
            yield
        finally:
            self.states_[name] = _get_state()
            _set_state(outside)


_CUDA_RNG_STATE_TRACKER = CudaRNGStatesTracker()


def get_cuda_rng_tracker():
    """The tracker of named generator states."""
    return _CUDA_RNG_STATE_TRACKER


def model_parallel_cuda_manual_seed(seed, tp_rank, always_enable_tp_seed):
    """Seeds the default generator with `seed` (or, with
    `always_enable_tp_seed`, with this rank's tensor-parallel seed) and
    tracks the tensor-parallel seed `seed + 2718 + tp_rank` as
    "model-parallel-rng"; returns it."""
    tp_seed = seed + 2718 + tp_rank
    _CUDA_RNG_STATE_TRACKER.reset()
    torch.manual_seed(tp_seed if always_enable_tp_seed else seed)
    _CUDA_RNG_STATE_TRACKER.add(_MODEL_PARALLEL_RNG, tp_seed)
    return tp_seed


_seeded = False


def set_random_seed(seed=2013, dp_rank=None, pp_rank=None, tp_rank=None,
                    always_enable_tp_seed=False):
    """Seeds Python's, NumPy's and PyTorch's generators (compiled dropout
    draws each call's key from PyTorch's: lamina.manual_seed) with `seed`
    plus 100 per pipeline stage and 10 per data-parallel rank, as Slapo
    does; with a `tp_rank`, also tracks the tensor-parallel seed
    (model_parallel_cuda_manual_seed). Returns the seed."""
    global _seeded
    seed += 100 * (pp_rank or 0) + 10 * (dp_rank or 0)
    python_random.seed(seed)
    np.random.seed(seed)
    rng.manual_seed(seed)
    if tp_rank is not None:
        model_parallel_cuda_manual_seed(seed, tp_rank, always_enable_tp_seed)
    _seeded = True
    return seed


def is_random_seed_set():
    return _seeded or bool(_CUDA_RNG_STATE_TRACKER.get_states())
