"""The random stream of compiled dropout.

A compiled program with an active dropout takes one i64 argument, the
Philox key of its masks (:mod:`lamina.philox`). Each call draws a fresh key
from PyTorch's default CPU generator, as torch.compile's generated dropout
draws its seeds, so:

- two calls draw different masks, and eager and compiled code advance one
  generator: ``torch.manual_seed`` (or :func:`manual_seed`) replays the
  sequence, ``torch.get_rng_state`` / ``torch.set_rng_state`` (and
  ``torch.random.fork_rng``) save and resume it;
- the backward of a call regenerates exactly its forward's masks from the
  key that call drew;
- ranks draw equal keys when they seed PyTorch alike and make the same
  calls, which a multi-rank program's collectives already require; masks
  are keyed by each element's index in the whole tensor, so a sharded run
  draws the unsharded run's masks.
"""

import numbers

import torch

from ..errors import ScheduleError

# Below 2^63: the key travels as a non-negative int64.
_KEY_BOUND = 2**63 - 1

_initial_seed = 0


def manual_seed(seed):
    """Seeds PyTorch's default generator, from which every compiled call
    draws its dropout key (the same as ``torch.manual_seed(seed)`` for
    compiled dropout), and the delayed initialisation of Slapo-built
    modules. Every rank of a multi-rank run must use the same seed."""
    global _initial_seed
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ScheduleError(f"manual_seed takes an integer, got "
                            f"{type(seed).__name__} {seed!r}")
    if not 0 <= seed < 2**63:
        raise ScheduleError(f"manual_seed takes a seed in [0, 2^63), got "
                            f"{seed}")
    _initial_seed = int(seed)
    torch.manual_seed(_initial_seed)


def initial_seed():
    """The seed last given to :func:`manual_seed` (0 before any)."""
    return _initial_seed


def next_dropout_key():
    """The dropout key of one call, drawn from PyTorch's default
    generator."""
    return int(torch.randint(_KEY_BOUND, (), dtype=torch.int64))
