"""LNSRAdam: torch.optim.RAdam's algorithm (rectified Adam) in LNS."""

from .adam import check_adam_family, moments
from .optimizer import (HostArithmetic, ONE, ZeroStateOptimizer, _Plan, code,
                        decayed, hyper_parameters, nonzero)

_STATE = ("exp_avg", "exp_avg_sq")


class _Rectification:
    """RAdam's per-step scalars in LNS, in the reference's order: ρ∞, ρₜ
    and whether the variance is rectified (ρₜ > 5)."""

    def __init__(self, h, beta2, t):
        two = h.encode(2.0)
        self.rho_inf = h.sub(h.div(two, h.nonzero_or_raise(
            h.sub(ONE, beta2), "1 - beta2")), ONE)
        beta2_t = h.powi(beta2, t)
        self.bc2 = h.nonzero_or_raise(h.sub(ONE, beta2_t), f"1 - beta2^{t}")
        self.rho_t = h.sub(self.rho_inf, h.div(
            h.mul(two, h.mul(h.encode(t), beta2_t)), self.bc2))
        self.rectified = h.gt(self.rho_t, h.encode(5.0))

    def factor(self, h):
        """r = √((ρₜ − 4)(ρₜ − 2)ρ∞ / ((ρ∞ − 4)(ρ∞ − 2)ρₜ))."""
        two, four = h.encode(2.0), h.encode(4.0)
        rho_inf, rho_t = self.rho_inf, self.rho_t
        numerator = h.mul(rho_inf, h.mul(h.sub(rho_t, four),
                                         h.sub(rho_t, two)))
        denominator = h.mul(rho_t, h.mul(h.sub(rho_inf, four),
                                         h.sub(rho_inf, two)))
        return h.sqrt(h.div(numerator, h.nonzero_or_raise(
            denominator, "RAdam's rectification denominator")))


class LNSRAdam(ZeroStateOptimizer):
    """torch.optim.RAdam's algorithm in LNS, as the reference computes it:
    m and v as Adam's, m̂ = m / (1 − β₁ᵗ), ρ∞ = 2 / (1 − β₂) − 1,
    ρₜ = ρ∞ − 2t·β₂ᵗ / (1 − β₂ᵗ); while ρₜ ≤ 5, θ ← θ − lr·m̂, after that
    θ ← θ − lr·(m̂·(l·r)) with l = √(1 − β₂ᵗ) / (√v + ε) and the
    rectification r. Weight decay is L2, or decoupled
    (θ ← θ − θ·(lr·λ)) with `decoupled_weight_decay`."""

    def __init__(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0.0, decoupled_weight_decay=False, *,
                 maximize=False):
        check_adam_family(lr, betas, eps, weight_decay, lr_positive=True)
        beta1, beta2 = betas
        hp = hyper_parameters(lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                              weight_decay=weight_decay)
        super().__init__(params, dict(
            hp, decoupled_weight_decay=decoupled_weight_decay,
            maximize=maximize))

    def _rectification(self, group, base, state):
        return _Rectification(HostArithmetic(base), code(group, "beta2", base),
                              state.get("step", 0) + 1)

    def plan(self, group, base, state):
        return _Plan(kind="radam", maximize=group["maximize"],
                     decay=nonzero(code(group, "weight_decay", base)),
                     decoupled=bool(group["decoupled_weight_decay"]),
                     rectified=self._rectification(group, base,
                                                   state).rectified,
                     state_in=_STATE)

    def hyper_codes(self, group, base, state):
        h = HostArithmetic(base)
        hyper = {name: code(group, name, base)
                 for name in ("lr", "beta1", "beta2", "eps", "weight_decay")}
        t = state.get("step", 0) + 1
        hyper.update(
            omb1=h.sub(ONE, hyper["beta1"]), omb2=h.sub(ONE, hyper["beta2"]),
            bc1=h.nonzero_or_raise(h.sub(ONE, h.powi(hyper["beta1"], t)),
                                   f"1 - beta1^{t}"),
            lr_decay=h.mul(hyper["lr"], hyper["weight_decay"]))
        rectification = self._rectification(group, base, state)
        if rectification.rectified:
            hyper.update(sqrt_bc2=h.sqrt(rectification.bc2),
                         r=rectification.factor(h))
        self.advance(state, step=t)
        return hyper

    @staticmethod
    def update(a, plan, w, g, hyper, state):
        w, g = decayed(a, plan, w, g, hyper)
        m, v = moments(a, g, hyper, state)
        mhat = a.div(m, hyper("bc1"))
        if plan.rectified:
            adaptive = a.div(hyper("sqrt_bc2"),
                             a.add(a.sqrt(v), hyper("eps")))
            mhat = a.mul(mhat, a.mul(adaptive, hyper("r")))
        return (a.sub(w, a.mul(hyper("lr"), mhat)),
                {"exp_avg": m, "exp_avg_sq": v})
