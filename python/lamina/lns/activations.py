"""The activation functions an LNSTensor implements beyond relu (leaky_relu,
threshold, tanh, sigmoid, softmax ... silu): their torch registrations and
autograd Functions, bit-exact with the xlnstorch reference on Lamina's
kernels.

Functions of one variable the reference evaluates in floating point (tanh,
sigmoid, logsigmoid, exp, log) decode the codes, apply torch's float64
function and encode the result, as the reference does; exp is the
reference's power of e (e in torch's default dtype, encoded, its exponent
scaled by the decoded operand and truncated). Where the reference is
clearly wrong, the fixed rule is used and its docstring says so
(docs/lns.md lists them).
"""

import warnings

import numpy as np
import torch
import torch.nn.functional as F

from . import kernels as K
from .autograd import ZERO, _Function, codes, constant, tensor
from .elementwise import exp_codes
from .functional import _align, _first_base, _result, implements
from .tensor import LNSTensor, rand

# The code of +1.0 (c1) in every base.
ONE = np.int64(0)
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


# -- code arithmetic the activations share ---------------------------------

def _compare(predicate, x, y, base):
    return K.compare(predicate, x, y, **base.kw())


def _is_zero(x):
    return (np.asarray(x) | 1) == ZERO


def _sign_bit(x):
    return (np.asarray(x) & 1) == 1


def _through_float(function, x, base):
    """Decode, apply torch's float64 `function`, encode (the reference's
    route for tanh, sigmoid, logsigmoid and log)."""
    values = torch.from_numpy(np.asarray(K.decode(x, **base.kw())))
    return K.encode(function(values).numpy(), **base.kw())


def log_codes(x, base):
    return _through_float(torch.log, x, base)


def sigmoid_codes(x, base):
    return _through_float(torch.sigmoid, x, base)


def tanh_codes(x, base):
    return _through_float(torch.tanh, x, base)


def _sum_keepdim(x, dim, kw):
    """The reference's sequential sum over one dim, kept as size 1."""
    if x.ndim == 0:
        return x
    return np.expand_dims(K.sum(x, axis=dim, **kw), dim)


# -- autograd Functions: codes in, codes out, base last ----------------------

class LeakyRelu(_Function):
    """x < 0 ? mul(x, slope) : x on the sign bit. gx = mul(g, slope) where x
    is negative or zero, g elsewhere. (fix) the reference tests the output's
    sign, which gives 1 for negative x when the slope is negative."""

    @staticmethod
    def forward(ctx, x, slope, base):
        x, slope = codes(x), codes(slope)
        ctx.base, ctx.slope = base, slope
        ctx.negative = _sign_bit(x) | _is_zero(x)
        return tensor(np.where(_sign_bit(x), K.mul(x, slope, **base.kw()), x))

    @staticmethod
    def backward(ctx, g):
        slope = np.where(ctx.negative, ctx.slope, ONE)
        return tensor(K.mul(codes(g), slope, **ctx.base.kw())), None, None


class Threshold(_Function):
    """gt(x, threshold) ? x : value; gx = g where gt(x, threshold), Z
    elsewhere. (fix) the reference tests out == value, which drops the
    gradient of an x above the threshold that equals value."""

    @staticmethod
    def forward(ctx, x, threshold, value, base):
        x = codes(x)
        ctx.base = base
        ctx.kept = _compare("gt", x, codes(threshold), base)
        return tensor(np.where(ctx.kept, x, codes(value)))

    @staticmethod
    def backward(ctx, g):
        slope = np.where(ctx.kept, ONE, ZERO)
        return tensor(K.mul(codes(g), slope, **ctx.base.kw())), None, None, None


class Tanh(_Function):
    """tanh in float64; gx = mul(g, sub(c1, mul(out, out)))."""

    @staticmethod
    def forward(ctx, x, base):
        ctx.base = base
        ctx.out = tanh_codes(codes(x), base)
        return tensor(ctx.out)

    @staticmethod
    def backward(ctx, g):
        kw = ctx.base.kw()
        slope = K.sub(ONE, K.mul(ctx.out, ctx.out, **kw), **kw)
        return tensor(K.mul(codes(g), slope, **kw)), None


class Sigmoid(_Function):
    """sigmoid in float64; gx = mul(g, mul(out, sub(c1, out)))."""

    @staticmethod
    def forward(ctx, x, base):
        ctx.base = base
        ctx.out = sigmoid_codes(codes(x), base)
        return tensor(ctx.out)

    @staticmethod
    def backward(ctx, g):
        kw = ctx.base.kw()
        slope = K.mul(ctx.out, K.sub(ONE, ctx.out, **kw), **kw)
        return tensor(K.mul(codes(g), slope, **kw)), None


class LogSigmoid(_Function):
    """logsigmoid in float64; gx = mul(g, exp(sub(out, x))) (= sigmoid(-x))."""

    @staticmethod
    def forward(ctx, x, base):
        ctx.base, ctx.x = base, codes(x)
        ctx.out = _through_float(F.logsigmoid, ctx.x, base)
        return tensor(ctx.out)

    @staticmethod
    def backward(ctx, g):
        kw = ctx.base.kw()
        slope = exp_codes(K.sub(ctx.out, ctx.x, **kw), ctx.base)
        return tensor(K.mul(codes(g), slope, **kw)), None


def _softmax_codes(x, dim, base):
    kw = base.kw()
    exps = exp_codes(x, base)
    return K.div(exps, _sum_keepdim(exps, dim, kw), **kw)


def _softmax_backward(out, g, dim, kw):
    """mul(out, sub(g, sum(mul(g, out)))) over `dim`."""
    dot = _sum_keepdim(K.mul(g, out, **kw), dim, kw)
    return K.mul(out, K.sub(g, dot, **kw), **kw)


class Softmax(_Function):
    """div(exp(x), sum(exp(x))) over `dim`;
    gx = mul(out, sub(g, sum(mul(g, out))))."""

    @staticmethod
    def forward(ctx, x, dim, base):
        ctx.base, ctx.dim = base, dim
        ctx.out = _softmax_codes(codes(x), dim, base)
        return tensor(ctx.out)

    @staticmethod
    def backward(ctx, g):
        grad = _softmax_backward(ctx.out, codes(g), ctx.dim, ctx.base.kw())
        return tensor(grad), None, None


class Softmin(_Function):
    """softmax of neg(x); gx = neg(mul(out, sub(g, sum(mul(g, out))))).
    (fix) the reference returns softmax's gradient, without the neg."""

    @staticmethod
    def forward(ctx, x, dim, base):
        ctx.base, ctx.dim = base, dim
        ctx.out = _softmax_codes(codes(x) ^ 1, dim, base)
        return tensor(ctx.out)

    @staticmethod
    def backward(ctx, g):
        grad = _softmax_backward(ctx.out, codes(g), ctx.dim, ctx.base.kw())
        return tensor(grad ^ 1), None, None


class LogSoftmax(_Function):
    """sub(x, log(sum(exp(x)))) over `dim`;
    gx = sub(g, mul(exp(out), sum(g)))."""

    @staticmethod
    def forward(ctx, x, dim, base):
        kw = base.kw()
        x = codes(x)
        ctx.base, ctx.dim = base, dim
        total = _sum_keepdim(exp_codes(x, base), dim, kw)
        ctx.out = K.sub(x, log_codes(total, base), **kw)
        return tensor(ctx.out)

    @staticmethod
    def backward(ctx, g):
        kw = ctx.base.kw()
        g = codes(g)
        spread = K.mul(exp_codes(ctx.out, ctx.base),
                       _sum_keepdim(g, ctx.dim, kw), **kw)
        return tensor(K.sub(g, spread, **kw)), None, None


class Hardtanh(_Function):
    """x clamped to [min_val, max_val] (lt, then gt); gx = Z where the
    output is <= min_val or >= max_val, g elsewhere."""

    @staticmethod
    def forward(ctx, x, low, high, base):
        x, low, high = codes(x), codes(low), codes(high)
        out = np.where(_compare("lt", x, low, base), low, x)
        out = np.where(_compare("gt", out, high, base), high, out)
        ctx.base = base
        ctx.clamped = (_compare("le", out, low, base)
                       | _compare("ge", out, high, base))
        return tensor(out)

    @staticmethod
    def backward(ctx, g):
        slope = np.where(ctx.clamped, ZERO, ONE)
        return tensor(K.mul(codes(g), slope, **ctx.base.kw())), None, None, None


class Relu6(_Function):
    """lt(x, Z) ? Z : gt(x, 6) ? 6 : x; gx = Z where the output is <= 0 or
    >= 6, g elsewhere."""

    @staticmethod
    def forward(ctx, x, base):
        x, six = codes(x), constant(6.0, base)
        out = np.where(_compare("lt", x, ZERO, base), ZERO,
                       np.where(_compare("gt", x, six, base), six, x))
        ctx.base = base
        ctx.clamped = (_compare("le", out, ZERO, base)
                       | _compare("ge", out, six, base))
        return tensor(out)

    @staticmethod
    def backward(ctx, g):
        slope = np.where(ctx.clamped, ZERO, ONE)
        return tensor(K.mul(codes(g), slope, **ctx.base.kw())), None


class Hardswish(_Function):
    """le(x, -3) ? Z : ge(x, 3) ? x : div(mul(x, add(x, 3)), 6);
    gx = mul(g, Z / c1 / div(add(mul(x, 2), 3), 6)) on the same tests."""

    @staticmethod
    def forward(ctx, x, base):
        kw = base.kw()
        x = codes(x)
        three, six = constant(3.0, base), constant(6.0, base)
        ctx.base, ctx.x = base, x
        swish = K.div(K.mul(x, K.add(x, three, **kw), **kw), six, **kw)
        return tensor(np.where(
            _compare("le", x, constant(-3.0, base), base), ZERO,
            np.where(_compare("ge", x, three, base), x, swish)))

    @staticmethod
    def backward(ctx, g):
        kw, base, x = ctx.base.kw(), ctx.base, ctx.x
        three = constant(3.0, base)
        ramp = K.div(K.add(K.mul(x, constant(2.0, base), **kw), three, **kw),
                     constant(6.0, base), **kw)
        slope = np.where(_compare("le", x, constant(-3.0, base), base), ZERO,
                         np.where(_compare("ge", x, three, base), ONE, ramp))
        return tensor(K.mul(codes(g), slope, **kw)), None


def _positive(x, base):
    return _compare("gt", x, ZERO, base)


class Elu(_Function):
    """gt(x, Z) ? x : mul(alpha, sub(exp(x), c1));
    gx = mul(g, gt(x, Z) ? c1 : mul(alpha, exp(x)))."""

    @staticmethod
    def forward(ctx, x, alpha, base):
        kw = base.kw()
        x, alpha = codes(x), codes(alpha)
        ctx.base, ctx.x, ctx.alpha = base, x, alpha
        negative = K.mul(alpha, K.sub(exp_codes(x, base), ONE, **kw), **kw)
        return tensor(np.where(_positive(x, base), x, negative))

    @staticmethod
    def backward(ctx, g):
        kw, x = ctx.base.kw(), ctx.x
        slope = np.where(_positive(x, ctx.base), ONE,
                         K.mul(ctx.alpha, exp_codes(x, ctx.base), **kw))
        return tensor(K.mul(codes(g), slope, **kw)), None, None


class Selu(_Function):
    """gt(x, Z) ? mul(scale, x) : mul(scale, mul(alpha, sub(exp(x), c1)));
    gx = mul(g, gt(x, Z) ? mul(scale, c1) : mul(scale, mul(alpha, exp(x))))."""

    @staticmethod
    def forward(ctx, x, base):
        kw = base.kw()
        x = codes(x)
        scale, alpha = constant(SELU_SCALE, base), constant(SELU_ALPHA, base)
        ctx.base, ctx.x = base, x
        negative = K.mul(scale, K.mul(alpha, K.sub(exp_codes(x, base), ONE,
                                                   **kw), **kw), **kw)
        return tensor(np.where(_positive(x, base), K.mul(scale, x, **kw),
                               negative))

    @staticmethod
    def backward(ctx, g):
        kw, base, x = ctx.base.kw(), ctx.base, ctx.x
        scale, alpha = constant(SELU_SCALE, base), constant(SELU_ALPHA, base)
        slope = np.where(_positive(x, base), K.mul(scale, ONE, **kw),
                         K.mul(scale, K.mul(alpha, exp_codes(x, base), **kw),
                               **kw))
        return tensor(K.mul(codes(g), slope, **kw)), None


class Celu(_Function):
    """gt(x, Z) ? x : mul(alpha, sub(exp(div(x, alpha)), c1));
    gx = mul(g, gt(x, Z) ? c1 : exp(div(x, alpha)))."""

    @staticmethod
    def forward(ctx, x, alpha, base):
        kw = base.kw()
        x, alpha = codes(x), codes(alpha)
        ctx.base, ctx.x, ctx.alpha = base, x, alpha
        scaled = exp_codes(K.div(x, alpha, **kw), base)
        negative = K.mul(alpha, K.sub(scaled, ONE, **kw), **kw)
        return tensor(np.where(_positive(x, base), x, negative))

    @staticmethod
    def backward(ctx, g):
        kw, x = ctx.base.kw(), ctx.x
        slope = np.where(_positive(x, ctx.base), ONE,
                         exp_codes(K.div(x, ctx.alpha, **kw), ctx.base))
        return tensor(K.mul(codes(g), slope, **kw)), None, None


def _reduce_as_reference(grad, shape, kw):
    """A weight gradient summed to the weight's (broadcast) shape as the
    reference does: sequential sums over dim 0 while it has more dims, then
    a keepdim sum over each dim where the weight has size 1."""
    while grad.ndim > len(shape):
        grad = K.sum(grad, axis=0, **kw)
    for dim, size in enumerate(shape):
        if size == 1:
            grad = np.expand_dims(K.sum(grad, axis=dim, **kw), dim)
    return grad


class Prelu(_Function):
    """gt(x, Z) ? x : mul(x, weight), `weight` already shaped to broadcast;
    gx = mul(g, le(x, Z) ? weight : c1), gw = mul(g, le(x, Z) ? x : Z)
    reduced to the weight's shape. (fix) the reference adds c1 to gw."""

    @staticmethod
    def forward(ctx, x, weight, base):
        kw = base.kw()
        x, w = codes(x), codes(weight)
        ctx.base, ctx.x, ctx.w = base, x, w
        return tensor(np.where(_positive(x, base), x, K.mul(x, w, **kw)))

    @staticmethod
    def backward(ctx, g):
        kw, x, w = ctx.base.kw(), ctx.x, ctx.w
        g = codes(g)
        negative = _compare("le", x, ZERO, ctx.base)
        gx = gw = None
        if ctx.needs_input_grad[0]:
            gx = tensor(K.mul(g, np.where(negative, w, ONE), **kw))
        if ctx.needs_input_grad[1]:
            gw = K.mul(g, np.where(negative, x, ZERO), **kw)
            gw = tensor(_reduce_as_reference(gw, w.shape, kw))
        return gx, gw, None


class Rrelu(_Function):
    """gt(x, Z) ? x : mul(x, slope) (slope drawn, or the mean of the bounds);
    gx = mul(g, lt(x, Z) ? slope : c1)."""

    @staticmethod
    def forward(ctx, x, slope, base):
        kw = base.kw()
        x, slope = codes(x), codes(slope)
        ctx.base, ctx.x, ctx.slope = base, x, slope
        return tensor(np.where(_positive(x, base), x, K.mul(x, slope, **kw)))

    @staticmethod
    def backward(ctx, g):
        negative = _compare("lt", ctx.x, ZERO, ctx.base)
        slope = np.where(negative, ctx.slope, ONE)
        return tensor(K.mul(codes(g), slope, **ctx.base.kw())), None, None


class Glu(_Function):
    """mul(a, sigmoid(b)) for the halves a, b of x along `dim`;
    ga = mul(g, s), gb = mul(g, mul(a, mul(s, sub(c1, s)))), s = sigmoid(b)."""

    @staticmethod
    def forward(ctx, x, dim, base):
        a, b = np.split(codes(x), 2, axis=dim)
        ctx.base, ctx.dim, ctx.a = base, dim, a
        ctx.gate = sigmoid_codes(b, base)
        return tensor(K.mul(a, ctx.gate, **base.kw()))

    @staticmethod
    def backward(ctx, g):
        kw, s = ctx.base.kw(), ctx.gate
        g = codes(g)
        ga = K.mul(g, s, **kw)
        slope = K.mul(ctx.a, K.mul(s, K.sub(ONE, s, **kw), **kw), **kw)
        gb = K.mul(g, slope, **kw)
        return tensor(np.concatenate([ga, gb], axis=ctx.dim)), None, None


def _pass_where_nonzero(g, out, base):
    """mul(g, eq(out, Z) ? Z : c1): the shrink functions' backward."""
    slope = np.where(_compare("eq", out, ZERO, base), ZERO, ONE)
    return K.mul(g, slope, **base.kw())


class Hardshrink(_Function):
    """le(abs(x), lambd) ? Z : x; gx = mul(g, eq(out, Z) ? Z : c1)."""

    @staticmethod
    def forward(ctx, x, lambd, base):
        x = codes(x)
        inside = _compare("le", K.abs(x, **base.kw()), codes(lambd), base)
        ctx.base = base
        ctx.out = np.where(inside, ZERO, x)
        return tensor(ctx.out)

    @staticmethod
    def backward(ctx, g):
        return tensor(_pass_where_nonzero(codes(g), ctx.out, ctx.base)), \
            None, None


class Softshrink(_Function):
    """gt(abs(x), lambd) ? (gt(x, Z) ? sub(x, lambd) : add(x, lambd)) : Z;
    gx = mul(g, eq(out, Z) ? Z : c1)."""

    @staticmethod
    def forward(ctx, x, lambd, base):
        kw = base.kw()
        x, lambd = codes(x), codes(lambd)
        shrunk = np.where(_positive(x, base), K.sub(x, lambd, **kw),
                          K.add(x, lambd, **kw))
        outside = _compare("gt", K.abs(x, **kw), lambd, base)
        ctx.base = base
        ctx.out = np.where(outside, shrunk, ZERO)
        return tensor(ctx.out)

    @staticmethod
    def backward(ctx, g):
        return tensor(_pass_where_nonzero(codes(g), ctx.out, ctx.base)), \
            None, None


class Tanhshrink(_Function):
    """sub(x, tanh(x)); gx = mul(g, mul(tanh(x), tanh(x)))."""

    @staticmethod
    def forward(ctx, x, base):
        x = codes(x)
        ctx.base = base
        ctx.tanh = tanh_codes(x, base)
        return tensor(K.sub(x, ctx.tanh, **base.kw()))

    @staticmethod
    def backward(ctx, g):
        kw = ctx.base.kw()
        slope = K.mul(ctx.tanh, ctx.tanh, **kw)
        return tensor(K.mul(codes(g), slope, **kw)), None


class Softsign(_Function):
    """div(x, add(abs(x), c1)); gx = mul(g, mul(r, r)), r = div(c1, add(abs(x),
    c1)). The reference takes r = div(out, x): the same codes, except at
    x = 0, where it gives Z. (fix) r = c1 there."""

    @staticmethod
    def forward(ctx, x, base):
        kw = base.kw()
        x = codes(x)
        denominator = K.add(K.abs(x, **kw), ONE, **kw)
        ctx.base, ctx.denominator = base, denominator
        return tensor(K.div(x, denominator, **kw))

    @staticmethod
    def backward(ctx, g):
        kw = ctx.base.kw()
        r = K.div(np.zeros_like(ctx.denominator), ctx.denominator, **kw)
        return tensor(K.mul(codes(g), K.mul(r, r, **kw), **kw)), None


class Softplus(_Function):
    """gt(mul(x, beta), threshold) ? x : div(log(add(exp(mul(x, beta)), c1)),
    beta); gx = gt(...) ? g : mul(g, sigmoid(mul(x, beta))). The reference
    ignores beta outside the threshold test and returns c1, not g, above
    it. (fix) both; for beta = 1 the codes are the reference's (mul and div
    by c1 are exact), below the threshold."""

    @staticmethod
    def forward(ctx, x, beta, threshold, base):
        kw = base.kw()
        x, beta = codes(x), codes(beta)
        scaled = K.mul(x, beta, **kw)
        ctx.base, ctx.scaled = base, scaled
        ctx.linear = _compare("gt", scaled, codes(threshold), base)
        # Above the threshold exp may pass the largest double: its log is
        # not taken there (the result is x).
        grown = np.where(ctx.linear, ONE, K.add(exp_codes(scaled, base), ONE,
                                                **kw))
        soft = log_codes(grown, base)
        return tensor(np.where(ctx.linear, x, K.div(soft, beta, **kw)))

    @staticmethod
    def backward(ctx, g):
        kw = ctx.base.kw()
        g = codes(g)
        soft = K.mul(g, sigmoid_codes(ctx.scaled, ctx.base), **kw)
        return tensor(np.where(ctx.linear, g, soft)), None, None, None


class Hardsigmoid(_Function):
    """lt(x, -3) ? Z : gt(x, 3) ? c1 : div(add(x, 3), 6);
    gx = mul(g, gt(abs(x), 3) ? Z : enc(1/6))."""

    @staticmethod
    def forward(ctx, x, base):
        kw = base.kw()
        x = codes(x)
        three = constant(3.0, base)
        ctx.base, ctx.x = base, x
        ramp = K.div(K.add(x, three, **kw), constant(6.0, base), **kw)
        return tensor(np.where(
            _compare("lt", x, constant(-3.0, base), base), ZERO,
            np.where(_compare("gt", x, three, base), ONE, ramp)))

    @staticmethod
    def backward(ctx, g):
        kw, base = ctx.base.kw(), ctx.base
        outside = _compare("gt", K.abs(ctx.x, **kw), constant(3.0, base), base)
        slope = np.where(outside, ZERO, constant(1 / 6, base))
        return tensor(K.mul(codes(g), slope, **kw)), None


class Silu(_Function):
    """mul(x, sigmoid(x)); gx = mul(g, add(s, mul(x, mul(s, sub(c1, s)))))."""

    @staticmethod
    def forward(ctx, x, base):
        x = codes(x)
        ctx.base, ctx.x = base, x
        ctx.s = sigmoid_codes(x, base)
        return tensor(K.mul(x, ctx.s, **base.kw()))

    @staticmethod
    def backward(ctx, g):
        kw, s = ctx.base.kw(), ctx.s
        slope = K.mul(ctx.x, K.mul(s, K.sub(ONE, s, **kw), **kw), **kw)
        slope = K.add(s, slope, **kw)
        return tensor(K.mul(codes(g), slope, **kw)), None


# -- torch registrations ------------------------------------------------------

def _unary(function, name, x):
    base = x.lns_base
    return _result(function.apply(x.lns, base), base, name, (x.lns,))


def _with_parameters(function, name, x, *parameters, **attrs):
    """`function` of LNS input x and parameters (numbers or LNS tensors)
    encoded in x's base."""
    base = _first_base(x, *parameters)
    operands = [_align(base, p) for p in (x,) + parameters]
    return _result(function.apply(*operands, base), base, name, operands,
                   **attrs)


def _in_place(x, result):
    """The reference's in-place variants: x takes the result's codes."""
    x._lns = result.lns
    return x


def _maybe_in_place(x, result, inplace):
    return _in_place(x, result) if inplace else result


@implements(F.leaky_relu)
def leaky_relu(x, negative_slope=0.01, inplace=False):
    result = _with_parameters(LeakyRelu, "leaky_relu", x, negative_slope)
    return _maybe_in_place(x, result, inplace)


@implements(F.leaky_relu_)
def leaky_relu_(x, negative_slope=0.01):
    return leaky_relu(x, negative_slope, inplace=True)


@implements(F.threshold)
def _threshold(x, threshold, value, inplace=False):
    result = _with_parameters(Threshold, "threshold", x, threshold, value)
    return _maybe_in_place(x, result, inplace)


# Defined as _threshold: its argument `threshold` hides the name (as in
# torch.nn.functional).
threshold = _threshold


@implements(F.threshold_)
def threshold_(x, threshold, value):
    return _threshold(x, threshold, value, inplace=True)


def _no_out(out):
    if out is not None:
        raise TypeError("LNS operations take no out= tensor")


@implements(torch.tanh, F.tanh)
def tanh(x, *, out=None):
    _no_out(out)
    return _unary(Tanh, "tanh", x)


@implements(torch.sigmoid, F.sigmoid)
def sigmoid(x, *, out=None):
    _no_out(out)
    return _unary(Sigmoid, "sigmoid", x)


@implements(F.logsigmoid)
def logsigmoid(x):
    return _unary(LogSigmoid, "logsigmoid", x)


def _softmax_dim(dim, ndim, name):
    """torch's dim rule: an explicit dim in range, or (deprecated, with its
    warning) 0 for 0-, 1- and 3-dim input, else 1."""
    if dim is None:
        warnings.warn(f"Implicit dimension choice for {name} has been "
                      f"deprecated. Change the call to include dim=X as an "
                      f"argument.", stacklevel=4)
        return 0 if ndim in (0, 1, 3) else 1
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"{name} takes an integer dim, got {dim!r}")
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise IndexError(f"Dimension out of range (expected to be in range "
                         f"of [{-max(ndim, 1)}, {max(ndim, 1) - 1}], but got "
                         f"{dim})")
    return dim % max(ndim, 1)


def _normalized(function, name, x, dim, dtype):
    if dtype is not None:
        raise TypeError(f"an LNS {name} keeps the codes' base; dtype= is not "
                        f"taken")
    dim = _softmax_dim(dim, x.ndim, name)
    base = x.lns_base
    return _result(function.apply(x.lns, dim, base), base, name, (x.lns,),
                   dim=dim)


@implements(F.softmin)
def softmin(x, dim=None, _stacklevel=3, dtype=None):
    return _normalized(Softmin, "softmin", x, dim, dtype)


@implements(F.softmax)
def softmax(x, dim=None, _stacklevel=3, dtype=None):
    return _normalized(Softmax, "softmax", x, dim, dtype)


@implements(F.log_softmax)
def log_softmax(x, dim=None, _stacklevel=3, dtype=None):
    return _normalized(LogSoftmax, "log_softmax", x, dim, dtype)


@implements(F.hardtanh)
def hardtanh(x, min_val=-1.0, max_val=1.0, inplace=False):
    result = _with_parameters(Hardtanh, "hardtanh", x, min_val, max_val)
    return _maybe_in_place(x, result, inplace)


@implements(F.hardtanh_)
def hardtanh_(x, min_val=-1.0, max_val=1.0):
    return hardtanh(x, min_val, max_val, inplace=True)


@implements(F.hardswish)
def hardswish(x, inplace=False):
    return _maybe_in_place(x, _unary(Hardswish, "hardswish", x), inplace)


@implements(F.relu6)
def relu6(x, inplace=False):
    return _maybe_in_place(x, _unary(Relu6, "relu6", x), inplace)


@implements(F.relu_)
def relu_(x):
    """In-place relu: x takes relu's codes."""
    return _in_place(x, torch.relu(x))


@implements(F.elu)
def elu(x, alpha=1.0, inplace=False):
    return _maybe_in_place(x, _with_parameters(Elu, "elu", x, alpha), inplace)


@implements(F.elu_)
def elu_(x, alpha=1.0):
    return elu(x, alpha, inplace=True)


@implements(F.selu)
def selu(x, inplace=False):
    return _maybe_in_place(x, _unary(Selu, "selu", x), inplace)


@implements(F.celu)
def celu(x, alpha=1.0, inplace=False):
    return _maybe_in_place(x, _with_parameters(Celu, "celu", x, alpha),
                           inplace)


@implements(F.prelu)
def prelu(x, weight, inplace=False):
    """max(0, x) + weight · min(0, x): `weight` holds one slope, or one per
    channel (dim 1 of x), as in torch."""
    base = _first_base(x, weight)
    x_codes, w_codes = _align(base, x), _align(base, weight)
    shaped = _broadcast_weight(w_codes, x_codes.shape)
    result = _result(Prelu.apply(x_codes, shaped, base), base, "prelu",
                     (x_codes, w_codes))
    return _maybe_in_place(x, result, inplace) if isinstance(x, LNSTensor) \
        else result


def _broadcast_weight(weight, shape):
    """torch's prelu weight rule: one slope for every element (kept as
    given), or one per channel (dim 1 of x), viewed as (C, 1, ..., 1)."""
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D "
                           f"tensor, but got: ndim = {weight.dim()}")
    count = weight.numel()
    if count == 1:
        return weight
    channels = shape[1] if len(shape) >= 2 else 1
    if count != channels:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel "
                           f"size. Found parameter numbers = {count} and "
                           f"channel size = {channels}.")
    return weight.reshape((count,) + (1,) * (len(shape) - 2))


def _rrelu_slope(x, lower, upper, training):
    """The negative slope: per element, uniform in [lower, upper) from
    torch's generator (add(mul(rand, upper - lower), lower) in LNS, as the
    reference), in training; enc((lower + upper) / 2) otherwise."""
    if lower > upper:
        raise RuntimeError(f"Lower bound should be less than or equal to the "
                           f"upper bound, got lower={lower}, upper={upper}")
    base = x.lns_base
    if not training:
        return constant((lower + upper) / 2, base)
    draws = rand(*x.shape, **base.kw())
    kw = base.kw()
    spread = K.mul(codes(draws.lns), constant(upper - lower, base), **kw)
    return K.add(spread, constant(lower, base), **kw)


@implements(F.rrelu)
def rrelu(x, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    slope = tensor(_rrelu_slope(x, lower, upper, training))
    base = x.lns_base
    result = _result(Rrelu.apply(x.lns, slope, base), base, "rrelu",
                     (x.lns,), training=training)
    return _maybe_in_place(x, result, inplace)


@implements(F.rrelu_)
def rrelu_(x, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return rrelu(x, lower, upper, training, inplace=True)


@implements(F.glu)
def glu(x, dim=-1):
    if x.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving "
                           "size must be even")
    if not -x.ndim <= dim < x.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range "
                         f"of [{-x.ndim}, {x.ndim - 1}], but got {dim})")
    dim %= x.ndim
    if x.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension "
                           f"{dim} is size {x.shape[dim]}")
    base = x.lns_base
    return _result(Glu.apply(x.lns, dim, base), base, "glu", (x.lns,),
                   dim=dim)


@implements(F.hardshrink)
def hardshrink(x, lambd=0.5):
    return _with_parameters(Hardshrink, "hardshrink", x, lambd)


@implements(F.tanhshrink)
def tanhshrink(x):
    return _unary(Tanhshrink, "tanhshrink", x)


@implements(F.softsign)
def softsign(x):
    return _unary(Softsign, "softsign", x)


@implements(F.softplus)
def softplus(x, beta=1.0, threshold=20.0):
    return _with_parameters(Softplus, "softplus", x, beta, threshold)


@implements(F.softshrink)
def softshrink(x, lambd=0.5):
    return _with_parameters(Softshrink, "softshrink", x, lambd)


@implements(F.hardsigmoid)
def hardsigmoid(x, inplace=False):
    return _maybe_in_place(x, _unary(Hardsigmoid, "hardsigmoid", x), inplace)


@implements(F.silu)
def silu(x, inplace=False):
    return _maybe_in_place(x, _unary(Silu, "silu", x), inplace)
