"""LNSAdam and LNSAdamW: torch.optim.Adam's algorithm in LNS (LNS
training spec §4), with L2 or decoupled weight decay."""

from .optimizer import (HostArithmetic, ONE, ZeroStateOptimizer, _Plan, check,
                        code, direction, hyper_parameters, moving_average,
                        nonzero, number)

_ADAM_STATE = ("exp_avg", "exp_avg_sq")


def check_betas(betas):
    for index, beta in enumerate(betas):
        check(0.0 <= number(beta) < 1.0,
              f"Invalid beta parameter at index {index}: {beta}")


def check_adam_family(lr, betas, eps, weight_decay, lr_positive=False):
    """The reference's checks for Adam's relatives (eps > 0)."""
    check(number(lr) > 0.0 if lr_positive else number(lr) >= 0.0,
          f"Invalid learning rate: {lr}")
    check_betas(betas)
    check(number(eps) > 0.0, f"Invalid epsilon value: {eps}")
    check(number(weight_decay) >= 0.0,
          f"Invalid weight_decay value: {weight_decay}")


def bias_corrections(base, state, hyper, optimizer):
    """Adds Adam's per-step codes to `hyper`: 1 − β₁, 1 − β₂ and the bias
    corrections 1 − βᵢᵗ (t = the step count after this step, written to
    the state by the next store)."""
    h = HostArithmetic(base)
    t = state.get("step", 0) + 1
    for i in (1, 2):
        beta = hyper[f"beta{i}"]
        hyper[f"omb{i}"] = h.sub(ONE, beta)
        hyper[f"bc{i}"] = h.nonzero_or_raise(h.sub(ONE, h.powi(beta, t)),
                                             f"1 - beta{i}^{t}")
    optimizer.advance(state, step=t)
    return hyper


def moments(a, g, hyper, state):
    """The Adam family's first and second moments after direction g."""
    m = moving_average(a, state("exp_avg"), g, hyper("beta1"), hyper("omb1"))
    v = moving_average(a, state("exp_avg_sq"), a.mul(g, g), hyper("beta2"),
                       hyper("omb2"))
    return m, v


def adam_moments(a, plan, w, g, hyper, state):
    """Adam's moments and step from the direction g: (new parameter,
    new state)."""
    m, v = moments(a, g, hyper, state)
    new_state = {"exp_avg": m, "exp_avg_sq": v}
    mhat = a.div(m, hyper("bc1"))
    if plan.amsgrad:
        v = a.maximum(state("max_exp_avg_sq"), v)
        new_state["max_exp_avg_sq"] = v
    denom = a.add(a.sqrt(a.div(v, hyper("bc2"))), hyper("eps"))
    return a.sub(w, a.mul(hyper("lr"), a.div(mhat, denom))), new_state


class LNSAdam(ZeroStateOptimizer):
    """torch.optim.Adam's algorithm in LNS (spec §4, LNSAdam): L2 weight
    decay added to the gradient, AMSGrad optional."""

    def __init__(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0.0, amsgrad=False, *, maximize=False):
        beta1, beta2 = betas
        check_betas(betas)
        hp = hyper_parameters(lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                              weight_decay=weight_decay)
        super().__init__(params, dict(hp, amsgrad=amsgrad, maximize=maximize))

    def plan(self, group, base, state):
        amsgrad = group["amsgrad"]
        return _Plan(kind="adam", maximize=group["maximize"],
                     decay=nonzero(code(group, "weight_decay", base)),
                     amsgrad=amsgrad,
                     state_in=_ADAM_STATE + (("max_exp_avg_sq",) if amsgrad
                                             else ()))

    def hyper_codes(self, group, base, state):
        """The codes of this step (t = the step count after it)."""
        hyper = {name: code(group, name, base)
                 for name in ("lr", "beta1", "beta2", "eps", "weight_decay")}
        return bias_corrections(base, state, hyper, self)

    @staticmethod
    def update(a, plan, w, g, hyper, state):
        g = direction(a, plan, w, g, hyper)
        return adam_moments(a, plan, w, g, hyper, state)


class LNSAdamW(LNSAdam):
    """torch.optim.AdamW's algorithm in LNS: Adam with decoupled weight
    decay, θ ← θ − (lr·λ)·θ before the moments (the gradient itself is not
    decayed)."""

    def __init__(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0.01, amsgrad=False, *, maximize=False):
        check_adam_family(lr, betas, eps, weight_decay)
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad,
                         maximize=maximize)

    def plan(self, group, base, state):
        plan = super().plan(group, base, state)
        return _Plan(**dict(plan.key, kind="adamw"))

    def hyper_codes(self, group, base, state):
        hyper = super().hyper_codes(group, base, state)
        hyper["lr_decay"] = HostArithmetic(base).mul(hyper["lr"],
                                                      hyper["weight_decay"])
        return hyper

    @staticmethod
    def update(a, plan, w, g, hyper, state):
        if plan.maximize:
            g = a.neg(g)
        if plan.decay:
            w = a.sub(w, a.mul(hyper("lr_decay"), w))
        return adam_moments(a, plan, w, g, hyper, state)
