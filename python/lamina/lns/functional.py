"""The torch functions an LNSTensor implements (``__torch_function__``):
operands aligned to the first LNS operand's base (floats encoded in it,
LNS tensors of other bases converted differentiably), then one autograd
Function of :mod:`lamina.lns.autograd`."""

import numbers

import torch
import torch.nn.functional as F

from . import autograd as A
from . import dispatch
from . import kernels as K
from . import trace
from .base import DEFAULT_BASE, Base
from .tensor import LNSTensor, lnstensor


def implements(*funcs, lns_operation=None):
    """Registers the decorated function as Lamina's implementation (key
    "default" in :mod:`lamina.lns.dispatch`) of each torch function in
    `funcs`; `lns_operation` is its computation on code tensors, with the
    reference's internal signature (what ``apply_lns_op`` runs)."""
    def register(impl):
        for func in funcs:
            dispatch.register_default(func, impl, lns_operation)
        return impl
    return register


def implementation(func):
    """The implementation LNS tensors use for torch function `func`."""
    return dispatch.default_implementation(func)


def on_codes(function, takes_base=True):
    """Autograd Function `function` as a code-level operation: code
    tensors, then the base as a 0-d tensor (or none when the operation does
    not depend on it)."""
    def operation(*args):
        if not takes_base:
            return function.apply(*args, DEFAULT_BASE)
        *operands, base = args
        return function.apply(*operands, Base.of(base))
    return operation


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
            trace.record("change_base", [x.lns], aligned.lns, base)
        return aligned.lns
    if isinstance(x, (numbers.Number, torch.Tensor)) or hasattr(x, "__len__"):
        codes = lnstensor(x, b=base).lns
        if trace.active():
            trace.active().constant(codes, base)
        return codes
    raise TypeError(f"cannot use {type(x).__name__} as an LNS operand")


def _result(codes, base, op, operands, **attrs):
    """The LNSTensor of result `codes`, noted as `op` of `operands` while
    recording."""
    trace.record(op, list(operands), codes, base, **attrs)
    return LNSTensor(codes, base)


def _no_out(out):
    if out is not None:
        raise TypeError("LNS operations take no out= tensor")


def _binary(function, name):
    def impl(x, y, *, out=None):
        _no_out(out)
        base = _first_base(x, y)
        a, b = _align(base, x), _align(base, y)
        return _result(function.apply(a, b, base), base, name, (a, b))
    return impl


def _scaled_binary(function, name):
    """add / sub with torch's alpha: y is first multiplied by alpha, in
    LNS."""
    def impl(x, y, *, alpha=1, out=None):
        _no_out(out)
        base = _first_base(x, y)
        a, b = _align(base, x), _align(base, y)
        if alpha != 1:
            scale = _align(base, alpha)
            b = _result(A.Mul.apply(b, scale, base), base, "mul",
                        (b, scale)).lns
        return _result(function.apply(a, b, base), base, name, (a, b))
    return impl


implements(torch.add, torch.Tensor.add, lns_operation=on_codes(A.Add))(
    _scaled_binary(A.Add, "add"))
implements(torch.sub, torch.subtract, torch.Tensor.sub,
           lns_operation=on_codes(A.Sub))(_scaled_binary(A.Sub, "sub"))
implements(torch.mul, torch.multiply, torch.Tensor.mul,
           lns_operation=on_codes(A.Mul, takes_base=False))(
    _binary(A.Mul, "mul"))
implements(torch.div, torch.divide, torch.true_divide, torch.Tensor.div,
           lns_operation=on_codes(A.Div))(_binary(A.Div, "div"))


@implements(torch.matmul, torch.Tensor.matmul,
            lns_operation=on_codes(A.Matmul))
def matmul(a, b, *, out=None):
    base = _first_base(a, b)
    x, y = _align(base, a), _align(base, b)
    return _result(A.Matmul.apply(x, y, base), base, "matmul", (x, y))


@implements(torch.neg, torch.negative, torch.Tensor.neg,
            lns_operation=on_codes(A.Neg, takes_base=False))
def neg(x):
    return _result(A.Neg.apply(x.lns, x.lns_base), x.lns_base, "neg", (x.lns,))


@implements(torch.relu, F.relu)
def relu(x, inplace=False):
    result = _result(A.Relu.apply(x.lns, x.lns_base), x.lns_base, "relu",
                     (x.lns,))
    if not inplace:
        return result
    # In place as the activations' in-place variants: x takes the result's
    # codes and autograd history.
    x._lns = result.lns
    return x


@implements(torch.square, lns_operation=on_codes(A.Square))
def square(x):
    return _result(A.Square.apply(x.lns, x.lns_base), x.lns_base, "powi",
                   (x.lns,), exponent=2)


@implements(torch.reciprocal, lns_operation=on_codes(A.Reciprocal))
def reciprocal(x):
    return _result(A.Reciprocal.apply(x.lns, x.lns_base), x.lns_base,
                   "reciprocal", (x.lns,))


@implements(torch.sqrt, lns_operation=on_codes(A.Sqrt))
def sqrt(x):
    return _result(A.Sqrt.apply(x.lns, x.lns_base), x.lns_base, "sqrt",
                   (x.lns,))


@implements(torch.abs, torch.absolute,
            lns_operation=on_codes(A.Abs, takes_base=False))
def abs(x):  # noqa: A001 - torch's name
    return _result(A.Abs.apply(x.lns, x.lns_base), x.lns_base, "abs",
                   (x.lns,))


def _pow_codes(x, n, base):
    """The reference's code-level pow: codes x, exponent n (a number or a
    tensor), base."""
    base = Base.of(base)
    if isinstance(n, numbers.Integral) and not isinstance(n, bool):
        return A.PowI.apply(x, int(n), base)
    return A.RealPow.apply(x, torch.as_tensor(n), base)


def _exponent(n, base):
    """A Python integer exponent (powi), or the exponent as a tensor: float
    numbers as float64 (even when integral valued), LNS operands as their
    values in `base`."""
    if isinstance(n, bool):
        raise TypeError("an LNS power takes a number or tensor exponent, "
                        "got a bool")
    if isinstance(n, numbers.Integral) or (isinstance(n, float)
                                           and n.is_integer()):
        return int(n)
    if isinstance(n, numbers.Real):
        return torch.tensor(float(n), dtype=torch.float64)
    if isinstance(n, LNSTensor):
        return A.values(_align(base, n), base)
    if torch.is_tensor(n):
        if n.dtype.is_floating_point:
            return n.detach().to(torch.float64)
        if n.dtype in (torch.bool, torch.complex64, torch.complex128):
            raise TypeError(f"an LNS power takes a real exponent, got a "
                            f"{n.dtype} tensor")
        return n.detach().to(torch.int64)
    raise TypeError(f"an LNS power takes a number or tensor exponent, got "
                    f"{type(n).__name__}")


@implements(torch.pow, torch.Tensor.pow, lns_operation=_pow_codes)
def pow(input, exponent, *, out=None):  # noqa: A001,A002 - torch's names
    """x ** n: an integer number n is the spec's powi; a float number or
    tensor n scales the exponent in double, truncated (the reference's
    rule, which drops the sign); an LNS exponent is used by its value."""
    _no_out(out)
    base = _first_base(input, exponent)
    x = _align(base, input)
    n = _exponent(exponent, base)
    if isinstance(n, int):
        return _result(A.PowI.apply(x, n, base), base, "powi", (x,),
                       exponent=n)
    return _result(A.RealPow.apply(x, n, base), base, "pow", (x,))


def _dims(dim, ndim):
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    for d in dims:
        if not -ndim <= d < max(ndim, 1):
            raise IndexError(f"dimension {d} is out of range for a tensor "
                             f"of {ndim} dimensions")
    return tuple(sorted(d % ndim for d in dims))


def _sum_codes(x, base, dim=None, keepdim=False):
    return A.Sum.apply(x, _dims(dim, x.ndim), keepdim, Base.of(base))


@implements(torch.sum, torch.Tensor.sum, lns_operation=_sum_codes)
def sum(x, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A001
    _no_out(out)
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
    # The reference's draw, one Bernoulli(1 - p) per element: a torch seed
    # keeps the elements it keeps.
    keep = torch.bernoulli(torch.full(input.shape, 1.0 - p,
                                      dtype=torch.float64)) == 1
    scale = float(A.ZERO) if p == 1.0 else float(A.constant(1.0 / (1.0 - p),
                                                            base))
    mask = torch.where(keep, torch.tensor(scale, dtype=torch.float64),
                       torch.tensor(float(A.ZERO), dtype=torch.float64))
    return _result(A.Mul.apply(input.lns, mask, base), base, "dropout",
                   (input.lns,))


@implements(torch.transpose, torch.swapaxes, lns_operation=torch.transpose)
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
        return written(torch.from_numpy(K.compare(predicate, a, b,
                                                  **base.kw())), out)
    return impl


def written(result, out):
    """A torch (bool or index) `result`, copied into `out` when given, as
    torch's out= does."""
    if out is None:
        return result
    if not torch.is_tensor(out):
        raise TypeError(f"out= takes a torch.Tensor, got "
                        f"{type(out).__name__}")
    return out.copy_(result)


def _compare_codes(predicate):
    def operation(x, y):
        return torch.from_numpy(K.compare(predicate, A.codes(x), A.codes(y)))
    return operation


for _predicate, _funcs in {
        "eq": (torch.eq,), "ne": (torch.ne, torch.not_equal),
        "lt": (torch.lt, torch.less), "le": (torch.le, torch.less_equal),
        "gt": (torch.gt, torch.greater),
        "ge": (torch.ge, torch.greater_equal)}.items():
    implements(*_funcs, lns_operation=_compare_codes(_predicate))(
        _compare(_predicate))


@implements(torch.equal, lns_operation=lambda x, y: torch.equal(x, y))
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


def _extremum_codes(largest):
    def operation(x, y, base):
        return A.Extremum.apply(x, y, largest, Base.of(base))
    return operation


implements(torch.maximum, lns_operation=_extremum_codes(True))(
    _extremum(True))
implements(torch.minimum, lns_operation=_extremum_codes(False))(
    _extremum(False))
