"""LNSRMSprop: torch.optim.RMSprop's algorithm in LNS."""

from .optimizer import (HostArithmetic, ONE, ZeroStateOptimizer, _Plan, check,
                        code, direction, hyper_parameters, moving_average,
                        nonzero, number)


class LNSRMSprop(ZeroStateOptimizer):
    """torch.optim.RMSprop's algorithm in LNS: v ← αv + (1 − α)g², with
    `centered` v − ḡ² (ḡ ← αḡ + (1 − α)g) under the root,
    d = √v + ε, and θ ← θ − (g / d)·lr, or with momentum
    b ← μb + g / d, θ ← θ − b·lr; L2 weight decay added to g. The state
    holds `square_avg`, and `grad_avg` when centered and
    `momentum_buffer` with momentum, as torch's does (the reference keeps
    all three, the unused ones Z)."""

    def __init__(self, params, lr=0.01, alpha=0.99, eps=1e-08,
                 weight_decay=0.0, momentum=0.0, centered=False, *,
                 maximize=False):
        check(number(lr) >= 0.0, f"Invalid learning rate: {lr}")
        check(0.0 <= number(alpha) < 1.0, f"Invalid alpha value: {alpha}")
        check(number(eps) >= 0.0, f"Invalid epsilon value: {eps}")
        check(number(weight_decay) >= 0.0,
              f"Invalid weight_decay value: {weight_decay}")
        check(number(momentum) >= 0.0, f"Invalid momentum value: {momentum}")
        hp = hyper_parameters(lr=lr, alpha=alpha, eps=eps,
                              weight_decay=weight_decay, momentum=momentum)
        super().__init__(params, dict(hp, centered=centered,
                                      maximize=maximize))

    def plan(self, group, base, state):
        centered = bool(group["centered"])
        momentum = nonzero(code(group, "momentum", base))
        return _Plan(kind="rmsprop", maximize=group["maximize"],
                     decay=nonzero(code(group, "weight_decay", base)),
                     centered=centered, momentum=momentum,
                     state_in=("square_avg",)
                     + (("grad_avg",) if centered else ())
                     + (("momentum_buffer",) if momentum else ()))

    def hyper_codes(self, group, base, state):
        hyper = {name: code(group, name, base) for name in
                 ("lr", "alpha", "eps", "weight_decay", "momentum")}
        hyper["oma"] = HostArithmetic(base).sub(ONE, hyper["alpha"])
        return hyper

    @staticmethod
    def update(a, plan, w, g, hyper, state):
        g = direction(a, plan, w, g, hyper)
        alpha, oma = hyper("alpha"), hyper("oma")
        v = moving_average(a, state("square_avg"), a.mul(g, g), alpha, oma)
        new_state = {"square_avg": v}
        if plan.centered:
            mean = moving_average(a, state("grad_avg"), g, alpha, oma)
            new_state["grad_avg"] = mean
            v = a.sub(v, a.mul(mean, mean))
        scaled = a.div(g, a.add(a.sqrt(v), hyper("eps")))
        if plan.momentum:
            scaled = a.add(a.mul(state("momentum_buffer"),
                                 hyper("momentum")), scaled)
            new_state["momentum_buffer"] = scaled
        return a.sub(w, a.mul(scaled, hyper("lr"))), new_state
