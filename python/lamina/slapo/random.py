"""Slapo's random-seed helpers over Lamina's dropout stream."""

from ..errors import ScheduleError
from ..runtime import rng

_seeded = False


def set_random_seed(seed=2013, dp_rank=None, pp_rank=None, tp_rank=None,
                    always_enable_tp_seed=False):
    """Seeds PyTorch's generator, from which compiled dropout draws each
    call's key (lamina.manual_seed). Every rank takes the same seed: Lamina
    keys each mask by the element's index in the whole tensor, so ranks
    need no tensor-parallel offset (Megatron's RNG tracker is not needed);
    returns the seed."""
    global _seeded
    rng.manual_seed(seed)
    _seeded = True
    return seed


def is_random_seed_set():
    return _seeded


def get_cuda_rng_tracker():
    raise ScheduleError(
        "get_cuda_rng_tracker: Lamina draws dropout masks by element index "
        "from one seed (lamina.manual_seed / slapo.set_random_seed), the "
        "same on every rank; fork_rng on a module replaces the tracker's "
        "use")
