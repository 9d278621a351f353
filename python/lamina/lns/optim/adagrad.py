"""LNSAdagrad: torch.optim.Adagrad's algorithm in LNS."""

import numpy as np

from ..autograd import ZERO, codes
from .optimizer import (ONE, HostArithmetic, LNSOptimizer, _Plan, as_state,
                        check, code, direction, hyper_parameters, nonzero,
                        number)


class LNSAdagrad(LNSOptimizer):
    """torch.optim.Adagrad's algorithm in LNS: s ← s + g²,
    θ ← θ − (g·lrₜ) / (√s + ε) with lrₜ = lr / (1 + (t − 1)·lr_decay);
    L2 weight decay added to g. The step count t is an LNS code, counted
    by LNS additions of 1 as the reference counts it."""

    def __init__(self, params, lr=0.01, lr_decay=0.0, weight_decay=0.0,
                 initial_accumulator_value=0, eps=1e-10, *, maximize=False):
        check(number(lr) >= 0.0, f"Invalid learning rate: {lr}")
        check(number(lr_decay) >= 0.0, f"Invalid lr_decay value: {lr_decay}")
        check(number(weight_decay) >= 0.0,
              f"Invalid weight_decay value: {weight_decay}")
        check(number(initial_accumulator_value) >= 0.0,
              f"Invalid initial_accumulator_value value: "
              f"{initial_accumulator_value}")
        check(number(eps) >= 0.0, f"Invalid epsilon value: {eps}")
        hp = hyper_parameters(
            lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
            initial_accumulator_value=initial_accumulator_value, eps=eps)
        super().__init__(params, dict(hp, maximize=maximize))

    def plan(self, group, base, state):
        first = "sum" not in state
        return _Plan(kind="adagrad", maximize=group["maximize"],
                     decay=nonzero(code(group, "weight_decay", base)),
                     initial_sum=int(code(group, "initial_accumulator_value",
                                          base)) if first else None,
                     state_in=("sum",))

    def hyper_codes(self, group, base, state):
        h = HostArithmetic(base)
        lr, lr_decay = code(group, "lr", base), code(group, "lr_decay", base)
        t = h.add(codes(state["step"]) if "step" in state else ZERO, ONE)
        if nonzero(lr_decay):
            lr = h.div(lr, h.add(ONE, h.mul(lr_decay, h.sub(t, ONE))))
        self.advance(state, step=as_state(t))
        return {"lr": lr, "weight_decay": code(group, "weight_decay", base),
                "eps": code(group, "eps", base)}

    def initial_state(self, plan, p):
        if plan.initial_sum is None:
            return {}
        return {"sum": np.full(tuple(p.shape), plan.initial_sum, np.int64)}

    @staticmethod
    def update(a, plan, w, g, hyper, state):
        g = direction(a, plan, w, g, hyper)
        s = a.add(state("sum"), a.mul(g, g))
        delta = a.div(a.mul(g, hyper("lr")), a.add(a.sqrt(s), hyper("eps")))
        return a.sub(w, delta), {"sum": s}
