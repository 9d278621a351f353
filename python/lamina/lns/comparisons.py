"""Comparisons, tests and orderings of LNS tensors beyond the element-wise
predicates of :mod:`lamina.lns.functional`: isclose, allclose, any, all,
isin, sort, argsort and kthvalue, as the xlnstorch reference computes them
(bool and index results are torch tensors; sorted values stay LNS)."""

import torch

from . import autograd as A
from . import kernels as K
from .base import Base
from .functional import (_align, _first_base, _result, implements,
                         written)
from .tensor import LNSTensor

# -- closeness ----------------------------------------------------------


def _isclose_codes(x, y, base, rtol, atol):
    """|x − y| <= atol + rtol·|y| in LNS arithmetic, on codes."""
    kw = Base.of(base).kw()
    x, y, rtol, atol = (A.codes(t) for t in (x, y, rtol, atol))
    distance = K.abs(K.sub(x, y, **kw), **kw)
    tolerance = K.add(atol, K.mul(rtol, K.abs(y, **kw), **kw), **kw)
    return torch.from_numpy(K.compare("le", distance, tolerance, **kw))


def _closeness_operands(input, other, rtol, atol):  # noqa: A002
    base = _first_base(input, other)
    return (*(_align(base, t) for t in (input, other, rtol, atol)), base)


@implements(torch.isclose, torch.Tensor.isclose, lns_operation=_isclose_codes)
def isclose(input, other, rtol=1e-05, atol=1e-08,  # noqa: A002
            equal_nan=False):
    """Element-wise |input − other| <= atol + rtol·|other|, computed in
    LNS in the first LNS operand's base (rtol and atol encoded in it).
    LNS has no NaN, so equal_nan changes nothing."""
    x, y, r, a, base = _closeness_operands(input, other, rtol, atol)
    return _isclose_codes(x, y, base, r, a)


def _allclose_codes(x, y, base, rtol, atol):
    return torch.all(_isclose_codes(x, y, base, rtol, atol))


@implements(torch.allclose, torch.Tensor.allclose,
            lns_operation=_allclose_codes)
def allclose(input, other, rtol=1e-05, atol=1e-08,  # noqa: A002
             equal_nan=False):
    """isclose everywhere, as a 0-d bool tensor (the reference's result;
    torch's own allclose returns a Python bool)."""
    x, y, r, a, base = _closeness_operands(input, other, rtol, atol)
    return _allclose_codes(x, y, base, r, a)


# -- any / all ----------------------------------------------------------


def _reduce(nonzero, reduction, dim, keepdim):
    if dim is None:
        result = reduction(nonzero)
        return result.reshape([1] * nonzero.ndim) if keepdim else result
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    for d in sorted((d % max(nonzero.ndim, 1) for d in dims), reverse=True):
        nonzero = reduction(nonzero, dim=d, keepdim=keepdim)
    return nonzero


def _nonzero(x):
    """True where code tensor x is not zero (either zero code)."""
    return torch.from_numpy(~A.is_zero(A.codes(x)))


def _any_codes(x, dim=None, keepdim=False):
    return _reduce(_nonzero(x), torch.any, dim, keepdim)


def _all_codes(x, dim=None, keepdim=False):
    return _reduce(_nonzero(x), torch.all, dim, keepdim)


def _lns_operand(x, name):
    if not isinstance(x, LNSTensor):
        raise TypeError(f"LNS {name} takes an LNS tensor, got "
                        f"{type(x).__name__}")
    return x.lns


@implements(torch.any, torch.Tensor.any, lns_operation=_any_codes)
def any(input, dim=None, keepdim=False, *, out=None):  # noqa: A001,A002
    """Whether any element (over `dim`: an int, a tuple or None for all)
    is non-zero."""
    return written(_any_codes(_lns_operand(input, "any"), dim, keepdim), out)


@implements(torch.all, torch.Tensor.all, lns_operation=_all_codes)
def all(input, dim=None, keepdim=False, *, out=None):  # noqa: A001,A002
    """Whether every element (over `dim`: an int, a tuple or None for
    all) is non-zero."""
    return written(_all_codes(_lns_operand(input, "all"), dim, keepdim), out)


# -- isin ---------------------------------------------------------------


def _isin_codes(x, y, assume_unique=False, invert=False):
    return torch.isin(x.detach(), y.detach(), assume_unique=assume_unique,
                      invert=invert)


@implements(torch.isin, lns_operation=_isin_codes)
def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each element's code occurs among test_elements' codes (both
    in the first LNS operand's base): the two zero codes are different
    elements, as in the reference."""
    base = _first_base(elements, test_elements)
    return _isin_codes(_align(base, elements), _align(base, test_elements),
                       assume_unique, invert)


# -- orderings ----------------------------------------------------------


def _order_key(c):
    """int64 keys ordered as the LNS values of codes `c` (the reference's
    key, so that ties and unstable sorts come out alike): the exponent for
    positive codes, below every positive key for negative ones, reversed."""
    exponent, negative = c >> 1, (c & 1) == 1
    offset = 2 * (int(torch.max(torch.abs(exponent))) + 1) if c.numel() else 2
    return torch.where(negative, -offset - exponent, exponent)


def _keys(x):
    return _order_key(torch.from_numpy(A.codes(x)))


class Gather(A._Function):
    """Codes taken along `dim` at `indices` (kthvalue) or in the order of
    a permutation (sort); the gradient goes back to the taken positions, Z
    elsewhere."""

    @staticmethod
    def forward(ctx, x, dim, indices, base):
        ctx.shape, ctx.dim, ctx.indices = x.shape, dim, indices
        return torch.take_along_dim(x.detach(), indices, dim)

    @staticmethod
    def backward(ctx, g):
        grad = torch.full(ctx.shape, float(A.ZERO), dtype=torch.float64)
        return (grad.scatter_(ctx.dim, ctx.indices, g.contiguous()), None,
                None, None)


def _check_dim(dim, ndim):
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(f"dimension {dim} is out of range for a tensor of "
                         f"{ndim} dimensions")
    return dim % max(ndim, 1)


def _sort_codes(x, dim=-1, descending=False, stable=False):
    indices = torch.sort(_keys(x), dim=dim, descending=descending,
                         stable=stable).indices
    dim = _check_dim(dim, x.ndim)
    return torch.return_types.sort((Gather.apply(x, dim, indices, None),
                                    indices))


@implements(torch.sort, torch.Tensor.sort, lns_operation=_sort_codes)
def sort(input, dim=-1, descending=False, stable=False,  # noqa: A002
         *, out=None):
    """(values, indices) sorted along `dim` by LNS value; the values are an
    LNSTensor (differentiable: the gradient is permuted back)."""
    if out is not None:
        raise TypeError("LNS sort takes no out= tensors")
    x, base = _lns_operand(input, "sort"), input.lns_base
    values, indices = _sort_codes(x, dim, descending, stable)
    return torch.return_types.sort(
        (_result(values, base, "sort", (x,)), indices))


def _argsort_codes(x, dim=-1, descending=False, stable=False):
    return torch.sort(_keys(x), dim=dim, descending=descending,
                      stable=stable).indices


@implements(torch.argsort, torch.Tensor.argsort, lns_operation=_argsort_codes)
def argsort(input, dim=-1, descending=False, stable=False,  # noqa: A002
            *, out=None):
    """The indices that sort `input` along `dim` by LNS value."""
    return written(_argsort_codes(_lns_operand(input, "argsort"), dim,
                                  descending, stable), out)


def _kthvalue_codes(x, k, dim=-1, keepdim=False):
    dim = _check_dim(dim, x.ndim)
    indices = torch.kthvalue(_keys(x), k, dim=dim, keepdim=True).indices
    values = Gather.apply(x, dim, indices, None)
    if not keepdim and x.ndim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return torch.return_types.kthvalue((values, indices))


@implements(torch.kthvalue, torch.Tensor.kthvalue,
            lns_operation=_kthvalue_codes)
def kthvalue(input, k, dim=-1, keepdim=False, *, out=None):  # noqa: A002
    """(values, indices) of the k-th smallest LNS value along `dim`; the
    values are an LNSTensor whose gradient goes to the chosen elements (Z
    elsewhere)."""
    if out is not None:
        raise TypeError("LNS kthvalue takes no out= tensors")
    if dim is None:
        dim = -1
    x, base = _lns_operand(input, "kthvalue"), input.lns_base
    values, indices = _kthvalue_codes(x, k, dim, keepdim)
    return torch.return_types.kthvalue(
        (_result(values, base, "kthvalue", (x,)), indices))


__all__ = ["isclose", "allclose", "any", "all", "isin", "sort", "argsort",
           "kthvalue"]
