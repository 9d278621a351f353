"""LNS optimizers (LNS training spec §4): SGD and Adam updating packed
codes in LNS arithmetic, bit-exact with the xlnstorch reference.

Parameter groups come from :meth:`LNSModule.lns_parameters`: each names
its parameters' base (``{"params": [...], "base": ...}``). Hyper-parameters
given as floats are encoded in the default base (f = 23) and converted to
each group's base at every step, as the reference does; a zero stays zero
(the reference's conversion turns it into a tiny non-zero code).

Each optimizer's update is written once (`update`, against an LNS
arithmetic): `step()` evaluates it on NumPy codes (CodeArithmetic) and
lamina.lns.compile_step on lns ops.
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


class CodeArithmetic:
    """LNS arithmetic on NumPy codes in one base: the eager evaluation of
    an optimizer's update (`update` below is written once against this
    interface; lamina.lns.compiled gives it an IR-emitting one)."""

    def __init__(self, base):
        self.kw = base.kw()

    def add(self, x, y):
        return K.add(x, y, **self.kw)

    def sub(self, x, y):
        return K.sub(x, y, **self.kw)

    def mul(self, x, y):
        return K.mul(x, y, **self.kw)

    def div(self, x, y):
        return K.div(x, y, **self.kw)

    def sqrt(self, x):
        return K.sqrt(x, **self.kw)

    def maximum(self, x, y):
        return K.maximum(x, y, **self.kw)

    def neg(self, x):
        return x ^ 1


def _direction(a, plan, w, g, hyper):
    """The gradient negated to maximize, with L2 weight decay added (spec
    §4, both optimizers)."""
    if plan.maximize:
        g = a.neg(g)
    if plan.decay:
        g = a.add(g, a.mul(w, hyper("weight_decay")))
    return g


class _Plan:
    """What one parameter's update computes, fixed before it runs (a
    compiled step is specialised on it): `state_in` names the state values
    the update reads."""

    def __init__(self, **facts):
        self.__dict__.update(facts)
        self.key = tuple(sorted(facts.items()))

    def __eq__(self, other):
        return isinstance(other, _Plan) and self.key == other.key

    def __hash__(self):
        return hash(self.key)


def _set(p, new_codes):
    with torch.no_grad():
        p.copy_(torch.from_numpy(np.asarray(new_codes).astype(np.float64)))


def _as_state(a):
    return torch.from_numpy(np.array(a, dtype=np.int64).astype(np.float64))


class LNSOptimizer(torch.optim.Optimizer):
    """Base of the LNS optimizers, each given by three methods that the
    eager step and lamina.lns.compile_step share: `plan` (what one
    parameter's update computes), `hyper_codes` (its hyper-parameters as
    codes in the group's base) and `update` (the spec's algorithm, written
    once against any LNS arithmetic). zero_grad also forgets the gradients
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


    def plan(self, group, base, state):
        raise NotImplementedError

    def hyper_codes(self, group, base, state):
        raise NotImplementedError

    @staticmethod
    def update(a, plan, w, g, hyper, state):
        """(new parameter, {state name: new value}) from codes w and g;
        hyper(name) and state(name) give the values the update reads."""
        raise NotImplementedError

    def initial_state(self, plan, p):
        """The state codes of a parameter's first step, by name."""
        return {}

    def store(self, state, new_state):
        """Records a step's new state values (codes) in `state`."""
        for name, value in new_state.items():
            state[name] = _as_state(value)

    @torch.no_grad()
    def step(self, closure=None):
        loss = self._evaluate(closure)
        for group in self.param_groups:
            base = _group_base(group)
            arithmetic = CodeArithmetic(base)
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                plan = self.plan(group, base, state)
                hyper = self.hyper_codes(group, base, state)
                current = self.initial_state(plan, p)
                current.update({name: codes(state[name])
                                for name in plan.state_in if name in state})
                new_w, new_state = self.update(
                    arithmetic, plan, codes(p), codes(p.grad),
                    hyper.__getitem__, current.__getitem__)
                self.store(state, new_state)
                _set(p, new_w)
        return loss


def _code(group, name, base):
    return group[name].code_in(base)


def _nonzero(code):
    return not bool(is_zero(code))


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

    def plan(self, group, base, state):
        momentum = _nonzero(_code(group, "momentum", base))
        has_buffer = momentum and "momentum_buffer" in state
        return _Plan(kind="sgd", maximize=group["maximize"],
                     decay=_nonzero(_code(group, "weight_decay", base)),
                     momentum=momentum, has_buffer=has_buffer,
                     nesterov=group["nesterov"],
                     state_in=("momentum_buffer",) if has_buffer else ())

    def hyper_codes(self, group, base, state):
        hyper = {name: _code(group, name, base)
                 for name in ("lr", "momentum", "weight_decay")}
        # 1 − dampening, the weight of a new gradient in the buffer.
        hyper["keep"] = K.sub(np.int64(0), _code(group, "dampening", base),
                              **base.kw())
        return hyper

    @staticmethod
    def update(a, plan, w, g, hyper, state):
        g = _direction(a, plan, w, g, hyper)
        new_state = {}
        if plan.momentum:
            buf = g
            if plan.has_buffer:
                buf = a.add(a.mul(state("momentum_buffer"),
                                  hyper("momentum")),
                            a.mul(g, hyper("keep")))
            new_state["momentum_buffer"] = buf
            g = a.add(g, a.mul(buf, hyper("momentum"))) if plan.nesterov \
                else buf
        return a.sub(w, a.mul(g, hyper("lr"))), new_state


_ADAM_STATE = ("exp_avg", "exp_avg_sq")


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

    def plan(self, group, base, state):
        amsgrad = group["amsgrad"]
        return _Plan(kind="adam", maximize=group["maximize"],
                     decay=_nonzero(_code(group, "weight_decay", base)),
                     amsgrad=amsgrad,
                     state_in=_ADAM_STATE + (("max_exp_avg_sq",) if amsgrad
                                             else ()))

    def hyper_codes(self, group, base, state):
        """The codes of this step (t = the step count after it)."""
        kw = base.kw()
        one = np.int64(0)
        hyper = {name: _code(group, name, base)
                 for name in ("lr", "beta1", "beta2", "eps", "weight_decay")}
        t = state.get("step", 0) + 1
        for i in (1, 2):
            beta = hyper[f"beta{i}"]
            hyper[f"omb{i}"] = K.sub(one, beta, **kw)
            correction = K.sub(one, K.powi(beta, t, **kw), **kw)
            if is_zero(correction):
                raise ZeroDivisionError(f"1 - beta{i}^{t} is zero in LNS")
            hyper[f"bc{i}"] = correction
        return hyper

    def initial_state(self, plan, p):
        return {name: np.full(tuple(p.shape), ZERO, np.int64)
                for name in plan.state_in}

    def store(self, state, new_state):
        super().store(state, new_state)
        state["step"] = state.get("step", 0) + 1

    @staticmethod
    def update(a, plan, w, g, hyper, state):
        g = _direction(a, plan, w, g, hyper)
        m = a.add(a.mul(state("exp_avg"), hyper("beta1")),
                  a.mul(g, hyper("omb1")))
        v = a.add(a.mul(state("exp_avg_sq"), hyper("beta2")),
                  a.mul(a.mul(g, g), hyper("omb2")))
        new_state = {"exp_avg": m, "exp_avg_sq": v}
        mhat = a.div(m, hyper("bc1"))
        if plan.amsgrad:
            v = a.maximum(state("max_exp_avg_sq"), v)
            new_state["max_exp_avg_sq"] = v
        denom = a.add(a.sqrt(a.div(v, hyper("bc2"))), hyper("eps"))
        return a.sub(w, a.mul(hyper("lr"), a.div(mhat, denom))), new_state
