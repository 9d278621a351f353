"""LNSASGD: torch.optim.ASGD's algorithm (averaged SGD) in LNS."""

from ..autograd import ZERO, codes
from .optimizer import (ONE, HostArithmetic, LNSOptimizer, _Plan, as_state,
                        check, code, direction, hyper_parameters, nonzero,
                        number)


class LNSASGD(LNSOptimizer):
    """torch.optim.ASGD's algorithm in LNS, as the reference computes it:
    with the step count t (an LNS code, counted by additions of 1),
    ηₜ = lr / (1 + λ·lr·t)^α, θ ← θ·(1 − λ·ηₜ) − g·ηₜ, and the average
    a ← a + (θ − a)·μ, μ = 1 / max(1, t − t0) once t > t0 (1 before).
    The power with the float exponent α is the reference's: the code
    times α, truncated. L2 weight decay added to g."""

    def __init__(self, params, lr=0.01, lambd=0.0001, alpha=0.75,
                 t0=1000000.0, weight_decay=0.0, *, maximize=False):
        check(number(lr) > 0.0, f"Invalid learning rate: {lr}")
        check(number(lambd) >= 0.0, f"Invalid lambd value: {lambd}")
        check(0.0 < number(alpha) <= 1.0, f"Invalid alpha value: {alpha}")
        check(number(t0) >= 0.0, f"Invalid t0 value: {t0}")
        check(number(weight_decay) >= 0.0,
              f"Invalid weight_decay value: {weight_decay}")
        hp = hyper_parameters(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                              weight_decay=weight_decay)
        super().__init__(params, dict(hp, maximize=maximize))

    def plan(self, group, base, state):
        return _Plan(kind="asgd", maximize=group["maximize"],
                     decay=nonzero(code(group, "weight_decay", base)),
                     first="averaged_param" not in state,
                     state_in=("averaged_param",))

    def hyper_codes(self, group, base, state):
        h = HostArithmetic(base)
        lr, lambd = code(group, "lr", base), code(group, "lambd", base)
        t0 = code(group, "t0", base)
        t = h.add(codes(state["step"]) if "step" in state else ZERO, ONE)
        schedule = h.pow_float(h.add(ONE, h.mul(lambd, h.mul(lr, t))),
                               h.value(code(group, "alpha", base)))
        eta = h.div(lr, schedule)
        coef = codes(state["averaging_coef"]) if "averaging_coef" in state \
            else ONE
        if h.gt(t, t0):
            coef = h.div(ONE, h.maximum(ONE, h.sub(t, t0)))
        self.advance(state, step=as_state(t), averaging_coef=as_state(coef))
        return {"eta": eta, "shrink": h.sub(ONE, h.mul(lambd, eta)),
                "coef": coef,
                "weight_decay": code(group, "weight_decay", base)}

    def initial_state(self, plan, p):
        return {"averaged_param": codes(p)} if plan.first else {}

    @staticmethod
    def update(a, plan, w, g, hyper, state):
        g = direction(a, plan, w, g, hyper)
        w = a.sub(a.mul(w, hyper("shrink")), a.mul(g, hyper("eta")))
        average = state("averaged_param")
        average = a.add(average, a.mul(a.sub(w, average), hyper("coef")))
        return w, {"averaged_param": average}
