"""LNS optimizers (LNS training spec §4): SGD and Adam updating packed
codes in LNS arithmetic, bit-exact with the xlnstorch reference.

Parameter groups come from :meth:`LNSModule.lns_parameters`: each names
its parameters' base (``{"params": [...], "base": ...}``). Hyper-parameters
given as floats are encoded in the default base (f = 23) and converted to
each group's base at every step, as the reference does; a zero stays zero
(the reference's conversion turns it into a tiny non-zero code).
"""

import numpy as np
import torch

from . import kernels as K
from .autograd import ZERO, codes, is_zero
from .base import DEFAULT_BASE, Base
from .graph import clear_gradient
from .tensor import LNSTensor


class HyperParameter:
    """A hyper-parameter as an LNS code in its own base."""

    def __init__(self, name, value):
        if isinstance(value, LNSTensor):
            if value.numel() != 1:
                raise ValueError(f"{name} must be a single LNS number")
            self.code, self.base = codes(value.lns).reshape(()), value.lns_base
            self.number = float(value.item())
        else:
            self.number = float(value)
            if not np.isfinite(self.number) or self.number < 0.0:
                raise ValueError(f"Invalid {name} value: {value}")
            self.code = K.encode(np.float64(self.number), **DEFAULT_BASE.kw())
            self.base = DEFAULT_BASE

    def code_in(self, base):
        """The code in `base` (the reference's double rounding through the
        default base; zero stays Z)."""
        if base == self.base:
            return np.int64(self.code)
        return K.change_base(self.code, **self.base.kw(), **base.kw("to_"))

    def __repr__(self):
        return repr(self.number)


def _group_base(group):
    base = group.get("base")
    if base is None:
        raise ValueError("an LNS optimizer's parameter group needs a 'base' "
                         "entry: pass model.lns_parameters()")
    return Base.of(base)


class LNSOptimizer(torch.optim.Optimizer):
    """Base of the LNS optimizers: zero_grad also forgets the gradients
    accumulated across backward calls."""

    def zero_grad(self, set_to_none=True):
        for group in self.param_groups:
            for p in group["params"]:
                clear_gradient(p, set_to_none)

    @staticmethod
    def _evaluate(closure):
        """The loss of `closure` (with autograd on), or None."""
        if closure is None:
            return None
        with torch.enable_grad():
            return closure()

    def _hyper(self, group, *names):
        base = _group_base(group)
        return base, [group[name].code_in(base) for name in names]


def _gradient(p, maximize, decay, kw):
    """p's gradient codes, negated to maximize, with L2 weight decay
    added (spec §4, both optimizers), and p's codes."""
    g, w = codes(p.grad), codes(p)
    if maximize:
        g = g ^ 1
    if not is_zero(decay):
        g = K.add(g, K.mul(w, decay, **kw), **kw)
    return g, w


def _set(p, new_codes):
    with torch.no_grad():
        p.copy_(torch.from_numpy(new_codes.astype(np.float64)))


class LNSSGD(LNSOptimizer):
    """torch.optim.SGD's algorithm in LNS (spec §4, LNSSGD)."""

    def __init__(self, params, lr=0.001, momentum=0.0, dampening=0.0,
                 weight_decay=0.0, nesterov=False, *, maximize=False):
        hp = {name: HyperParameter(name, value) for name, value in
              (("lr", lr), ("momentum", momentum), ("dampening", dampening),
               ("weight_decay", weight_decay))}
        if nesterov and (hp["momentum"].number <= 0
                         or hp["dampening"].number != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero "
                             "dampening")
        super().__init__(params, dict(hp, nesterov=nesterov,
                                      maximize=maximize))

    @torch.no_grad()
    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            base, (lr, momentum, dampening, decay) = self._hyper(
                group, "lr", "momentum", "dampening", "weight_decay")
            kw = base.kw()
            for p in group["params"]:
                if p.grad is None:
                    continue
                g, w = _gradient(p, group["maximize"], decay, kw)
                if not is_zero(momentum):
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = g.copy()
                    else:
                        keep = K.sub(np.int64(0), dampening, **kw)
                        buf = K.add(K.mul(codes(buf), momentum, **kw),
                                    K.mul(g, keep, **kw), **kw)
                    state["momentum_buffer"] = torch.from_numpy(
                        buf.astype(np.float64))
                    g = (K.add(g, K.mul(buf, momentum, **kw), **kw)
                         if group["nesterov"] else buf)
                _set(p, K.sub(w, K.mul(g, lr, **kw), **kw))
        return loss


class LNSAdam(LNSOptimizer):
    """torch.optim.Adam's algorithm in LNS (spec §4, LNSAdam): L2 weight
    decay added to the gradient, AMSGrad optional."""

    def __init__(self, params, lr=0.001, betas=(0.9, 0.999), eps=1e-8,
                 weight_decay=0.0, amsgrad=False, *, maximize=False):
        beta1, beta2 = betas
        for index, beta in enumerate(betas):
            number = beta.item() if isinstance(beta, LNSTensor) else beta
            if not 0.0 <= float(number) < 1.0:
                raise ValueError(f"Invalid beta parameter at index {index}: "
                                 f"{beta}")
        hp = {name: HyperParameter(name, value) for name, value in
              (("lr", lr), ("beta1", beta1), ("beta2", beta2), ("eps", eps),
               ("weight_decay", weight_decay))}
        super().__init__(params, dict(hp, amsgrad=amsgrad, maximize=maximize))

    @torch.no_grad()
    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            base, (lr, beta1, beta2, eps, decay) = self._hyper(
                group, "lr", "beta1", "beta2", "eps", "weight_decay")
            kw = base.kw()
            one = np.int64(0)
            omb1, omb2 = K.sub(one, beta1, **kw), K.sub(one, beta2, **kw)
            for p in group["params"]:
                if p.grad is None:
                    continue
                g, w = _gradient(p, group["maximize"], decay, kw)
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    for name in ("exp_avg", "exp_avg_sq") + (
                            ("max_exp_avg_sq",) if group["amsgrad"] else ()):
                        state[name] = torch.full_like(p, float(ZERO))
                state["step"] += 1
                t = state["step"]
                m = K.add(K.mul(codes(state["exp_avg"]), beta1, **kw),
                          K.mul(g, omb1, **kw), **kw)
                v = K.add(K.mul(codes(state["exp_avg_sq"]), beta2, **kw),
                          K.mul(K.mul(g, g, **kw), omb2, **kw), **kw)
                bc1 = K.sub(one, K.powi(beta1, t, **kw), **kw)
                bc2 = K.sub(one, K.powi(beta2, t, **kw), **kw)
                mhat = K.div(m, bc1, **kw)
                if group["amsgrad"]:
                    vmax = K.maximum(codes(state["max_exp_avg_sq"]), v, **kw)
                    state["max_exp_avg_sq"] = _as_state(vmax)
                    dsq = K.div(vmax, bc2, **kw)
                else:
                    dsq = K.div(v, bc2, **kw)
                denom = K.add(K.sqrt(dsq, **kw), eps, **kw)
                step = K.mul(lr, K.div(mhat, denom, **kw), **kw)
                state["exp_avg"], state["exp_avg_sq"] = _as_state(m), _as_state(v)
                _set(p, K.sub(w, step, **kw))
        return loss


def _as_state(a):
    return torch.from_numpy(np.array(a, dtype=np.int64).astype(np.float64))
