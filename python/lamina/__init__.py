"""Lamina: a compiler for the linear layers of transformer models.

Schedule a PyTorch model Slapo-style and run it compiled::

    import lamina
    sch = lamina.create_schedule(model, world_size=2)
    sch["h.0.mlp.fc_in"].shard("weight", 0)
    ...
    compiled = lamina.build(sch, (x,))
    y = compiled(x)

The package stands in floors; a module imports only from its own floor and
those below it:

1. :mod:`lamina.errors` (Lamina's exception types), :mod:`lamina.tools`
   (locating the command-line tools), the ``_lamina`` extension
   (:class:`lamina.Program`: an IR module compiled with a named pipeline and
   called on NumPy arrays);
2. numerics: :mod:`lamina.lns` (LNS tensors, layers, optimizers, compiled
   kernels bit-exact with xlnstorch), :mod:`lamina.philox` (the dropout
   stream in NumPy), :mod:`lamina.lns_numpy` (the LNS spec in NumPy), and
   :mod:`lamina.op` (the Slapo linear family as torch modules);
3. the frontend, :mod:`lamina.importer` (torch.fx to lamina IR; which
   modules are layers);
4. :mod:`lamina.schedule` — :func:`create_schedule`, :class:`Schedule`:
   Slapo's primitives recorded as a ``transform.lamina`` script;
5. :mod:`lamina.runtime` — :func:`build`, :func:`verify`, :func:`rank`,
   :func:`world_size` (:mod:`lamina.runtime.build`), device grids
   (:class:`Grid`, :mod:`lamina.runtime.grid`; ZeRO and global-norm
   clipping over them, :mod:`lamina.optim`), what makes a built
   model trainable (:mod:`lamina.training`), the dropout stream
   (:mod:`lamina.rng`, :func:`manual_seed`), GPU artefacts
   (:mod:`lamina.aot`);
6. :mod:`lamina.slapo` — Slapo's API over all of the above.
"""

import sys

from ._lamina import PreparedArguments, Program
from .errors import (AllocationError, CompileCacheWarning, InputError,
                     ScheduleError, UnsupportedOperationError)
from . import lns, lns_numpy, op, philox, tools
from .importer import import_model
from .schedule import Schedule, create_schedule
from .runtime import aot, optim, rng, training
from .runtime.build import CompiledModule, build, rank, verify, world_size
from .runtime.grid import Grid
from .runtime.rng import initial_seed, manual_seed

# The runtime's public modules keep their names: `import lamina.training`.
for _module in (aot, optim, rng, training):
    sys.modules[f"{__name__}.{_module.__name__.rsplit('.', 1)[-1]}"] = _module

__all__ = ["AllocationError", "CompileCacheWarning", "CompiledModule",
           "Grid", "InputError", "PreparedArguments", "Program",
           "Schedule", "ScheduleError", "UnsupportedOperationError", "aot",
           "build", "create_schedule", "import_model", "initial_seed", "lns",
           "lns_numpy", "manual_seed", "op", "optim", "philox", "rank", "rng", "tools",
           "training", "verify", "world_size"]
