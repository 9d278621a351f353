"""The reference's module name for the LNS optimizers
(``xlnstorch.optimizers``): the classes of :mod:`lamina.lns.optim`."""

from .optim import (LNSASGD, LNSSGD, LNSAdadelta, LNSAdagrad, LNSAdam,
                    LNSAdamax, LNSAdamW, LNSNAdam, LNSOptimizer, LNSRAdam,
                    LNSRMSprop, LNSRprop)

__all__ = ["LNSOptimizer", "LNSSGD", "LNSAdam", "LNSAdamW", "LNSAdamax",
           "LNSAdagrad", "LNSRMSprop", "LNSRprop", "LNSAdadelta", "LNSASGD",
           "LNSNAdam", "LNSRAdam"]
