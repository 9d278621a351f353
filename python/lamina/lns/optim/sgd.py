"""LNSSGD: torch.optim.SGD's algorithm in LNS (LNS training spec §4)."""

import numpy as np

from .. import kernels as K
from .optimizer import (LNSOptimizer, _Plan, code, direction,
                        hyper_parameters, nonzero)


class LNSSGD(LNSOptimizer):
    """torch.optim.SGD's algorithm in LNS (spec §4, LNSSGD)."""

    def __init__(self, params, lr=0.001, momentum=0.0, dampening=0.0,
                 weight_decay=0.0, nesterov=False, *, maximize=False):
        hp = hyper_parameters(lr=lr, momentum=momentum, dampening=dampening,
                              weight_decay=weight_decay)
        if nesterov and (hp["momentum"].number <= 0
                         or hp["dampening"].number != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero "
                             "dampening")
        super().__init__(params, dict(hp, nesterov=nesterov,
                                      maximize=maximize))

    def plan(self, group, base, state):
        momentum = nonzero(code(group, "momentum", base))
        has_buffer = momentum and "momentum_buffer" in state
        return _Plan(kind="sgd", maximize=group["maximize"],
                     decay=nonzero(code(group, "weight_decay", base)),
                     momentum=momentum, has_buffer=has_buffer,
                     nesterov=group["nesterov"],
                     state_in=("momentum_buffer",) if has_buffer else ())

    def hyper_codes(self, group, base, state):
        hyper = {name: code(group, name, base)
                 for name in ("lr", "momentum", "weight_decay")}
        # 1 − dampening, the weight of a new gradient in the buffer.
        hyper["keep"] = K.sub(np.int64(0), code(group, "dampening", base),
                              **base.kw())
        return hyper

    @staticmethod
    def update(a, plan, w, g, hyper, state):
        g = direction(a, plan, w, g, hyper)
        new_state = {}
        if plan.momentum:
            buf = g
            if plan.has_buffer:
                buf = a.add(a.mul(state("momentum_buffer"),
                                  hyper("momentum")),
                            a.mul(g, hyper("keep")))
            new_state["momentum_buffer"] = buf
            g = a.add(g, a.mul(buf, hyper("momentum"))) if plan.nesterov \
                else buf
        return a.sub(w, a.mul(g, hyper("lr"))), new_state
