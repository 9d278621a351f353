"""The LNS spec in NumPy, under its original name: everything of
:mod:`lamina.lns.numpy_spec`."""

from .lns.numpy_spec import (ZERO, add, base_of, decode, div, encode, is_zero,
                             linear, linear_pairwise, matmul, mlp_sgd_step,
                             mul, neg, relu, sub, sum_all, sum_rows)

__all__ = ["ZERO", "add", "base_of", "decode", "div", "encode", "is_zero",
           "linear", "linear_pairwise", "matmul", "mlp_sgd_step", "mul", "neg",
           "relu", "sub", "sum_all", "sum_rows"]
