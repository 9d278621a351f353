"""Lamina: a compiler for the linear layers of transformer models.

This package holds the pure-Python side of Lamina:

- :mod:`lamina.philox` — the dropout random stream (Philox-4x32-10 keyed by
  (seed, offset, element index)) in NumPy, the reference the compiled masks
  must equal;
- :mod:`lamina.tools` — locating and running the ``lamina-opt`` and
  ``lamina-run`` tools of a build.
"""

from . import philox, tools

__all__ = ["philox", "tools"]
