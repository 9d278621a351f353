"""LNS (logarithmic number system) arithmetic and training, bit-exact with
the xlnstorch reference.

- :mod:`lamina.lns.kernels` — element-wise operations, comparisons, sums,
  matmul and linear on int64 code arrays, through Lamina's compiled kernels;
- :mod:`lamina.lns.tensor` — LNSTensor (codes plus base) and its factories;
- :mod:`lamina.lns.functional` — the torch functions an LNSTensor
  implements (``__torch_function__``);
- :mod:`lamina.lns.autograd` — their backward rules (LNS training spec);
- :mod:`lamina.lns.optim` — LNSSGD and LNSAdam;
- :mod:`lamina.lns.layers` — LNSModule, LNSLinear, LNSLazyLinear;
- :mod:`lamina.lns.compiled` — a whole training step as one program
  (``compile_step``);
- :mod:`lamina.lns.numpy_spec` — the spec written plainly in NumPy (test
  oracle and benchmark baseline, also importable as ``lamina.lns_numpy``).
"""

from .kernels import (DEFAULT_F, abs, add, change_base, compare, decode, div,
                      encode, linear, matmul, maximum, minimum, mul, neg,
                      num_type, powi, relu, relu_grad, sqrt, sub, sum)
from .base import Base
from .tensor import (LNSTensor, full, full_like, lnstensor, ones, ones_like,
                     rand, randn, zeros, zeros_like)
from . import functional  # noqa: F401 - registers the torch functions
from .layers import LNSLazyLinear, LNSLinear, LNSModule, LNSPrecisionWarning
from .optim import LNSAdam, LNSOptimizer, LNSSGD
from .compiled import CompileError, CompiledStep, compile_step

__all__ = ["DEFAULT_F", "abs", "add", "change_base", "compare", "decode",
           "div", "encode", "linear", "matmul", "maximum", "minimum", "mul",
           "neg", "num_type", "powi", "relu", "relu_grad", "sqrt", "sub", "sum",
           "Base", "LNSTensor", "full", "full_like", "lnstensor", "ones",
           "ones_like", "rand", "randn", "zeros", "zeros_like",
           "LNSLazyLinear", "LNSLinear", "LNSModule", "LNSPrecisionWarning",
           "LNSAdam", "LNSOptimizer", "LNSSGD", "CompileError", "CompiledStep",
           "compile_step"]
