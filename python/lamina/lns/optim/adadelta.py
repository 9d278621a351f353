"""LNSAdadelta: torch.optim.Adadelta's algorithm in LNS."""

from .optimizer import (HostArithmetic, ONE, ZeroStateOptimizer, _Plan, check,
                        code, direction, hyper_parameters, moving_average,
                        nonzero, number)

_STATE = ("square_avg", "acc_delta")


class LNSAdadelta(ZeroStateOptimizer):
    """torch.optim.Adadelta's algorithm in LNS: v ← ρv + (1 − ρ)g²,
    Δ = √((u + ε) / (v + ε))·g, u ← ρu + (1 − ρ)Δ², θ ← θ − Δ·lr; L2
    weight decay added to g."""

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0,
                 *, maximize=False):
        check(number(lr) > 0.0, f"Invalid learning rate: {lr}")
        check(0.0 < number(rho) < 1.0, f"Invalid rho value: {rho}")
        check(number(eps) >= 0.0, f"Invalid epsilon value: {eps}")
        check(number(weight_decay) >= 0.0,
              f"Invalid weight_decay value: {weight_decay}")
        hp = hyper_parameters(lr=lr, rho=rho, eps=eps,
                              weight_decay=weight_decay)
        super().__init__(params, dict(hp, maximize=maximize))

    def plan(self, group, base, state):
        return _Plan(kind="adadelta", maximize=group["maximize"],
                     decay=nonzero(code(group, "weight_decay", base)),
                     state_in=_STATE)

    def hyper_codes(self, group, base, state):
        hyper = {name: code(group, name, base)
                 for name in ("lr", "rho", "eps", "weight_decay")}
        hyper["omr"] = HostArithmetic(base).sub(ONE, hyper["rho"])
        return hyper

    @staticmethod
    def update(a, plan, w, g, hyper, state):
        g = direction(a, plan, w, g, hyper)
        rho, omr, eps = hyper("rho"), hyper("omr"), hyper("eps")
        v = moving_average(a, state("square_avg"), a.mul(g, g), rho, omr)
        acc = state("acc_delta")
        delta = a.mul(a.sqrt(a.div(a.add(acc, eps), a.add(v, eps))), g)
        acc = moving_average(a, acc, a.mul(delta, delta), rho, omr)
        return (a.sub(w, a.mul(delta, hyper("lr"))),
                {"square_avg": v, "acc_delta": acc})
