"""Slapo's resharding schemes ("RS->SR", ...) as Lamina collectives.

A scheme names the layout of the last two axes of a value before and
after: R replicated, S sharded. Leaving a sharded axis is an all_gather,
entering one a scatter; moving the sharded axis (RS->SR, SR->RS) is an
all-to-all, which Lamina computes as an all_gather then a scatter. The
backward of a resharding gather is derived from its gradient's layout: it
keeps each rank's block of a gradient whole on every rank, and
reduce-scatters a partial one (a column-parallel layer after it, as in
Slapo's scheme 5); that of a scatter gathers it.
"""

import re

from ..errors import ScheduleError

_SCHEME = re.compile(r"^([RS]{2})->([RS]{2})$")


def is_scheme(name):
    return isinstance(name, str) and "->" in name


def validate(scheme, mode):
    """(before, after) layouts of `scheme`, or ScheduleError."""
    match = _SCHEME.match(scheme)
    if not match or "SS" in match.groups():
        raise ScheduleError(f"Unknown resharding scheme: {scheme} (the "
                            "schemes are RR, RS and SR to RR, RS or SR)")
    if mode == "bwd_post":
        raise ScheduleError(f"sync bwd_post {scheme!r}: a resharding scheme "
                            "is a forward sync (fwd_pre or fwd_post); its "
                            "backward is derived")
    return match.groups()


def collectives(layouts, rank):
    """[(collective, arguments)] resharding a value of `rank` from and to
    `layouts` (validate's result)."""
    before, after = layouts
    if rank < 2:
        raise ScheduleError(f"resharding {before}->{after} needs a value of "
                            f"rank 2 or more, got rank {rank}")
    source = _sharded_axis(before, rank)
    target = _sharded_axis(after, rank)
    steps = []
    if source is not None and source != target:
        steps.append(("all_gather", {"axis": source}))
    if target is not None and source != target:
        steps.append(("scatter", {"axis": target}))
    return steps


def _sharded_axis(layout, rank):
    """The axis `layout` (of the last two axes) shards, or None."""
    if layout == "SR":
        return rank - 2
    if layout == "RS":
        return rank - 1
    return None
