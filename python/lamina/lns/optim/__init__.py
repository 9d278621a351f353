"""LNS optimizers (LNS training spec §4), bit-exact with the xlnstorch
reference: LNSSGD, LNSAdam, LNSAdamW, LNSAdamax, LNSAdagrad, LNSRMSprop,
LNSRprop, LNSAdadelta, LNSASGD, LNSNAdam and LNSRAdam, one module each,
on the shared base of :mod:`lamina.lns.optim.optimizer`.

Each optimizer's update is written once, against an LNS arithmetic:
`step()` evaluates it on NumPy codes and lamina.lns.compile_step on lns
ops (docs/lns-training.md, "Optimizers").
"""

from .optimizer import (CodeArithmetic, HostArithmetic, HyperParameter,
                        LNSOptimizer, _group_base)
from .sgd import LNSSGD
from .adam import LNSAdam, LNSAdamW
from .adamax import LNSAdamax
from .adagrad import LNSAdagrad
from .rmsprop import LNSRMSprop
from .rprop import LNSRprop
from .adadelta import LNSAdadelta
from .asgd import LNSASGD
from .nadam import LNSNAdam
from .radam import LNSRAdam

__all__ = ["LNSOptimizer", "LNSSGD", "LNSAdam", "LNSAdamW", "LNSAdamax",
           "LNSAdagrad", "LNSRMSprop", "LNSRprop", "LNSAdadelta", "LNSASGD",
           "LNSNAdam", "LNSRAdam", "HyperParameter", "CodeArithmetic",
           "HostArithmetic", "_group_base"]
