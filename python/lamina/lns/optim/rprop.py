"""LNSRprop: torch.optim.Rprop's algorithm in LNS."""

import numpy as np

from ..autograd import ZERO
from .optimizer import (MINUS_ONE, ONE, LNSOptimizer, _Plan, check, code,
                        hyper_parameters, needs, number, zeros_like)


class LNSRprop(LNSOptimizer):
    """torch.optim.Rprop's algorithm in LNS: where sign(g_prev·g) is +1
    the step size grows, ηₜ = min(η·η₊, Γ_max); where it is −1 it shrinks,
    ηₜ = max(η·η₋, Γ_min), and g counts as zero; θ ← θ − ηₜ·sign(g). The
    step sizes start at lr."""

    def __init__(self, params, lr=0.01, etas=(0.5, 1.2),
                 step_sizes=(1e-6, 50.0), *, maximize=False):
        eta_minus, eta_plus = etas
        step_min, step_max = step_sizes
        check(number(lr) > 0.0, f"Invalid learning rate: {lr}")
        check(0.0 < number(eta_minus) < 1.0 < number(eta_plus),
              f"Invalid eta values: {eta_minus}, {eta_plus}")
        check(0.0 < number(step_min) < number(step_max),
              f"Invalid step sizes: {step_min}, {step_max} (0 < min < max)")
        hp = hyper_parameters(lr=lr, eta_minus=eta_minus, eta_plus=eta_plus,
                              step_min=step_min, step_max=step_max)
        super().__init__(params, dict(hp, maximize=maximize))

    def plan(self, group, base, state):
        first = "step_size" not in state
        return _Plan(kind="rprop", maximize=group["maximize"],
                     initial_step_size=int(code(group, "lr", base))
                     if first else None,
                     state_in=("prev_grad", "step_size"))

    def hyper_codes(self, group, base, state):
        hyper = {name: code(group, name, base) for name in
                 ("eta_minus", "eta_plus", "step_min", "step_max")}
        hyper.update(one=ONE, minus_one=MINUS_ONE, zero=np.int64(ZERO))
        return hyper

    def initial_state(self, plan, p):
        if plan.initial_step_size is None:
            return {}
        return {"prev_grad": zeros_like(p),
                "step_size": np.full(tuple(p.shape), plan.initial_step_size,
                                     np.int64)}

    @staticmethod
    def update(a, plan, w, g, hyper, state):
        needs(a, "LNSRprop", "sign", "eq", "select", "minimum")
        if plan.maximize:
            g = a.neg(g)
        agreement = a.sign(a.mul(state("prev_grad"), g))
        size = state("step_size")
        grows = a.eq(agreement, hyper("one"))
        size = a.select(grows, a.minimum(a.mul(size, hyper("eta_plus")),
                                         hyper("step_max")), size)
        flips = a.eq(agreement, hyper("minus_one"))
        size = a.select(flips, a.maximum(a.mul(size, hyper("eta_minus")),
                                         hyper("step_min")), size)
        g = a.select(flips, hyper("zero"), g)
        new_w = a.sub(w, a.mul(size, a.sign(g)))
        return new_w, {"step_size": size, "prev_grad": g}
