"""LNS (logarithmic number system) arithmetic and training, bit-exact with
the xlnstorch reference; ``import lamina.lns as xlnstorch`` gives its names.

- :mod:`lamina.lns.kernels` — element-wise operations, comparisons, sums,
  matmul and linear on int64 code arrays, through Lamina's compiled kernels;
- :mod:`lamina.lns.tensor` — LNSTensor (codes plus base) and its factories;
- :mod:`lamina.lns.functional` — the torch functions an LNSTensor
  implements (``__torch_function__``), with :mod:`~lamina.lns.activations`,
  :mod:`~lamina.lns.losses`, :mod:`~lamina.lns.comparisons`,
  :mod:`~lamina.lns.elementwise`, :mod:`~lamina.lns.convolution`,
  :mod:`~lamina.lns.bilinear` and :mod:`~lamina.lns.dropout`;
- :mod:`lamina.lns.dispatch` — the registry of implementations (keys,
  defaults, overrides), the reference's ``implements``;
- :mod:`lamina.lns.autograd` — the backward rules (LNS training spec);
- :mod:`lamina.lns.optim` — LNSSGD, LNSAdam and the reference's other
  optimizers (also as :mod:`lamina.lns.optimizers`);
- :mod:`lamina.lns.layers` — LNSModule, LNSLinear, LNSConv1d-3d,
  LNSBilinear, LNSDropout*, LNSIdentity;
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
                     rand, rand_like, randn, randn_like, zeros, zeros_like)
from .dispatch import (apply_lns_op, get_default_implementation_key,
                       get_implementation, implement_sbdb, implements,
                       override_implementation, set_default_implementation)
# The torch functions LNS tensors implement register themselves on import.
from . import functional  # noqa: F401
from . import (activations, comparisons, elementwise,  # noqa: F401
               losses)
from .layers import (LNSBilinear, LNSConv1d, LNSConv2d, LNSConv3d,
                     LNSDropout, LNSDropout1d, LNSDropout2d, LNSDropout3d,
                     LNSIdentity, LNSLazyLinear, LNSLinear, LNSModule,
                     LNSPrecisionWarning)
from . import optimizers  # noqa: F401
from .optim import (LNSASGD, LNSAdadelta, LNSAdagrad, LNSAdam, LNSAdamax,
                    LNSAdamW, LNSNAdam, LNSOptimizer, LNSRAdam, LNSRMSprop,
                    LNSRprop, LNSSGD)
from .compiled import CompileError, CompiledStep, compile_step

__all__ = ["DEFAULT_F", "abs", "add", "change_base", "compare", "decode",
           "div", "encode", "linear", "matmul", "maximum", "minimum", "mul",
           "neg", "num_type", "powi", "relu", "relu_grad", "sqrt", "sub", "sum",
           "Base", "LNSTensor", "full", "full_like", "lnstensor", "ones",
           "ones_like", "rand", "rand_like", "randn", "randn_like", "zeros",
           "zeros_like",
           "apply_lns_op", "get_default_implementation_key",
           "get_implementation", "implement_sbdb", "implements",
           "override_implementation", "set_default_implementation",
           "LNSBilinear", "LNSConv1d", "LNSConv2d", "LNSConv3d", "LNSDropout",
           "LNSDropout1d", "LNSDropout2d", "LNSDropout3d", "LNSIdentity",
           "LNSLazyLinear", "LNSLinear", "LNSModule", "LNSPrecisionWarning",
           "LNSASGD", "LNSAdadelta", "LNSAdagrad", "LNSAdam", "LNSAdamax",
           "LNSAdamW", "LNSNAdam", "LNSOptimizer", "LNSRAdam", "LNSRMSprop",
           "LNSRprop", "LNSSGD",
           "CompileError", "CompiledStep", "compile_step"]
