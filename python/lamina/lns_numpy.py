"""The LNS spec in NumPy, under its original name: everything of
:mod:`lamina.lns.numpy_spec`."""

from .lns.numpy_spec import (ZERO, add, base_of, decode, encode, is_zero,
                             linear, linear_pairwise, mul)

__all__ = ["ZERO", "add", "base_of", "decode", "encode", "is_zero", "linear",
           "linear_pairwise", "mul"]
