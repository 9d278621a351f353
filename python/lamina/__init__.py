"""Lamina: a compiler for the linear layers of transformer models.

Schedule a PyTorch model Slapo-style and run it compiled::

    import lamina
    sch = lamina.create_schedule(model, world_size=2)
    sch["h.0.mlp.fc_in"].shard("weight", 0)
    ...
    compiled = lamina.build(sch, (x,))
    y = compiled(x)

- :func:`create_schedule`, :class:`Schedule` — Slapo's primitives, recorded
  as a ``transform.lamina`` script (``sch.transform_script()``) over the
  model imported by torch.fx (``sch.mlir()``);
- :func:`build`, :func:`verify` — compile for the CPU (JIT) and check
  against the eager model; :func:`rank`, :func:`world_size` — MPI
  (MPICH) ranks;
- :mod:`lamina.rng` — compiled dropout draws each call's key from PyTorch's
  generator; :func:`manual_seed` seeds it;
- :mod:`lamina.training` — what makes a built model trainable: its
  parameters, and the autograd Function over the compiled forward /
  backward pair (docs/training.md);
- :class:`lamina.Program` — an IR module compiled with a named pipeline
  and called on NumPy arrays;
- :mod:`lamina.op` — the Slapo linear family as torch modules with the
  spec's eager semantics;
- :mod:`lamina.lns` — LNS arithmetic on int64 code arrays through compiled
  kernels, bit-exact with the xlnstorch reference, and the LNSLinear /
  LNSLazyLinear layers;
- :mod:`lamina.philox` — the dropout random stream in NumPy;
- :mod:`lamina.lns_numpy` — the LNS spec in NumPy (test oracle, benchmark
  baseline);
- :mod:`lamina.tools` — locating and running the command-line tools.
"""

from ._lamina import PreparedArguments, Program
from . import lns, lns_numpy, op, philox, tools  # noqa: E402 (lns needs Program)
from .importer import InputError, UnsupportedOperationError, import_model
from .schedule import Schedule, ScheduleError, create_schedule
from .build import CompiledModule, build, rank, verify, world_size
from .rng import initial_seed, manual_seed
from . import training

__all__ = ["Program", "PreparedArguments", "lns", "lns_numpy", "op", "philox",
           "tools", "InputError", "UnsupportedOperationError", "import_model", "Schedule",
           "ScheduleError", "create_schedule", "CompiledModule", "build",
           "initial_seed", "manual_seed", "rank", "training", "verify", "world_size"]
