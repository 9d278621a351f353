"""LNSAdamax: torch.optim.Adamax's algorithm (Adam with an infinity-norm
second moment) in LNS."""

from .adam import check_adam_family
from .optimizer import (HostArithmetic, ONE, ZeroStateOptimizer, _Plan, code,
                        direction, hyper_parameters, moving_average, needs,
                        nonzero)

_STATE = ("exp_avg", "inf_norm")


class LNSAdamax(ZeroStateOptimizer):
    """torch.optim.Adamax's algorithm in LNS, as the reference computes
    it: m ← β₁m + (1 − β₁)g, u ← max(β₂u, |g| + ε),
    θ ← θ − lr·(m / ((1 − β₁ᵗ)·u)); L2 weight decay added to g."""

    def __init__(self, params, lr=0.002, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0.0, *, maximize=False):
        check_adam_family(lr, betas, eps, weight_decay)
        beta1, beta2 = betas
        hp = hyper_parameters(lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                              weight_decay=weight_decay)
        super().__init__(params, dict(hp, maximize=maximize))

    def plan(self, group, base, state):
        return _Plan(kind="adamax", maximize=group["maximize"],
                     decay=nonzero(code(group, "weight_decay", base)),
                     state_in=_STATE)

    def hyper_codes(self, group, base, state):
        h = HostArithmetic(base)
        hyper = {name: code(group, name, base)
                 for name in ("lr", "beta1", "beta2", "eps", "weight_decay")}
        t = state.get("step", 0) + 1
        hyper["omb1"] = h.sub(ONE, hyper["beta1"])
        hyper["bc1"] = h.nonzero_or_raise(
            h.sub(ONE, h.powi(hyper["beta1"], t)), f"1 - beta1^{t}")
        self.advance(state, step=t)
        return hyper

    @staticmethod
    def update(a, plan, w, g, hyper, state):
        needs(a, "LNSAdamax", "abs")
        g = direction(a, plan, w, g, hyper)
        m = moving_average(a, state("exp_avg"), g, hyper("beta1"),
                           hyper("omb1"))
        u = a.maximum(a.mul(state("inf_norm"), hyper("beta2")),
                      a.add(a.abs(g), hyper("eps")))
        step = a.mul(hyper("lr"), a.div(m, a.mul(hyper("bc1"), u)))
        return a.sub(w, step), {"exp_avg": m, "inf_norm": u}
