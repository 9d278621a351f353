"""LNS autograd: one torch.autograd.Function per differentiable LNS
operation, forward and backward both on packed codes through Lamina's
compiled kernels, by the rules of the LNS training spec (§2).

The codes travel through torch's autograd engine as float64 tensors (exact
below 2^53). The engine never adds two of them: a graph in which a tensor
has two consumers is rejected before the backward runs (the reference's
fan-out rule), and gradients of successive backward calls are combined in
LNS by :func:`backward` (§3).
"""

import numpy as np
import torch

from . import kernels as K

ZERO = int(K._ZERO)
# The other zero code, neg(Z).
NEG_ZERO = -(2**53)


def codes(t):
    """A float64 code tensor as an int64 NumPy array."""
    return t.detach().cpu().numpy().astype(np.int64)


def tensor(a):
    """int64 codes as a float64 tensor."""
    # np.array, not np.ascontiguousarray: the latter makes 0-d arrays 1-d.
    return torch.from_numpy(np.array(a, dtype=np.int64).astype(np.float64))


def constant(value, base):
    """The code of a float `value` in `base`, as a 0-d int64 array."""
    return K.encode(np.float64(value), **base.kw())


def is_zero(a):
    return (np.asarray(a, dtype=np.int64) | 1) == ZERO


def reduce_to(grad, shape, base):
    """The gradient of an operand of `shape` broadcast to grad.shape: LNS
    sums over the broadcast dims, sequentially, row-major over them
    (spec §2, fix for element-wise broadcasting)."""
    shape = tuple(shape)
    if grad.shape == shape:
        return grad
    lead = grad.ndim - len(shape)
    axes = list(range(lead)) + [lead + i for i, s in enumerate(shape)
                                if s == 1 and grad.shape[lead + i] != 1]
    if axes:
        grad = K.sum(grad, axis=tuple(axes), **base.kw())
    return np.ascontiguousarray(np.asarray(grad).reshape(shape))


class _Function(torch.autograd.Function):
    """Codes in, codes out; `base` (a Base) is the last argument of every
    apply and gets no gradient."""


class Add(_Function):
    @staticmethod
    def forward(ctx, x, y, base):
        ctx.base, ctx.shapes = base, (x.shape, y.shape)
        return tensor(K.add(codes(x), codes(y), **base.kw()))

    @staticmethod
    def backward(ctx, g):
        g = codes(g)
        return (tensor(reduce_to(g, ctx.shapes[0], ctx.base)),
                tensor(reduce_to(g, ctx.shapes[1], ctx.base)), None)


class Sub(_Function):
    @staticmethod
    def forward(ctx, x, y, base):
        ctx.base, ctx.shapes = base, (x.shape, y.shape)
        return tensor(K.sub(codes(x), codes(y), **base.kw()))

    @staticmethod
    def backward(ctx, g):
        g = codes(g)
        return (tensor(reduce_to(g, ctx.shapes[0], ctx.base)),
                tensor(reduce_to(g ^ 1, ctx.shapes[1], ctx.base)), None)


class Mul(_Function):
    @staticmethod
    def forward(ctx, x, y, base):
        ctx.base = base
        ctx.save_for_backward(x, y)
        return tensor(K.mul(codes(x), codes(y), **base.kw()))

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        g, kw = codes(g), ctx.base.kw()
        gx = gy = None
        if ctx.needs_input_grad[0]:
            gx = tensor(reduce_to(K.mul(g, codes(y), **kw), x.shape, ctx.base))
        if ctx.needs_input_grad[1]:
            gy = tensor(reduce_to(K.mul(g, codes(x), **kw), y.shape, ctx.base))
        return gx, gy, None


class Div(_Function):
    @staticmethod
    def forward(ctx, x, y, base):
        ctx.base = base
        ctx.save_for_backward(x, y)
        # A zero divisor gives the formula's code, as the reference does;
        # the backward keeps the spec's error (training spec §5.8).
        return tensor(K.div(codes(x), codes(y), **base.kw(),
                            zero_divisor="formula"))

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        g, x_codes, y_codes, kw = codes(g), codes(x), codes(y), ctx.base.kw()
        gx = gy = None
        if ctx.needs_input_grad[0]:
            gx = tensor(reduce_to(K.div(g, y_codes, **kw), x.shape, ctx.base))
        if ctx.needs_input_grad[1]:
            # gy = mul(g, mul(div(x, mul(y, y)), cm1)), in that nesting.
            ratio = K.div(x_codes, K.mul(y_codes, y_codes, **kw), **kw)
            gy = K.mul(g, K.mul(ratio, np.int64(1), **kw), **kw)
            gy = tensor(reduce_to(gy, y.shape, ctx.base))
        return gx, gy, None


class Neg(_Function):
    @staticmethod
    def forward(ctx, x, base):
        return tensor(codes(x) ^ 1)

    @staticmethod
    def backward(ctx, g):
        return tensor(codes(g) ^ 1), None


class Abs(_Function):
    """|x|; gx = mul(g, sign(x)), the sign as c1 / cm1 (Z at zero)."""

    @staticmethod
    def forward(ctx, x, base):
        ctx.base = base
        x = codes(x)
        ctx.sign = np.where(is_zero(x), ZERO, x & 1)
        return tensor(K.abs(x, **base.kw()))

    @staticmethod
    def backward(ctx, g):
        return tensor(K.mul(codes(g), ctx.sign, **ctx.base.kw())), None


class Relu(_Function):
    @staticmethod
    def forward(ctx, x, base):
        ctx.base = base
        out = K.relu(codes(x), **base.kw())
        ctx.out = out
        return tensor(out)

    @staticmethod
    def backward(ctx, g):
        return tensor(K.relu_grad(codes(g), ctx.out, **ctx.base.kw())), None


class Sum(_Function):
    """Sequential sum over `dims`; the backward broadcasts g back over the
    reduced dims, no arithmetic (spec §2, fix: the reference returns c1)."""

    @staticmethod
    def forward(ctx, x, dims, keepdim, base):
        ctx.shape, ctx.dims = x.shape, dims
        out = K.sum(codes(x), axis=dims, **base.kw())
        out = np.asarray(out).reshape([1 if d in dims else s
                                       for d, s in enumerate(x.shape)
                                       if keepdim or d not in dims])
        ctx.keepdim = keepdim
        return tensor(out)

    @staticmethod
    def backward(ctx, g):
        if not ctx.keepdim:
            g = g.reshape([1 if d in ctx.dims else s
                           for d, s in enumerate(ctx.shape)])
        return g.expand(ctx.shape).contiguous(), None, None, None


class Matmul(_Function):
    """torch.matmul semantics on codes, with the spec's batch handling of
    the gradients (promoted 1-D operands, sums over broadcast batches)."""

    @staticmethod
    def forward(ctx, a, b, base):
        ctx.base = base
        ctx.save_for_backward(a, b)
        return tensor(K.matmul(codes(a), codes(b), **base.kw()))

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        kw = ctx.base.kw()
        a2, b2 = _promote(codes(a), codes(b))
        g2 = codes(g)
        # The unit axes of the promoted operands, N's first: a vector·vector
        # product's 0-d g becomes (1, 1).
        if b.ndim == 1:
            g2 = g2[..., None]
        if a.ndim == 1:
            g2 = np.expand_dims(g2, -2)
        batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        a_full = np.ascontiguousarray(
            np.broadcast_to(a2, batch + a2.shape[-2:]))
        b_full = np.ascontiguousarray(
            np.broadcast_to(b2, batch + b2.shape[-2:]))
        ga = gb = None
        if not batch:  # matrices: the layer kernels, in the same order
            if ctx.needs_input_grad[0]:
                ga = tensor(K.linear(g2, b2, **kw).reshape(a.shape))
            if ctx.needs_input_grad[1]:
                gb = tensor(_product(np.ascontiguousarray(a2.T), g2, kw)
                            .reshape(b.shape))
            return ga, gb, None
        if ctx.needs_input_grad[0]:
            ga = K.matmul(g2, np.ascontiguousarray(np.swapaxes(b_full, -1, -2)),
                          **kw)
            ga = tensor(_unbroadcast(ga, a2.shape, kw).reshape(a.shape))
        if ctx.needs_input_grad[1]:
            gb = K.matmul(np.ascontiguousarray(np.swapaxes(a_full, -1, -2)), g2,
                          **kw)
            gb = tensor(_unbroadcast(gb, b2.shape, kw).reshape(b.shape))
        return ga, gb, None


def _product(a, b, kw):
    """a[M, K]·b[K, N] summed over k in order, as lns.linear(a, bᵀ): the
    same order of additions as lns.matmul, through the layer's vectorized
    kernels."""
    return K.linear(a, np.ascontiguousarray(b.T), **kw)


def _promote(a, b):
    """1-D operands as torch promotes them: A (K,) → (1, K), B (K,) →
    (K, 1)."""
    if a.ndim == 1:
        a = a[None, :]
    if b.ndim == 1:
        b = b[:, None]
    return np.ascontiguousarray(a), np.ascontiguousarray(b)


def _unbroadcast(grad, shape, kw):
    """Sequential sums over dim 0 while the gradient has more dims than its
    operand, then a keepdim sum over each batch dim where the operand had
    size 1, in increasing dim order (spec §2, matmul)."""
    while grad.ndim > len(shape):
        grad = K.sum(grad, axis=0, **kw)
    for dim in range(len(shape) - 2):
        if shape[dim] == 1 and grad.shape[dim] != 1:
            grad = np.expand_dims(K.sum(grad, axis=dim, **kw), dim)
    return grad


class Linear(_Function):
    """y = x·Wᵀ + b; dW and db reduce over all leading rows flattened
    (spec §2, linear)."""

    @staticmethod
    def forward(ctx, x, w, bias, base):
        ctx.base, ctx.has_bias = base, bias is not None
        ctx.save_for_backward(x, w)
        return tensor(K.linear(codes(x), codes(w),
                               None if bias is None else codes(bias),
                               **base.kw()))

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        kw = ctx.base.kw()
        n, k = w.shape
        g2 = codes(g).reshape(-1, n)
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = tensor(_product(g2, codes(w), kw).reshape(x.shape))
        if ctx.needs_input_grad[1]:
            gw = tensor(_product(np.ascontiguousarray(g2.T),
                                 codes(x).reshape(-1, k), kw))
        if ctx.has_bias and ctx.needs_input_grad[2]:
            gb = tensor(g2[0] if x.ndim == 1 else K.sum(g2, axis=0, **kw))
        return gx, gw, gb, None


class MseLoss(_Function):
    """Spec §2 mse_loss; the backward multiplies by g (fix: the reference
    ignores it; equal when the loss is the root)."""

    @staticmethod
    def forward(ctx, p, t, reduction, base):
        kw = base.kw()
        ctx.base, ctx.reduction = base, reduction
        ctx.save_for_backward(p, t)
        e = K.sub(codes(p), codes(t), **kw)
        squares = K.mul(e, e, **kw)
        if reduction == "none":
            return tensor(squares)
        s = K.sum(squares, **kw)
        if reduction == "mean":
            s = K.div(s, constant(squares.size, base), **kw)
        return tensor(s)

    @staticmethod
    def backward(ctx, g):
        p, t = ctx.saved_tensors
        base, kw = ctx.base, ctx.base.kw()
        q = K.mul(K.sub(codes(p), codes(t), **kw), constant(2.0, base), **kw)
        if ctx.reduction == "mean":
            q = K.div(q, constant(q.size, base), **kw)
        gp = K.mul(np.broadcast_to(codes(g), q.shape), q, **kw)
        return tensor(gp), tensor(gp ^ 1), None, None


class ChangeBase(_Function):
    """Codes into another base; the gradient goes back to the operand's
    base by the same rule (zero stays zero)."""

    @staticmethod
    def forward(ctx, x, source, target):
        ctx.source, ctx.target = source, target
        return tensor(K.change_base(codes(x), **source.kw(),
                                    **target.kw("to_")))

    @staticmethod
    def backward(ctx, g):
        return (tensor(K.change_base(codes(g), **ctx.target.kw(),
                                     **ctx.source.kw("to_"))), None, None)


class Square(_Function):
    """x·x; gx = mul(g, mul(x, c2))."""

    @staticmethod
    def forward(ctx, x, base):
        ctx.base = base
        ctx.save_for_backward(x)
        x = codes(x)
        return tensor(K.mul(x, x, **base.kw()))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        kw = ctx.base.kw()
        twice = K.mul(codes(x), constant(2.0, ctx.base), **kw)
        return tensor(K.mul(codes(g), twice, **kw)), None


class Reciprocal(_Function):
    """1 / x; gx = mul(g, neg(mul(out, out)))."""

    @staticmethod
    def forward(ctx, x, base):
        ctx.base = base
        out = K.div(np.zeros(x.shape, np.int64), codes(x), **base.kw(),
                    zero_divisor="formula")
        ctx.out = out
        return tensor(out)

    @staticmethod
    def backward(ctx, g):
        kw = ctx.base.kw()
        return tensor(K.mul(codes(g), K.mul(ctx.out, ctx.out, **kw) ^ 1,
                            **kw)), None


class PowI(_Function):
    """x ** n for an integer n; gx = mul(g, mul(enc(n), x ** (n - 1)))."""

    @staticmethod
    def forward(ctx, x, n, base):
        ctx.base, ctx.n = base, n
        ctx.save_for_backward(x)
        return tensor(K.powi(codes(x), n, **base.kw()))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        kw = ctx.base.kw()
        slope = K.mul(constant(float(ctx.n), ctx.base),
                      K.powi(codes(x), ctx.n - 1, **kw), **kw)
        return tensor(K.mul(codes(g), slope, **kw)), None, None


class Sqrt(_Function):
    """The spec's sqrt; gx = div(g, mul(c2, out)), undefined at zero."""

    @staticmethod
    def forward(ctx, x, base):
        ctx.base = base
        out = K.sqrt(codes(x), **base.kw())
        ctx.out = out
        return tensor(out)

    @staticmethod
    def backward(ctx, g):
        kw = ctx.base.kw()
        if is_zero(ctx.out).any():
            raise ZeroDivisionError("the LNS sqrt has no gradient at zero")
        twice = K.mul(constant(2.0, ctx.base), ctx.out, **kw)
        return tensor(K.div(codes(g), twice, **kw)), None


class Extremum(_Function):
    """maximum / minimum; the gradient goes to the chosen operand, half of
    it to each where they are equal (as the reference)."""

    @staticmethod
    def forward(ctx, x, y, largest, base):
        ctx.base, ctx.largest = base, largest
        x, y = codes(x), codes(y)
        choose = K.maximum if largest else K.minimum
        ctx.x, ctx.y = x, y
        return tensor(choose(x, y, **base.kw()))

    @staticmethod
    def backward(ctx, g):
        kw = ctx.base.kw()
        g = codes(g)
        x, y = np.broadcast_arrays(ctx.x, ctx.y)
        half = K.mul(g, constant(0.5, ctx.base), **kw)
        wins = "gt" if ctx.largest else "lt"
        x_wins = K.compare(wins, x, y, **kw)
        y_wins = K.compare(wins, y, x, **kw)
        equal = K.compare("eq", x, y, **kw)
        gx = np.where(equal, half, np.where(x_wins, g, ZERO))
        gy = np.where(equal, half, np.where(y_wins, g, ZERO))
        return (tensor(reduce_to(gx, ctx.x.shape, ctx.base)),
                tensor(reduce_to(gy, ctx.y.shape, ctx.base)), None, None)


def values(x, base):
    """Codes → float64 values as the reference decodes them, sign ·
    torch.pow(b, e): operations that hand values to torch's float functions
    use it to stay bit-exact (the decode kernel can differ in the last
    bit)."""
    c = torch.from_numpy(codes(x))
    sign = torch.where((c & 1).bool(), torch.tensor(-1.0, dtype=torch.float64),
                       torch.tensor(1.0, dtype=torch.float64))
    decoded = sign * torch.pow(base.tensor(), (c >> 1).to(torch.float64))
    return torch.where((c | 1) == ZERO, torch.tensor(0.0, dtype=torch.float64),
                       decoded)


def real_power(x, n, base):
    """Codes x ** n for an exponent tensor n broadcast with x. A floating n
    scales the exponent, truncated toward zero and made even: the result is
    positive (the reference's rule); an integer n is powi per element.
    Zero stays Z, as in powi (spec fix)."""
    x, n = np.broadcast_arrays(np.asarray(x, dtype=np.int64), n)
    if n.dtype.kind == "f":
        scaled = ((x & -2).astype(np.float64) * n).astype(np.int64) & -2
        return np.where(is_zero(x), ZERO, scaled)
    out = np.empty(x.shape, np.int64)
    for exponent in np.unique(n):
        chosen = n == exponent
        out[chosen] = K.powi(x, int(exponent), **base.kw())[chosen]
    return out


class RealPow(_Function):
    """x ** n for an exponent tensor n (float64 or int64, not an LNS
    operand); gx = mul(g, mul(x ** (n - 1), enc(n))), reduced to x's shape
    where x was broadcast."""

    @staticmethod
    def forward(ctx, x, n, base):
        ctx.base, ctx.n = base, n.detach().numpy()
        ctx.save_for_backward(x)
        return tensor(real_power(codes(x), ctx.n, base))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        kw, n = ctx.base.kw(), ctx.n
        slope = K.mul(real_power(codes(x), n - 1, ctx.base),
                      K.encode(n.astype(np.float64), **kw), **kw)
        gx = K.mul(codes(g), slope, **kw)
        return tensor(reduce_to(gx, x.shape, ctx.base)), None, None
