"""The shared base of the LNS optimizers: hyper-parameters as codes, the
LNS arithmetic an update is written against, and the eager step.

Parameter groups come from :meth:`LNSModule.lns_parameters`: each names
its parameters' base (``{"params": [...], "base": ...}``). Hyper-parameters
given as floats are encoded in the default base (f = 23) and converted to
each group's base at every step, as the reference does; a zero stays zero
(the reference's conversion turns it into a tiny non-zero code).

Each optimizer's update is written once (`update`, against an LNS
arithmetic): `step()` evaluates it on NumPy codes (CodeArithmetic) and
lamina.lns.compile_step on lns ops. What depends on the step count alone
(bias corrections, schedules) is computed on the host as scalar codes
(`hyper_codes`, with HostArithmetic), so an update only sees element-wise
operations on tensors of the parameter's shape and 0-d hyper-parameters.
"""

import numpy as np
import torch

from .. import kernels as K
from ..autograd import ZERO, codes, is_zero
from ..base import DEFAULT_BASE, Base
from ..graph import clear_gradient
from ..tensor import LNSTensor

# The code of +1.0 and of -1.0 in every base.
ONE, MINUS_ONE = np.int64(0), np.int64(1)


def number(value):
    """A hyper-parameter given as a float or an LNSTensor, as a float (for
    the constructors' range checks)."""
    if isinstance(value, LNSTensor):
        return float(value.item())
    return float(value)


def check(condition, message):
    """The constructors' argument checks: a ValueError with `message`."""
    if not condition:
        raise ValueError(message)


class HyperParameter:
    """A hyper-parameter as an LNS code in its own base."""

    def __init__(self, name, value):
        if isinstance(value, HyperParameter):
            self.code, self.base, self.number = (value.code, value.base,
                                                 value.number)
        elif isinstance(value, LNSTensor):
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


def hyper_parameters(**values):
    """{name: HyperParameter} of the constructors' float or LNS values."""
    return {name: HyperParameter(name, value) for name, value in
            values.items()}


def _group_base(group):
    base = group.get("base")
    if base is None:
        raise ValueError("an LNS optimizer's parameter group needs a 'base' "
                         "entry: pass model.lns_parameters()")
    return Base.of(base)


def code(group, name, base):
    """The group's hyper-parameter `name` as a code in `base` (a float or
    LNSTensor set on the group later is taken as the constructor would)."""
    value = group[name]
    if not isinstance(value, HyperParameter):
        value = group[name] = HyperParameter(name, value)
    return value.code_in(base)


def nonzero(code_value):
    return not bool(is_zero(code_value))


class CodeArithmetic:
    """LNS arithmetic on NumPy codes in one base: the eager evaluation of
    an optimizer's update (each update is written once against this
    interface; lamina.lns.compiled gives it an IR-emitting one). 0-d
    operands broadcast."""

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

    def minimum(self, x, y):
        return K.minimum(x, y, **self.kw)

    def abs(self, x):  # noqa: A003 - the op's name
        return K.abs(x, **self.kw)

    def neg(self, x):
        return x ^ 1

    def sign(self, x):
        """The code of sign(x): Z for either zero code, else +1 or -1."""
        x = np.asarray(x, np.int64)
        return np.where(is_zero(x), ZERO, x & 1)

    def eq(self, x, y):
        """x == y code for code (a mask for `select`)."""
        return np.asarray(x, np.int64) == np.asarray(y, np.int64)

    def select(self, mask, x, y):
        return np.where(mask, x, y)


class HostArithmetic(CodeArithmetic):
    """Scalar codes on the host: an update's per-step hyper-parameters
    (bias corrections, schedules), computed as the reference does."""

    def encode(self, value):
        """A constant encoded directly in this base (the reference's
        internal constants, unlike the hyper-parameters)."""
        return K.encode(np.float64(value), **self.kw)

    def powi(self, x, n):
        return K.powi(x, int(n), **self.kw)

    def pow_float(self, x, exponent):
        """x ** exponent for a float exponent, as the reference computes it:
        the code with its sign bit cleared times the double exponent,
        truncated to an integer, its low bit cleared (so the result is
        positive). Zero stays zero."""
        x = np.int64(x)
        if is_zero(x):
            return np.int64(ZERO)
        product = np.float64(x & -2) * np.float64(exponent)
        return np.int64(np.trunc(product)) & np.int64(-2)

    def gt(self, x, y):
        return bool(K.compare("gt", x, y, **self.kw))

    def value(self, x):
        """The code's value as a double (the reference's `.value`)."""
        return float(K.decode(x, **self.kw))

    def nonzero_or_raise(self, x, what):
        """`x`, a divisor the update will use, which must not be zero."""
        if is_zero(x):
            raise ZeroDivisionError(f"{what} is zero in LNS")
        return x


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


def as_state(a):
    """Codes as the float64 tensor the optimizer state holds."""
    return torch.from_numpy(np.array(a, dtype=np.int64).astype(np.float64))


def zeros_like(p):
    """Z codes of a parameter's shape (a state's first value)."""
    return np.full(tuple(p.shape), ZERO, np.int64)


class LNSOptimizer(torch.optim.Optimizer):
    """Base of the LNS optimizers, each given by three methods that the
    eager step and lamina.lns.compile_step share: `plan` (what one
    parameter's update computes), `hyper_codes` (its hyper-parameters as
    codes in the group's base, with what the step count decides) and
    `update` (the algorithm, written once against any LNS arithmetic).
    State a step keeps per parameter as scalars (step counts, products of
    scalars) is written by `hyper_codes` through `advance` and recorded by
    `store` with the update's tensor state. zero_grad also forgets the
    gradients accumulated across backward calls."""

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

    def advance(self, state, **scalars):
        """Scalar state this step writes (counts, or codes as 0-d float64
        tensors), recorded by the next `store` into the same `state`."""
        pending = self.__dict__.setdefault("_advancing", {})
        pending[id(state)] = (state, scalars)

    def store(self, state, new_state):
        """Records a step's new state values (codes) in `state`, and the
        scalar state its hyper_codes wrote."""
        for name, value in new_state.items():
            state[name] = as_state(value)
        entry = self.__dict__.get("_advancing", {}).pop(id(state), None)
        if entry is not None and entry[0] is state:
            state.update(entry[1])

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


def needs(a, optimizer, *ops):
    """Checks that arithmetic `a` has the ops an update uses beyond add,
    sub, mul, div, sqrt, maximum and neg (compile_step's arithmetic emits
    only those): a NotImplementedError naming the first one missing."""
    for op in ops:
        if not hasattr(a, op):
            raise NotImplementedError(
                f"{optimizer}'s update uses LNS {op}, which "
                f"{type(a).__name__} does not provide: it runs eagerly only "
                f"(optimizer.step())")


def direction(a, plan, w, g, hyper):
    """The gradient negated to maximize, with L2 weight decay added."""
    if plan.maximize:
        g = a.neg(g)
    if plan.decay:
        g = a.add(g, a.mul(w, hyper("weight_decay")))
    return g


def moving_average(a, average, g, keep, take):
    """keep · average + take · g (the reference's nesting)."""
    return a.add(a.mul(average, keep), a.mul(g, take))


def decayed(a, plan, w, g, hyper):
    """(parameter, direction) after maximize and weight decay, decoupled
    (θ ← θ − θ·(lr·λ)) or L2 (g ← g + λ·θ) as `plan.decoupled` says."""
    if plan.maximize:
        g = a.neg(g)
    if plan.decay:
        if plan.decoupled:
            w = a.sub(w, a.mul(w, hyper("lr_decay")))
        else:
            g = a.add(g, a.mul(hyper("weight_decay"), w))
    return w, g


class ZeroStateOptimizer(LNSOptimizer):
    """An LNS optimizer whose state tensors all start as zero codes (Z)."""

    def initial_state(self, plan, p):
        return {name: zeros_like(p) for name in plan.state_in}
