"""Element-wise LNS functions of one tensor beyond the arithmetic of
:mod:`lamina.lns.functional`: sign, positive, exp and log, as the xlnstorch
reference computes them (exp as a power of e's code, log through torch's
float log of the reference's decoded values)."""

import numpy as np
import torch

from . import autograd as A
from . import kernels as K
from .base import Base
from .functional import _result, implements
from .tensor import LNSTensor


def _operand(x, name):
    if not isinstance(x, LNSTensor):
        raise TypeError(f"LNS {name} takes an LNS tensor, got "
                        f"{type(x).__name__}")
    return x.lns, x.lns_base


def _no_out(out):
    if out is not None:
        raise TypeError("LNS operations take no out= tensor")


# -- sign ---------------------------------------------------------------


class Sign(A._Function):
    """c1 for positive codes, cm1 for negative ones, Z for either zero;
    the gradient is Z (torch's sign has a zero gradient; the reference's
    backward fails for tensors of more than one element)."""

    @staticmethod
    def forward(ctx, x, base):
        c = A.codes(x)
        return A.tensor(np.where(A.is_zero(c), A.ZERO, c & 1))

    @staticmethod
    def backward(ctx, g):
        return torch.full_like(g, float(A.ZERO)), None


def _sign_codes(x, base=None):
    return Sign.apply(x, None)


@implements(torch.sign, torch.Tensor.sign, lns_operation=_sign_codes)
def sign(input, *, out=None):  # noqa: A002 - torch's name
    _no_out(out)
    x, base = _operand(input, "sign")
    return _result(Sign.apply(x, base), base, "sign", (x,))


# -- positive -----------------------------------------------------------


@implements(torch.positive, torch.Tensor.positive, lns_operation=lambda x: x)
def positive(input):  # noqa: A002 - torch's name
    """The tensor itself (its codes, shared)."""
    x, base = _operand(input, "positive")
    return LNSTensor(x, base)


# -- exp ----------------------------------------------------------------


def reference_e():
    """The reference's e: torch.exp(torch.tensor(1.0)), in torch's default
    dtype when called (float32 unless changed; its code differs from
    float64 e's for f = 22 and f >= 25)."""
    return float(torch.exp(torch.tensor(1.0)))


def exp_codes(x, base):
    """e ** x for codes `x`, as the reference computes it: the exponent of
    enc(e) (see reference_e) times the decoded x in double, truncated, sign
    bit clear. A result beyond the codes' range raises OverflowError."""
    e = np.float64(int(A.constant(reference_e(), base)) & -2)
    product = e * np.asarray(K.decode(x, **base.kw()))
    if not np.all(np.abs(product) < 2.0 ** 53):
        raise OverflowError("LNS exp of a value beyond the range of LNS codes")
    return np.trunc(product).astype(np.int64) & -2


class Exp(A._Function):
    """e ** x as the power of e's code by x's value (the reference's rule:
    code(e) · value, truncated, made even); gx = mul(g, out)."""

    @staticmethod
    def forward(ctx, x, base):
        ctx.base = base
        out = exp_codes(A.codes(x), base)
        ctx.out = out
        return A.tensor(out)

    @staticmethod
    def backward(ctx, g):
        return A.tensor(K.mul(A.codes(g), ctx.out, **ctx.base.kw())), None


def _exp_codes(x, base):
    return Exp.apply(x, Base.of(base))


@implements(torch.exp, torch.Tensor.exp, lns_operation=_exp_codes)
def exp(input, *, out=None):  # noqa: A002 - torch's name
    _no_out(out)
    x, base = _operand(input, "exp")
    return _result(Exp.apply(x, base), base, "exp", (x,))


# -- log ----------------------------------------------------------------


class Log(A._Function):
    """The natural log: torch.log of the reference's decoded values,
    encoded; gx = div(g, x). A non-positive value raises ValueError (its
    log, NaN or -inf, has no code)."""

    @staticmethod
    def forward(ctx, x, base):
        ctx.base = base
        ctx.save_for_backward(x)
        values = A.values(x, base)
        bad = values <= 0
        if bad.any():
            index = tuple(int(i) for i in torch.nonzero(bad)[0])
            raise ValueError(f"LNS log of {values[index].item()} (at index "
                             f"{index}): the log of a value <= 0 has no LNS "
                             f"code")
        return A.tensor(K.encode(torch.log(values).numpy(), **base.kw()))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return A.tensor(K.div(A.codes(g), A.codes(x), **ctx.base.kw())), None


def _log_codes(x, base):
    return Log.apply(x, Base.of(base))


@implements(torch.log, torch.Tensor.log, lns_operation=_log_codes)
def log(input, *, out=None):  # noqa: A002 - torch's name
    _no_out(out)
    x, base = _operand(input, "log")
    return _result(Log.apply(x, base), base, "log", (x,))


__all__ = ["sign", "positive", "exp", "log", "exp_codes", "reference_e"]
