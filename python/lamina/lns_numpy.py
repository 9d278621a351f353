"""The LNS spec in NumPy, under its original name: everything of
:mod:`lamina.lns.numpy_spec`."""

from .lns.numpy_spec import (DEFAULT_F, ZERO, adam_update, add, base_of,
                             change_base, decode, div, encode, hyper, is_zero,
                             linear, linear_pairwise, matmul, maximum,
                             mlp_sgd_step, mlp_step, mul, neg, powi, relu,
                             sgd_update, sqrt, sub, sum_all, sum_rows)

__all__ = ["DEFAULT_F", "ZERO", "adam_update", "add", "base_of", "change_base",
           "decode", "div", "encode", "hyper", "is_zero", "linear",
           "linear_pairwise", "matmul", "maximum", "mlp_sgd_step", "mlp_step",
           "mul", "neg", "powi", "relu", "sgd_update", "sqrt", "sub",
           "sum_all", "sum_rows"]
