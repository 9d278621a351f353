"""LNSTensor: packed LNS codes plus their base, with the arithmetic,
torch functions and autograd of the xlnstorch reference, computed by
Lamina's compiled kernels.

The codes live in a float64 tensor (`.lns`, exact below 2^53) so that
torch's autograd engine carries them; gradients are code tensors of the
same base. Operations are looked up in :mod:`lamina.lns.functional`
through ``__torch_function__``.
"""

import numbers

import numpy as np
import torch

from . import kernels as K
from . import trace
from .autograd import ZERO, ChangeBase, codes, tensor
from .base import DEFAULT_BASE, Base
from .graph import run_backward


class LNSTensor:
    """Codes `data` (a float64 tensor) in `base` (a Base, float or 0-d
    tensor). Use :func:`lnstensor` to make one from values."""

    def __init__(self, data, base=DEFAULT_BASE, requires_grad=False):
        if not torch.is_tensor(data) or data.dtype != torch.float64:
            raise TypeError("LNSTensor takes its codes as a float64 "
                            "torch.Tensor; use lamina.lns.lnstensor() to "
                            "encode values")
        self._lns = data
        self._base = Base.of(base)
        if requires_grad:
            self.requires_grad_()

    # -- what it holds --------------------------------------------------

    @property
    def lns(self):
        """The codes as a float64 tensor, carrying autograd."""
        return self._lns

    @property
    def codes(self):
        """The codes as an int64 tensor (detached)."""
        return self._lns.detach().to(torch.int64)

    @property
    def base(self):
        """The base as a 0-d float64 tensor."""
        return self._base.tensor()

    @property
    def lns_base(self):
        """The base as a :class:`lamina.lns.base.Base` (f or b)."""
        return self._base

    @property
    def f(self):
        """The fractional bits of the base, or None for an explicit b."""
        return self._base.f

    @property
    def value(self):
        """The decoded values, float64 (detached)."""
        return torch.from_numpy(K.decode(codes(self._lns), **self._base.kw()))

    @property
    def grad(self):
        g = self._lns.grad
        return None if g is None else LNSTensor(g, self._base)

    @property
    def shape(self):
        return self._lns.shape

    @property
    def ndim(self):
        return self._lns.ndim

    @property
    def requires_grad(self):
        return self._lns.requires_grad

    @property
    def device(self):
        return self._lns.device

    @property
    def T(self):  # noqa: N802 - torch's name
        return self.transpose(-2, -1) if self.ndim == 2 else self

    def size(self, dim=None):
        return self._lns.size() if dim is None else self._lns.size(dim)

    def dim(self):
        return self._lns.dim()

    def numel(self):
        return self._lns.numel()

    def item(self):
        return self.value.item()

    def __len__(self):
        return len(self._lns)

    def __repr__(self):
        # The reference's format: the decoded values as a torch tensor.
        return f"LNSTensor(value={self.value}, base={self._base.value!r})"

    # -- autograd -------------------------------------------------------

    def requires_grad_(self, requires_grad=True):
        """Marks a leaf as requiring a gradient; a second call changes
        nothing (the reference registered its hooks twice)."""
        self._lns.requires_grad_(requires_grad)
        if requires_grad and self._lns.grad_fn is None:
            self._lns._lns_base = self._base
        return self

    def detach(self):
        return LNSTensor(self._lns.detach(), self._base)

    def backward(self, gradient=None, retain_graph=None, create_graph=False,
                 inputs=None):
        """Back-propagates from this tensor: the cotangent is `gradient`
        (an LNSTensor, converted to this base) or c1 = +1.0 everywhere.
        Leaves accumulate in LNS, in call order; a graph in which a tensor
        feeds two operations raises RuntimeError (fan-out)."""
        if gradient is None:
            seed = torch.zeros_like(self._lns, dtype=torch.float64)
        else:
            gradient = lnstensor(gradient, b=self._base)
            if gradient.shape != self.shape:
                raise ValueError(f"the gradient has shape "
                                 f"{tuple(gradient.shape)}, the tensor "
                                 f"{tuple(self.shape)}")
            seed = gradient.lns.detach()
        run_backward(self._lns, seed, retain_graph, create_graph,
                     None if inputs is None else [t.lns for t in inputs])

    # -- shapes: codes are only moved, so torch's own autograd applies ----

    def _moved(self, codes_tensor, op="reshape", **attrs):
        """The LNSTensor of moved codes, noted as `op` (a reshape keeps the
        row-major order; a permute names its dims) while recording."""
        trace.record(op, [self._lns], codes_tensor, self._base, **attrs)
        return LNSTensor(codes_tensor, self._base)

    def _permuted(self, codes_tensor, dims):
        return self._moved(codes_tensor, "permute", dims=tuple(dims))

    def view(self, *shape):
        return self._moved(self._lns.view(*shape))

    def reshape(self, *shape):
        return self._moved(self._lns.reshape(*shape))

    def transpose(self, dim0, dim1):
        dims = list(range(self.ndim))
        dims[dim0], dims[dim1] = dims[dim1], dims[dim0]
        return self._permuted(self._lns.transpose(dim0, dim1), dims)

    def permute(self, *dims):
        if len(dims) == 1 and not isinstance(dims[0], int):
            dims = tuple(dims[0])
        dims = [d % max(self.ndim, 1) for d in dims]
        return self._permuted(self._lns.permute(*dims), dims)

    def squeeze(self, dim=None):
        return self._moved(self._lns.squeeze() if dim is None
                           else self._lns.squeeze(dim))

    def unsqueeze(self, dim):
        return self._moved(self._lns.unsqueeze(dim))

    def flatten(self, start_dim=0, end_dim=-1):
        return self._moved(self._lns.flatten(start_dim, end_dim))

    def contiguous(self):
        return self._moved(self._lns.contiguous())

    def clone(self):
        return self._moved(self._lns.clone())

    def to(self, *args, **kwargs):
        """Moves the codes (device); a dtype other than float64 is
        refused: it would change the codes."""
        moved = self._lns.to(*args, **kwargs)
        if moved.dtype != torch.float64:
            raise TypeError("LNS codes stay float64; decode with .value "
                            "for floats")
        return self._moved(moved)

    # -- writing codes in place (parameters under torch.no_grad()) -------

    def _codes_of(self, source):
        """`source` as codes in this tensor's base: an LNSTensor converted,
        values (a tensor, array or number) encoded."""
        return lnstensor(source, b=self._base).lns

    def copy_(self, src, non_blocking=False):
        """Writes `src` (an LNSTensor, in any base, or values to encode in
        this base) into these codes in place, broadcast as torch's copy_;
        on an LNS parameter, the next forward computes with them."""
        self._lns.copy_(self._codes_of(src), non_blocking=non_blocking)
        return self

    def fill_(self, value):
        """Every element set to `value` (a number or a one-element LNS
        tensor) in place."""
        codes = self._codes_of(value)
        if codes.numel() != 1:
            raise ValueError(f"fill_ takes one value, got a tensor of shape "
                             f"{tuple(codes.shape)}")
        self._lns.fill_(codes.reshape(()).item())
        return self

    def zero_(self):
        """Every element set to the zero code Z in place."""
        self._lns.fill_(float(ZERO))
        return self

    @property
    def data(self):
        """The codes without autograd, sharing their storage (torch's
        .data)."""
        return LNSTensor(self._lns.data, self._base)

    @data.setter
    def data(self, source):
        # Replaces the codes' storage as torch's `.data =` does: on an LNS
        # parameter, the Parameter itself holds the new codes.
        self._lns.data = self._codes_of(source).detach()

    # -- torch functions and operators ----------------------------------

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        from .functional import implementation
        return implementation(func)(*args, **(kwargs or {}))

    def __add__(self, other):
        return torch.add(self, other)

    def __radd__(self, other):
        return torch.add(other, self)

    def __sub__(self, other):
        return torch.sub(self, other)

    def __rsub__(self, other):
        return torch.sub(other, self)

    def __mul__(self, other):
        return torch.mul(self, other)

    def __rmul__(self, other):
        return torch.mul(other, self)

    def __truediv__(self, other):
        return torch.div(self, other)

    def __rtruediv__(self, other):
        return torch.div(other, self)

    def __matmul__(self, other):
        return torch.matmul(self, other)

    def __rmatmul__(self, other):
        return torch.matmul(other, self)

    def __pow__(self, exponent):
        return torch.pow(self, exponent)

    def __neg__(self):
        return torch.neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return torch.abs(self)

    def __eq__(self, other):
        return torch.eq(self, other)

    def __ne__(self, other):
        return torch.ne(self, other)

    def __lt__(self, other):
        return torch.lt(self, other)

    def __le__(self, other):
        return torch.le(self, other)

    def __gt__(self, other):
        return torch.gt(self, other)

    def __ge__(self, other):
        return torch.ge(self, other)

    __hash__ = object.__hash__

    def add(self, other, *, alpha=1):
        return torch.add(self, other, alpha=alpha)

    def sub(self, other, *, alpha=1):
        return torch.sub(self, other, alpha=alpha)

    def mul(self, other):
        return torch.mul(self, other)

    def div(self, other):
        return torch.div(self, other)

    def pow(self, exponent):
        return torch.pow(self, exponent)

    def neg(self):
        return torch.neg(self)

    def abs(self):
        return torch.abs(self)

    def sqrt(self):
        return torch.sqrt(self)

    def square(self):
        return torch.square(self)

    def reciprocal(self):
        return torch.reciprocal(self)

    def relu(self):
        return torch.relu(self)

    def tanh(self):
        return torch.tanh(self)

    def sigmoid(self):
        return torch.sigmoid(self)

    def sum(self, dim=None, keepdim=False):
        return torch.sum(self, dim=dim, keepdim=keepdim)

    def matmul(self, other):
        return torch.matmul(self, other)

    def eq(self, other):
        return torch.eq(self, other)

    def ne(self, other):
        return torch.ne(self, other)

    def lt(self, other):
        return torch.lt(self, other)

    def le(self, other):
        return torch.le(self, other)

    def gt(self, other):
        return torch.gt(self, other)

    def ge(self, other):
        return torch.ge(self, other)

    def equal(self, other):
        return torch.equal(self, other)

    def maximum(self, other):
        return torch.maximum(self, other)

    def minimum(self, other):
        return torch.minimum(self, other)

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return torch.isclose(self, other, rtol=rtol, atol=atol,
                             equal_nan=equal_nan)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        return torch.allclose(self, other, rtol=rtol, atol=atol,
                              equal_nan=equal_nan)

    def any(self, dim=None, keepdim=False):
        return torch.any(self, dim=dim, keepdim=keepdim)

    def all(self, dim=None, keepdim=False):
        return torch.all(self, dim=dim, keepdim=keepdim)

    def isin(self, test_elements, *, assume_unique=False, invert=False):
        return torch.isin(self, test_elements, assume_unique=assume_unique,
                          invert=invert)

    def sort(self, dim=-1, descending=False, stable=False):
        return torch.sort(self, dim=dim, descending=descending, stable=stable)

    def argsort(self, dim=-1, descending=False, stable=False):
        return torch.argsort(self, dim=dim, descending=descending,
                             stable=stable)

    def kthvalue(self, k, dim=-1, keepdim=False):
        return torch.kthvalue(self, k, dim=dim, keepdim=keepdim)

    def sign(self):
        return torch.sign(self)

    def positive(self):
        return torch.positive(self)

    def exp(self):
        return torch.exp(self)

    def log(self):
        return torch.log(self)

    # -- in place: the tensor takes the result's codes (and graph) --------

    def _becomes(self, result):
        self._lns = result.lns
        return self

    def add_(self, other, *, alpha=1):
        return self._becomes(torch.add(self, other, alpha=alpha))

    def sub_(self, other, *, alpha=1):
        return self._becomes(torch.sub(self, other, alpha=alpha))

    def mul_(self, other):
        return self._becomes(torch.mul(self, other))

    def div_(self, other):
        return self._becomes(torch.div(self, other))

    def pow_(self, exponent):
        return self._becomes(torch.pow(self, exponent))

    def neg_(self):
        return self._becomes(torch.neg(self))

    def abs_(self):
        return self._becomes(torch.abs(self))

    def sqrt_(self):
        return self._becomes(torch.sqrt(self))

    def square_(self):
        return self._becomes(torch.square(self))

    def reciprocal_(self):
        return self._becomes(torch.reciprocal(self))

    def sign_(self):
        return self._becomes(torch.sign(self))

    @staticmethod
    def get_internal_tensor(fp_value, base):
        """The codes of value(s) `fp_value` in `base` (a 0-d tensor, float
        or Base), for code-level operations."""
        return lnstensor(fp_value, b=base).lns


def _detached(data):
    """Nested lists and tuples with their torch tensors as NumPy arrays
    (read detached: values that carry autograd are taken as they are)."""
    if torch.is_tensor(data):
        return data.detach().cpu().numpy()
    if isinstance(data, (list, tuple)):
        return [_detached(item) for item in data]
    return data


def _as_float64(data):
    if torch.is_tensor(data):
        return data.detach().to(torch.float64)
    if isinstance(data, (list, tuple)):
        data = _detached(data)
    if isinstance(data, (numbers.Number, np.ndarray, np.generic, list,
                         tuple)):
        return torch.as_tensor(np.asarray(data, dtype=np.float64))
    raise TypeError(f"cannot make an LNS tensor from {type(data).__name__}")


def lnstensor(data, from_lns=False, requires_grad=False, f=None, b=None):
    """An LNSTensor of `data` in base 2^(2^-f) or b (default f = 23).

    `data` is values (tensor, array, number, list) to encode, codes when
    `from_lns` (a float64 code tensor keeps its autograd history), or an
    LNSTensor (kept, or converted to the requested base, differentiably).
    Encoding NaN or ±inf raises ValueError."""
    if isinstance(data, LNSTensor):
        base = data.lns_base if (f, b) == (None, None) else Base.of(f=f, b=b)
        if base == data.lns_base:
            result = data
        else:
            result = LNSTensor(ChangeBase.apply(data.lns, data.lns_base, base),
                               base)
        return result.requires_grad_() if requires_grad else result
    base = Base.of(f=f, b=b)
    if from_lns:
        if torch.is_tensor(data) and data.dtype == torch.float64:
            packed = data
        else:
            packed = _as_float64(data)
        result = LNSTensor(packed, base)
    else:
        # Values that require a gradient give a leaf that requires one (the
        # reference's rule); their float history is not kept.
        requires_grad = requires_grad or (torch.is_tensor(data)
                                          and data.requires_grad)
        values = _as_float64(data)
        result = LNSTensor(tensor(K.encode(values.numpy(), **base.kw())),
                           base)
    return result.requires_grad_() if requires_grad else result


def _filled(shape, code, base, requires_grad):
    return LNSTensor(torch.full(tuple(shape), float(code), dtype=torch.float64),
                     base, requires_grad)


def _shape(size):
    return tuple(size[0]) if len(size) == 1 and not isinstance(
        size[0], int) else tuple(size)


def zeros(*size, f=None, b=None, requires_grad=False):
    return _filled(_shape(size), ZERO, Base.of(f=f, b=b), requires_grad)


def ones(*size, f=None, b=None, requires_grad=False):
    return _filled(_shape(size), 0, Base.of(f=f, b=b), requires_grad)


def full(size, fill_value, f=None, b=None, requires_grad=False):
    base = Base.of(f=f, b=b)
    code = int(K.encode(np.float64(fill_value), **base.kw()))
    return _filled(tuple(size), code, base, requires_grad)


def _like_base(other, f, b):
    return other.lns_base if (f, b) == (None, None) else Base.of(f=f, b=b)


def zeros_like(other, f=None, b=None, requires_grad=False):
    return _filled(other.shape, ZERO, _like_base(other, f, b), requires_grad)


def ones_like(other, f=None, b=None, requires_grad=False):
    return _filled(other.shape, 0, _like_base(other, f, b), requires_grad)


def full_like(other, fill_value, f=None, b=None, requires_grad=False):
    base = _like_base(other, f, b)
    return full(other.shape, fill_value, **base.kw(), requires_grad=requires_grad)


def rand(*size, f=None, b=None, requires_grad=False, generator=None):
    """Uniform [0, 1) values (torch's generator), encoded."""
    values = torch.rand(_shape(size), generator=generator, dtype=torch.float64)
    return lnstensor(values, f=f, b=b, requires_grad=requires_grad)


def randn(*size, f=None, b=None, requires_grad=False, generator=None):
    """Standard normal values (torch's generator), encoded."""
    values = torch.randn(_shape(size), generator=generator,
                         dtype=torch.float64)
    return lnstensor(values, f=f, b=b, requires_grad=requires_grad)


def _random_like(draw, input, f, b, requires_grad):  # noqa: A002
    """Values drawn by torch's `draw` (rand_like / randn_like) in the shape
    of `input` (an LNSTensor, whose base is the default, or a tensor),
    encoded."""
    if isinstance(input, LNSTensor):
        base = _like_base(input, f, b)
        input = input.lns  # noqa: A001
    elif torch.is_tensor(input):
        base = Base.of(f=f, b=b)
    else:
        raise TypeError(f"expected an LNSTensor or a torch.Tensor, got "
                        f"{type(input).__name__}")
    values = draw(input.detach(), dtype=torch.float64)
    return lnstensor(values, b=base, requires_grad=requires_grad)


def rand_like(input, *, f=None, b=None, requires_grad=False):  # noqa: A002
    """Uniform [0, 1) values (torch's generator) in the shape of `input`,
    encoded in its base (or f / b)."""
    return _random_like(torch.rand_like, input, f, b, requires_grad)


def randn_like(input, *, f=None, b=None, requires_grad=False):  # noqa: A002
    """Standard normal values (torch's generator) in the shape of `input`,
    encoded in its base (or f / b)."""
    return _random_like(torch.randn_like, input, f, b, requires_grad)
