"""Lamina: a compiler for the linear layers of transformer models.

The package lives in the build tree (``build/python/lamina``), next to its
compiled extension:

- :class:`lamina.Program` — an IR module compiled with a named pipeline
  (``lamina-cpu-pipeline`` by default) and called on NumPy arrays;
- :mod:`lamina.op` — the Slapo linear family as torch modules with the
  spec's eager semantics;
- :mod:`lamina.lns` — LNS arithmetic on int64 code arrays through compiled
  kernels (encode, decode, add, sub, mul, div, neg, abs, sqrt, sum, matmul,
  linear), bit-exact with the xlnstorch reference;
- :mod:`lamina.philox` — the dropout random stream (Philox-4x32-10 keyed by
  (seed, offset, element index)) in NumPy, the reference the compiled masks
  must equal;
- :mod:`lamina.lns_numpy` — the LNS spec in NumPy (test oracle, benchmark
  baseline);
- :mod:`lamina.tools` — locating and running the command-line tools.
"""

from ._lamina import PreparedArguments, Program
from . import lns, lns_numpy, op, philox, tools  # noqa: E402 (lns needs Program)

__all__ = ["Program", "PreparedArguments", "lns", "lns_numpy", "op", "philox",
           "tools"]
