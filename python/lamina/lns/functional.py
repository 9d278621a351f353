"""The torch functions an LNSTensor implements (``__torch_function__``):
operands aligned to the first LNS operand's base (floats encoded in it,
LNS tensors of other bases converted differentiably), then one autograd
Function of :mod:`lamina.lns.autograd`."""

import numbers

import torch
import torch.nn.functional as F

from . import autograd as A
from . import kernels as K
from . import trace
from .tensor import LNSTensor, lnstensor

_TABLE = {}


def implements(*funcs):
    def register(impl):
        for func in funcs:
            _TABLE[func] = impl
        return impl
    return register


def implementation(func):
    try:
        return _TABLE[func]
    except KeyError:
        name = getattr(func, "__name__", repr(func))
        raise TypeError(f"{name} is not an operation Lamina implements on "
                        f"LNS tensors; see docs/lns.md for the list") from None


def _first_base(*operands):
    for x in operands:
        if isinstance(x, LNSTensor):
            return x.lns_base
    raise TypeError("an LNS operation needs an LNS operand")


def _align(base, x):
    """Operand `x` as codes in `base`."""
    if isinstance(x, LNSTensor):
        aligned = lnstensor(x, b=base)
        if aligned is not x:
            _record("change_base", [x.lns], aligned.lns, base)
        return aligned.lns
    if isinstance(x, (numbers.Number, torch.Tensor)) or hasattr(x, "__len__"):
        codes = lnstensor(x, b=base).lns
        if trace.active():
            trace.active().constant(codes, base)
        return codes
    raise TypeError(f"cannot use {type(x).__name__} as an LNS operand")


def _record(op, operands, result, base, **attrs):
    recorder = trace.active()
    if recorder is not None:
        recorder.record(op, operands, result, base, **attrs)


def _result(codes, base, op, operands, **attrs):
    """The LNSTensor of result `codes`, noted as `op` of `operands` while
    recording."""
    _record(op, list(operands), codes, base, **attrs)
    return LNSTensor(codes, base)


def _binary(function, name):
    def impl(x, y, *, out=None):
        if out is not None:
            raise TypeError("LNS operations take no out= tensor")
        base = _first_base(x, y)
        a, b = _align(base, x), _align(base, y)
        return _result(function.apply(a, b, base), base, name, (a, b))
    return impl


implements(torch.add, torch.Tensor.add)(_binary(A.Add, "add"))
implements(torch.sub, torch.subtract, torch.Tensor.sub)(_binary(A.Sub, "sub"))
implements(torch.mul, torch.multiply, torch.Tensor.mul)(_binary(A.Mul, "mul"))
implements(torch.div, torch.divide, torch.true_divide,
           torch.Tensor.div)(_binary(A.Div, "div"))


@implements(torch.matmul, torch.Tensor.matmul)
def matmul(a, b, *, out=None):
    base = _first_base(a, b)
    x, y = _align(base, a), _align(base, b)
    return _result(A.Matmul.apply(x, y, base), base, "matmul", (x, y))


@implements(torch.neg, torch.negative, torch.Tensor.neg)
def neg(x):
    return _result(A.Neg.apply(x.lns, x.lns_base), x.lns_base, "neg", (x.lns,))


@implements(torch.relu, F.relu)
def relu(x, inplace=False):
    return _result(A.Relu.apply(x.lns, x.lns_base), x.lns_base, "relu",
                   (x.lns,))


@implements(torch.square)
def square(x):
    return _result(A.Square.apply(x.lns, x.lns_base), x.lns_base, "powi",
                   (x.lns,), exponent=2)


@implements(torch.reciprocal)
def reciprocal(x):
    return _result(A.Reciprocal.apply(x.lns, x.lns_base), x.lns_base,
                   "reciprocal", (x.lns,))


@implements(torch.sqrt)
def sqrt(x):
    return _result(A.Sqrt.apply(x.lns, x.lns_base), x.lns_base, "sqrt",
                   (x.lns,))


@implements(torch.abs, torch.absolute)
def abs(x):  # noqa: A001 - torch's name
    return _result(A.Abs.apply(x.lns, x.lns_base), x.lns_base, "abs",
                   (x.lns,))


@implements(torch.pow)
def pow(x, exponent):  # noqa: A001 - torch's name
    if not isinstance(x, LNSTensor):
        raise TypeError("an LNS power needs an LNS base operand")
    if isinstance(exponent, float) and exponent.is_integer():
        exponent = int(exponent)
    if isinstance(exponent, bool) or not isinstance(exponent, int):
        raise TypeError(f"LNS pow takes an integer exponent (the spec's "
                        f"powi), got {exponent!r}")
    return _result(A.PowI.apply(x.lns, exponent, x.lns_base), x.lns_base,
                   "powi", (x.lns,), exponent=exponent)


def _dims(dim, ndim):
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    for d in dims:
        if not -ndim <= d < max(ndim, 1):
            raise IndexError(f"dimension {d} is out of range for a tensor "
                             f"of {ndim} dimensions")
    return tuple(sorted(d % ndim for d in dims))


@implements(torch.sum, torch.Tensor.sum)
def sum(x, dim=None, keepdim=False, *, dtype=None):  # noqa: A001
    if dtype is not None:
        raise TypeError("an LNS sum keeps the codes' base; dtype= is not "
                        "taken")
    dims = _dims(dim, x.ndim)
    return _result(A.Sum.apply(x.lns, dims, keepdim, x.lns_base), x.lns_base,
                   "sum", (x.lns,), dims=dims, keepdim=keepdim)


@implements(F.linear)
def linear(input, weight, bias=None):  # noqa: A002 - torch's name
    base = _first_base(input, weight)
    operands = [_align(base, input), _align(base, weight)]
    if bias is not None:
        operands.append(_align(base, bias))
    return _result(A.Linear.apply(*operands[:2], operands[2] if bias is not None
                                  else None, base), base, "linear", operands)


@implements(F.mse_loss)
def mse_loss(input, target, size_average=None, reduce=None,  # noqa: A002
             reduction="mean"):
    if size_average is not None or reduce is not None:
        raise TypeError("LNS mse_loss takes reduction=, not the deprecated "
                        "size_average/reduce")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")
    base = _first_base(input, target)
    p, t = _align(base, input), _align(base, target)
    if p.shape != t.shape:
        raise ValueError(f"mse_loss takes input and target of one shape, got "
                         f"{tuple(p.shape)} and {tuple(t.shape)}")
    return _result(A.MseLoss.apply(p, t, reduction, base), base, "mse_loss",
                   (p, t), reduction=reduction)


@implements(F.dropout)
def dropout(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zeroes each element with probability p (torch's generator) and
    scales the others by 1 / (1 - p), in LNS: a multiplication by a mask
    of codes (Z or enc(1 / (1 - p)))."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, "
                         f"but got {p}")
    if not training or p == 0.0:
        return input
    base = input.lns_base
    if p == 1.0:
        mask = torch.full(input.shape, float(A.ZERO), dtype=torch.float64)
    else:
        keep = torch.rand(input.shape, dtype=torch.float64) >= p
        scale = float(A.constant(1.0 / (1.0 - p), base))
        mask = torch.where(keep, torch.tensor(scale, dtype=torch.float64),
                           torch.tensor(float(A.ZERO), dtype=torch.float64))
    return _result(A.Mul.apply(input.lns, mask, base), base, "dropout",
                   (input.lns,))


@implements(torch.transpose, torch.swapaxes)
def transpose(x, dim0, dim1):
    return x.transpose(dim0, dim1)


@implements(torch.reshape)
def reshape(x, shape):
    return x.reshape(shape)


@implements(torch.squeeze)
def squeeze(x, dim=None):
    return x.squeeze(dim)


@implements(torch.unsqueeze)
def unsqueeze(x, dim):
    return x.unsqueeze(dim)


@implements(torch.flatten)
def flatten(x, start_dim=0, end_dim=-1):
    return x.flatten(start_dim, end_dim)


@implements(torch.permute)
def permute(x, dims):
    return x.permute(*dims)


def _compare(predicate):
    def impl(x, y, *, out=None):
        base = _first_base(x, y)
        a, b = A.codes(_align(base, x)), A.codes(_align(base, y))
        return torch.from_numpy(K.compare(predicate, a, b, **base.kw()))
    return impl


for _predicate, _funcs in {
        "eq": (torch.eq,), "ne": (torch.ne, torch.not_equal),
        "lt": (torch.lt, torch.less), "le": (torch.le, torch.less_equal),
        "gt": (torch.gt, torch.greater),
        "ge": (torch.ge, torch.greater_equal)}.items():
    implements(*_funcs)(_compare(_predicate))


@implements(torch.equal)
def equal(x, y):
    """Same shape and the same codes everywhere."""
    base = _first_base(x, y)
    a, b = _align(base, x), _align(base, y)
    return a.shape == b.shape and bool(torch.equal(a.detach(), b.detach()))


def _extremum(largest):
    def impl(x, y, *, out=None):
        base = _first_base(x, y)
        a, b = _align(base, x), _align(base, y)
        return _result(A.Extremum.apply(a, b, largest, base), base,
                       "maximum" if largest else "minimum", (a, b))
    return impl


implements(torch.maximum)(_extremum(True))
implements(torch.minimum)(_extremum(False))
