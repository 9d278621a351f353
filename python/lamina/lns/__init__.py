"""LNS (logarithmic number system) arithmetic, bit-exact with the xlnstorch
reference.

- :mod:`lamina.lns.kernels` — element-wise operations, sums, matmul and
  linear on int64 code arrays, through Lamina's compiled kernels;
- :mod:`lamina.lns.layers` — the LNSLinear / LNSLazyLinear torch layers;
- :mod:`lamina.lns.numpy_spec` — the spec written plainly in NumPy (test
  oracle and benchmark baseline, also importable as ``lamina.lns_numpy``).

The kernels and layers are importable from here: ``lamina.lns.encode``,
``lamina.lns.LNSLinear`` ...
"""

from .kernels import (DEFAULT_F, abs, add, decode, div, encode, linear,
                      matmul, mul, neg, num_type, sqrt, sub, sum)
from .layers import LNSLazyLinear, LNSLinear, LNSPrecisionWarning

__all__ = ["DEFAULT_F", "abs", "add", "decode", "div", "encode", "linear",
           "matmul", "mul", "neg", "num_type", "sqrt", "sub", "sum",
           "LNSLazyLinear", "LNSLinear", "LNSPrecisionWarning"]
