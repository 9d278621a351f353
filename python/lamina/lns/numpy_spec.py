"""The LNS spec written plainly in NumPy: an independent test oracle and the
speed baseline of the LNS benchmarks (about the xlnstorch reference's
speed), not Lamina's implementation.

Codes are int64 arrays, `p = 2·e + s`; zero is `-(2**53) | 1`.
"""

import numpy as np

ZERO = np.int64(-(2**53) | 1)


def base_of(f):
    return 2.0 ** (2.0 ** -f)


def is_zero(p):
    return (p | 1) == ZERO


def encode(x, f):
    """NaN and ±inf have no code: ValueError, as lamina.lns.encode."""
    x = np.asarray(x, dtype=np.float64)
    if not np.isfinite(x).all():
        raise ValueError("only finite numbers have LNS codes")
    b = base_of(f)
    with np.errstate(divide="ignore"):
        e = np.rint(np.log(np.abs(x)) / np.log(b))
    e = np.where(x == 0, 0, e).astype(np.int64)
    return np.where(x == 0, ZERO, (e << 1) | (x < 0)).astype(np.int64)


def decode(p, f):
    p = np.asarray(p, dtype=np.int64)
    value = np.where(p & 1, -1.0, 1.0) * np.power(base_of(f), (p >> 1).astype(np.float64))
    return np.where(is_zero(p), 0.0, value)


def mul(x, y):
    product = ((x + y - (y & 1)) ^ (y & 1)).astype(np.int64)
    return np.where(is_zero(x) | is_zero(y), ZERO, product)


def add(x, y, f):
    """Gaussian-log addition, ideal mode, element-wise."""
    x, y = np.broadcast_arrays(np.asarray(x, np.int64), np.asarray(y, np.int64))
    b = base_of(f)
    z = -np.abs((x >> 1) - (y >> 1))
    s = (x ^ y) & 1
    with np.errstate(divide="ignore"):
        sbdb = 2 * np.rint(np.log(np.abs(1.0 - 2.0 * s + np.power(b, z.astype(np.float64))))
                           / np.log(b))
    sbdb = np.where(np.isfinite(sbdb), sbdb, 0).astype(np.int64)
    result = np.maximum(x, y) + sbdb
    result = np.where((x ^ 1) == y, ZERO, result)
    result = np.where(is_zero(y), x, result)
    return np.where(is_zero(x), y, result)


def linear(x, w, b=None, f=23):
    """out[..., n] = sequential sum over k of mul(x[..., k], w[n, k]), then
    the bias added once; vectorized over the outputs only."""
    x, w = np.asarray(x, np.int64), np.asarray(w, np.int64)
    acc = np.full(x.shape[:-1] + (w.shape[0],), ZERO, dtype=np.int64)
    for k in range(x.shape[-1]):
        acc = add(acc, mul(x[..., k, None], w[:, k]), f)
    return acc if b is None else add(acc, np.asarray(b, np.int64), f)


def linear_pairwise(x, w, f=23):
    """The same dot products summed as a pairwise tree: NOT the reference
    order; tests use it to show that the order changes the codes."""
    terms = mul(np.asarray(x, np.int64)[..., None, :], np.asarray(w, np.int64))
    while terms.shape[-1] > 1:
        if terms.shape[-1] % 2:
            terms = np.concatenate(
                [terms, np.full(terms.shape[:-1] + (1,), ZERO)], axis=-1)
        terms = add(terms[..., 0::2], terms[..., 1::2], f)
    return terms[..., 0]


# -- training (the LNS training spec), for the oracle and the baseline -------


def neg(x):
    return np.asarray(x, np.int64) ^ 1


def sub(x, y, f):
    return add(x, neg(y), f)


def div(x, y):
    x, y = np.broadcast_arrays(np.asarray(x, np.int64), np.asarray(y, np.int64))
    quotient = ((x - y + (y & 1)) ^ (y & 1)).astype(np.int64)
    return np.where(is_zero(x), ZERO, quotient)


def matmul(a, b, f):
    """a[M, K] · b[K, N], sequential over K."""
    return linear(a, np.ascontiguousarray(np.asarray(b).T), None, f)


def sum_rows(x, f):
    """The sequential sum over axis 0 of x[R, N]."""
    x = np.asarray(x, np.int64)
    acc = x[0]
    for r in range(1, x.shape[0]):
        acc = add(acc, x[r], f)
    return acc


def sum_all(x, f):
    flat = np.asarray(x, np.int64).reshape(-1)
    acc = flat[0]
    for v in flat[1:]:
        acc = add(acc, v, f)
    return acc


def relu(x):
    x = np.asarray(x, np.int64)
    return np.where(x & 1, ZERO, x)


# -- optimizers (spec §4), with the spec's fixes: zero stays zero --------------

DEFAULT_F = 23


def change_base(code, from_f, to_f):
    """A code of base 2^(2^-from_f) in base 2^(2^-to_f): the exponent
    rounded half-even in double, the sign kept, zero kept (fix)."""
    code = np.asarray(code, np.int64)
    if from_f == to_f:
        return code
    e = np.rint((code >> 1).astype(np.float64) * np.log(base_of(from_f))
                / np.log(base_of(to_f))).astype(np.int64)
    return np.where(is_zero(code), ZERO, (e << 1) | (code & 1))


def hyper(value, f):
    """A Python-float hyper-parameter: encoded in the default base, then
    converted to the group's base."""
    return change_base(encode(value, DEFAULT_F), DEFAULT_F, f)


def powi(c, t):
    magnitude = ((np.asarray(c, np.int64) & -2) * t) & -2
    code = magnitude | (c & 1) if t % 2 else magnitude
    return np.where(is_zero(c), ZERO, code)


def sqrt(c):
    c = np.asarray(c, np.int64)
    return np.where(is_zero(c), ZERO, (c >> 1) & -2)


def maximum(a, b):
    """gt orders by sign (positive above negative), then by exponent
    (reversed for negatives); zero codes take part with their bits."""
    a, b = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(b, np.int64))
    sa, sb, ea, eb = a & 1, b & 1, a >> 1, b >> 1
    greater = np.where(sa != sb, sa == 0, np.where(sa == 0, ea > eb, ea < eb))
    return np.where(greater, a, b)


def sgd_update(p, g, state, hp, f):
    """LNSSGD on one parameter: `hp` holds the codes lr, momentum,
    dampening, weight_decay and the flags nesterov, maximize; `state` the
    momentum buffer. Returns the new parameter."""
    if hp["maximize"]:
        g = neg(g)
    if hp["weight_decay"] != ZERO:
        g = add(g, mul(p, hp["weight_decay"]), f)
    if hp["momentum"] != ZERO:
        if "momentum_buffer" not in state:
            buf = g
        else:
            buf = add(mul(state["momentum_buffer"], hp["momentum"]),
                      mul(g, sub(0, hp["dampening"], f)), f)
        state["momentum_buffer"] = buf
        g = add(g, mul(buf, hp["momentum"]), f) if hp["nesterov"] else buf
    return sub(p, mul(g, hp["lr"]), f)


def adam_update(p, g, state, hp, f):
    """LNSAdam on one parameter: `hp` holds the codes lr, beta1, beta2,
    eps, weight_decay and the flags amsgrad, maximize; `state` step,
    exp_avg, exp_avg_sq (and max_exp_avg_sq). Returns the new parameter."""
    if hp["maximize"]:
        g = neg(g)
    if hp["weight_decay"] != ZERO:
        g = add(g, mul(p, hp["weight_decay"]), f)
    t = state.get("step", 0) + 1
    zeros = np.full(np.shape(p), ZERO, np.int64)
    m = add(mul(state.get("exp_avg", zeros), hp["beta1"]),
            mul(g, sub(0, hp["beta1"], f)), f)
    v = add(mul(state.get("exp_avg_sq", zeros), hp["beta2"]),
            mul(mul(g, g), sub(0, hp["beta2"], f)), f)
    bc1 = sub(0, powi(hp["beta1"], t), f)
    bc2 = sub(0, powi(hp["beta2"], t), f)
    state.update(step=t, exp_avg=m, exp_avg_sq=v)
    if hp["amsgrad"]:
        v = maximum(state.get("max_exp_avg_sq", zeros), v)
        state["max_exp_avg_sq"] = v
    step = div(div(m, bc1), add(sqrt(div(v, bc2)), hp["eps"], f))
    return sub(p, mul(hp["lr"], step), f)


def mlp_step(x, target, params, update, states, hp, f):
    """One step of LNSLinear → relu → LNSLinear → mse_loss(mean) and an
    optimizer, as the spec computes it: `update` is sgd_update or
    adam_update, `states` one dict per parameter (updated in place), `hp`
    its hyper-parameters. Returns (loss, new params, grads)."""
    loss, grads = _mlp_gradients(x, target, params, f)
    new = [update(p, g, state, hp, f)
           for p, g, state in zip(params, grads, states)]
    return loss, new, grads


def mlp_sgd_step(x, target, params, lr, f):
    """One step of the MLP and plain SGD (the benchmarks' baseline):
    returns (loss, new params, grads); `lr` is the learning-rate code."""
    loss, grads = _mlp_gradients(x, target, params, f)
    new = [sub(p, mul(g, lr), f) for p, g in zip(params, grads)]
    return loss, new, grads


def _mlp_gradients(x, target, params, f):
    """(loss, [gw1, gb1, gw2, gb2]) of the MLP on `params` = [w1, b1, w2,
    b2] codes."""
    w1, b1, w2, b2 = params
    h_pre = linear(x, w1, b1, f)
    h = relu(h_pre)
    y = linear(h, w2, b2, f)
    e = sub(y, target, f)
    n = encode(float(e.size), f)
    loss = div(sum_all(mul(e, e), f), n)
    q = div(mul(e, encode(2.0, f)), n)                 # grad of y
    grads_2 = _linear_backward(h, w2, q, f)
    gh = grads_2[0]
    g_pre = np.where(is_zero(h) | is_zero(gh), ZERO, gh)  # relu_grad
    grads_1 = _linear_backward(x, w1, g_pre, f)
    return loss, [grads_1[1], grads_1[2], grads_2[1], grads_2[2]]


def _linear_backward(x, w, g, f):
    """gx = g·W over n, gW = gᵀ·x over rows, gb = the rows of g summed."""
    gx = matmul(g, w, f)
    gw = matmul(np.ascontiguousarray(g.T), x, f)
    return gx, gw, sum_rows(g, f)


# -- small networks: log_softmax, nll, convolutions (xlnstorch's MNIST) -----

REFERENCE_E = float(np.float32(np.e))   # torch.exp of a float32 one


def exp(x, f):
    """e^x the reference's way: e's code times the value, truncated, even."""
    e_code = np.float64(encode(REFERENCE_E, f) & -2)
    return (np.trunc(e_code * decode(x, f)).astype(np.int64) & -2)


def log(x, f):
    with np.errstate(divide="ignore", invalid="ignore"):
        return encode(np.log(decode(x, f)), f)


def _sum_columns(x, f):
    """The sequential sum over axis 1 of x[R, C], kept as [R, 1]."""
    return sum_rows(np.ascontiguousarray(x.T), f)[:, None]


def log_softmax(x, f):
    """Over the classes (axis 1) of x[B, C]."""
    return sub(x, log(_sum_columns(exp(x, f), f), f), f)


def log_softmax_backward(out, g, f):
    return sub(g, mul(exp(out, f), _sum_columns(g, f)), f)


def nll_mean(x, target, f):
    """(loss, gradient of x) of nll_loss(mean) with every target kept, for
    an upstream gradient of c1."""
    rows = np.arange(x.shape[0])
    count = encode(float(x.shape[0]), f)
    loss = div(sum_all(neg(x[rows, target]), f), count)
    grad = np.full(x.shape, ZERO, np.int64)
    grad[rows, target] = div(np.int64(1), count)
    return loss, grad


def relu_grad(g, out):
    return np.where(is_zero(out) | is_zero(g), ZERO, g)


def _sgd_steps(params, grads, states, hp, f):
    return [sgd_update(p, g, state, hp, f)
            for p, g, state in zip(params, grads, states)]


def conv2d_rows(x, kh, kw):
    """x[N, C, H, W] → [N·OH·OW, C·KH·KW] (stride 1, no padding): one row
    per output position, its terms in (c, kh, kw) order."""
    n, c, h, w = x.shape
    oh, ow = h - kh + 1, w - kw + 1
    rows = np.empty((n, oh, ow, c, kh, kw), np.int64)
    for i in range(kh):
        for j in range(kw):
            rows[..., i, j] = np.moveaxis(x[:, :, i:i + oh, j:j + ow], 1, 3)
    return rows.reshape(n * oh * ow, c * kh * kw), (oh, ow)


def mnist_mlp_step(x, target, params, states, hp, f):
    """xlnstorch's MNIST example: LNSLinear(784, 100) → relu →
    LNSLinear(100, 10) → relu → log_softmax → nll_loss, and sgd_update
    with `hp` (`states` one dict per parameter, updated in place).
    Returns (loss, new params)."""
    w1, b1, w2, b2 = params
    h = relu(linear(x, w1, b1, f))
    y = relu(linear(h, w2, b2, f))
    out = log_softmax(y, f)
    loss, g_out = nll_mean(out, target, f)
    g_y = relu_grad(log_softmax_backward(out, g_out, f), y)
    gh = relu_grad(matmul(g_y, w2, f), h)
    grads = [matmul(np.ascontiguousarray(gh.T), x, f), sum_rows(gh, f),
             matmul(np.ascontiguousarray(g_y.T), h, f), sum_rows(g_y, f)]
    return loss, _sgd_steps(params, grads, states, hp, f)


def mnist_cnn_step(x, target, params, states, hp, f):
    """LNSConv2d(1, C, K) → relu → flatten → LNSLinear → log_softmax →
    nll_loss, and sgd_update as mnist_mlp_step. Returns (loss, new
    params)."""
    wc, bc, wf, bf = params
    n = x.shape[0]
    rows, (oh, ow) = conv2d_rows(x, wc.shape[2], wc.shape[3])
    conv = linear(rows, wc.reshape(wc.shape[0], -1), bc, f)   # [N·OH·OW, C]
    h_rows = relu(conv)
    h = np.moveaxis(h_rows.reshape(n, oh, ow, -1), 3, 1).reshape(n, -1)
    out = log_softmax(linear(h, wf, bf, f), f)
    loss, g_out = nll_mean(out, target, f)
    g_y = log_softmax_backward(out, g_out, f)
    gh = matmul(g_y, wf, f)
    g_conv = relu_grad(np.moveaxis(gh.reshape(n, -1, oh, ow), 1, 3)
                       .reshape(n * oh * ow, -1), h_rows)
    # Each filter over (n, oh, ow); each bias over the same positions.
    g_wc = matmul(np.ascontiguousarray(g_conv.T), rows, f).reshape(wc.shape)
    grads = [g_wc, sum_rows(g_conv, f),
             matmul(np.ascontiguousarray(g_y.T), h, f), sum_rows(g_y, f)]
    return loss, _sgd_steps(params, grads, states, hp, f)
