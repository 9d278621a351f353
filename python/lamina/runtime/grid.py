"""Device grids: the MPI world as data × pipeline × tensor parallel ranks
(docs/grids.md).

A grid names three axes, ``dp``, ``pp`` and ``tp``, whose sizes multiply to
the world size. Ranks are numbered as Megatron numbers them: the tensor
axis varies fastest, then the pipeline axis, then the data axis, so world
rank ``(d * P + p) * T + t`` is tensor rank ``t`` of pipeline stage ``p``
of data replica ``d``. A schedule's ``shard`` and ``sync`` act on the
tensor axis, ``cut_pipeline_stage`` on the pipeline axis; each data replica
runs the whole schedule on its own batch, and the backward reduces its
parameters' gradients over the data axis.
"""

import os

import numpy as np

from .. import _lamina
from ..errors import ScheduleError

AXES = ("dp", "pp", "tp")


class Grid:
    """The sizes of a grid's axes (`dp`, `pp`, `tp`) and this process's
    place on them."""

    def __init__(self, dp=1, pp=1, tp=1):
        self.dp, self.pp, self.tp = dp, pp, tp

    @classmethod
    def parse(cls, grid, world_size):
        """The grid a user's ``{"dp": D, "pp": P, "tp": T}`` names (a
        missing axis is 1) in a world of `world_size` ranks; ScheduleError
        names what is wrong."""
        if isinstance(grid, Grid):
            grid = grid.sizes()
        if not isinstance(grid, dict):
            raise ScheduleError(f"grid takes a dict of axis sizes "
                                f"{{'dp': D, 'pp': P, 'tp': T}}, got "
                                f"{grid!r}")
        unknown = sorted(set(grid) - set(AXES))
        if unknown:
            raise ScheduleError(f"grid axes are 'dp', 'pp' and 'tp'; got "
                                f"{', '.join(map(repr, unknown))}")
        for axis, size in grid.items():
            if isinstance(size, bool) or not isinstance(size, int) or \
                    size < 1:
                raise ScheduleError(f"grid axis '{axis}' must be a positive "
                                    f"integer, got {size!r}")
        sizes = cls(**grid)
        if sizes.dp * sizes.pp * sizes.tp != world_size:
            raise ScheduleError(
                f"a grid of dp={sizes.dp} x pp={sizes.pp} x tp={sizes.tp} = "
                f"{sizes.dp * sizes.pp * sizes.tp} ranks in an MPI world of "
                f"{world_size}: the axes' sizes must multiply to the world "
                f"size")
        return sizes

    def sizes(self):
        return {"dp": self.dp, "pp": self.pp, "tp": self.tp}

    def rank(self, axis, world_rank=None):
        """The rank on `axis` of world rank `world_rank` (this process's by
        default)."""
        if world_rank is None:
            world_rank = _lamina.rank()
        tp = world_rank % self.tp
        pp = world_rank // self.tp % self.pp
        dp = world_rank // (self.tp * self.pp)
        return {"dp": dp, "pp": pp, "tp": tp}[axis]

    def __eq__(self, other):
        return isinstance(other, Grid) and self.sizes() == other.sizes()

    def __hash__(self):
        return hash(tuple(self.sizes().values()))

    def __repr__(self):
        return f"Grid(dp={self.dp}, pp={self.pp}, tp={self.tp})"


# The grid the MPI runtime has in use (None: none, every rank on the
# tensor axis).
_in_use = None


def in_use():
    """The Grid in use (None: none)."""
    return _in_use


def activate(grid):
    """Puts `grid` (a Grid, or None) in use for the programs run next: the
    MPI runtime splits the world's communicators once per grid shape."""
    global _in_use
    if grid == _in_use:
        return
    if grid is None:
        _lamina.use_grid(0, 0, 0)
    else:
        _lamina.use_grid(grid.dp, grid.pp, grid.tp)
    _in_use = grid


def mean_over_replicas(value, grid):
    """`value` (a float) averaged over `grid`'s data replicas (every
    replica calls this)."""
    mean = np.array([value], dtype=np.float64)
    if grid is not None and grid.dp > 1:
        _lamina.axis_reduce(mean, "dp", "sum")
        mean /= grid.dp
    return float(mean[0])


def overlaps():
    """Whether the backward starts each gradient's reduction over the data
    axis as soon as it is final (the default), or all of them at its end
    (LAMINA_OVERLAP=0, to measure what the overlap hides)."""
    return os.environ.get("LAMINA_OVERLAP", "1") != "0"
