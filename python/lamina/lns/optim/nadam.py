"""LNSNAdam: torch.optim.NAdam's algorithm (Adam with Nesterov momentum)
in LNS."""

from ..autograd import codes
from .adam import check_adam_family, moments
from .optimizer import (HostArithmetic, ONE, ZeroStateOptimizer, _Plan,
                        as_state, check, code, decayed, hyper_parameters,
                        nonzero, number)

_STATE = ("exp_avg", "exp_avg_sq")


class LNSNAdam(ZeroStateOptimizer):
    """torch.optim.NAdam's algorithm in LNS, as the reference computes it:
    μₜ = β₁(1 − ½·0.96^(t·ψ)) (ψ = momentum_decay; the power with a float
    exponent is the reference's: the code times t·ψ, truncated), the
    product Πμ kept in the state, m and v as Adam's,
    m̂ = μₜ₊₁m / (1 − Πμ·μₜ₊₁) + (1 − μₜ)g / (1 − Πμ), v̂ = v / (1 − β₂ᵗ),
    θ ← θ − lr·(m̂ / (√v̂ + ε)). Weight decay is L2, or decoupled
    (θ ← θ − θ·(lr·λ)) with `decoupled_weight_decay`."""

    def __init__(self, params, lr=0.002, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0.0, momentum_decay=0.004,
                 decoupled_weight_decay=False, *, maximize=False):
        check_adam_family(lr, betas, eps, weight_decay, lr_positive=True)
        check(number(momentum_decay) >= 0.0,
              f"Invalid momentum_decay value: {momentum_decay}")
        beta1, beta2 = betas
        hp = hyper_parameters(lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                              weight_decay=weight_decay,
                              momentum_decay=momentum_decay)
        super().__init__(params, dict(
            hp, decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize))

    def plan(self, group, base, state):
        return _Plan(kind="nadam", maximize=group["maximize"],
                     decay=nonzero(code(group, "weight_decay", base)),
                     decoupled=bool(group["decoupled_weight_decay"]),
                     state_in=_STATE)

    def hyper_codes(self, group, base, state):
        h = HostArithmetic(base)
        hyper = {name: code(group, name, base)
                 for name in ("lr", "beta1", "beta2", "eps", "weight_decay")}
        beta1, beta2 = hyper["beta1"], hyper["beta2"]
        t = state.get("step", 0) + 1
        psi = h.value(code(group, "momentum_decay", base))
        ninety_six, half = h.encode(0.96), h.encode(0.5)

        def mu(step):
            power = h.pow_float(ninety_six, step * psi)
            return h.mul(beta1, h.sub(ONE, h.mul(half, power)))

        mu_t, mu_next = mu(t), mu(t + 1)
        product = h.mul(codes(state["mu_product"]) if "mu_product" in state
                        else ONE, mu_t)
        hyper.update(
            omb1=h.sub(ONE, beta1), omb2=h.sub(ONE, beta2), mu_next=mu_next,
            one_minus_mu=h.sub(ONE, mu_t),
            one_minus_next_product=h.nonzero_or_raise(
                h.sub(ONE, h.mul(product, mu_next)), "1 - mu_product * mu_next"),
            one_minus_product=h.nonzero_or_raise(h.sub(ONE, product),
                                                 "1 - mu_product"),
            bc2=h.nonzero_or_raise(h.sub(ONE, h.powi(beta2, t)),
                                   f"1 - beta2^{t}"),
            lr_decay=h.mul(hyper["lr"], hyper["weight_decay"]))
        self.advance(state, step=t, mu_product=as_state(product))
        return hyper

    @staticmethod
    def update(a, plan, w, g, hyper, state):
        w, g = decayed(a, plan, w, g, hyper)
        m, v = moments(a, g, hyper, state)
        mhat = a.add(a.div(a.mul(hyper("mu_next"), m),
                           hyper("one_minus_next_product")),
                     a.div(a.mul(hyper("one_minus_mu"), g),
                           hyper("one_minus_product")))
        denom = a.add(a.sqrt(a.div(v, hyper("bc2"))), hyper("eps"))
        return (a.sub(w, a.mul(hyper("lr"), a.div(mhat, denom))),
                {"exp_avg": m, "exp_avg_sq": v})
