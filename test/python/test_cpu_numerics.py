"""Compiled Slapo layers against eager PyTorch on the same weights."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lamina import philox
from lamina.tools import run_ir
from layer_ir import linear_layer


def randn(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def eager_linear(x, w, b):
    y = torch.from_numpy(x) @ torch.from_numpy(w).T
    return y if b is None else y + torch.from_numpy(b)


SHAPES = [
    ((8, 64), 32),       # plain
    ((1, 64), 48),       # M = 1
    ((5, 17), 7),        # K not a multiple of any tile, odd N
    ((4, 32), 1),        # N = 1
    ((2, 3, 24), 40),    # 3-D input
]


@pytest.mark.parametrize("x_shape,n", SHAPES)
@pytest.mark.parametrize("bias", [True, False])
def test_linear(tmp_path, x_shape, n, bias):
    rng = np.random.default_rng(1)
    x, w = randn(rng, *x_shape), randn(rng, n, x_shape[-1])
    b = randn(rng, n) if bias else None
    inputs = [x, w] + ([b] if bias else [])
    (y,) = run_ir(linear_layer("linear", x_shape, n, bias=bias), inputs,
                  tmp_path)
    torch.testing.assert_close(torch.from_numpy(y), eager_linear(x, w, b))


def assert_product_close(result, a, b, bias=None):
    """`result` is a·bᵀ (+ bias) up to the rounding of a long fp32
    reduction: within Higham and Mary's probabilistic bound, sqrt(K)·u·|a|·|b|ᵀ
    (K in the thousands: eager PyTorch's own order is off from the float64
    product by more than assert_close's fp32 tolerance)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    exact = a @ b.T + (0 if bias is None else bias)
    bound = np.sqrt(a.shape[1]) * 2.0**-24 * (np.abs(a) @ np.abs(b).T)
    excess = np.abs(result - exact) - bound
    assert excess.max() <= 0, excess.max()


def assert_gelu_layer_close(y, x, w, b):
    """`y` is GELU_tanh(x·wᵀ + b) within the product's rounding bound (see
    assert_product_close) carried through GELU (|GELU'| < 1.13), with
    float32 rounding of the epilogue on top."""
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    exact = x64 @ w64.T + b
    bound = 1.13 * np.sqrt(x.shape[1]) * 2.0**-24 * (np.abs(x64) @ np.abs(w64).T)
    ref = F.gelu(torch.from_numpy(exact), approximate="tanh").numpy()
    assert (np.abs(y - ref) - bound - 1e-6 * np.abs(ref)).max() <= 0


def test_rows_in_slabs(tmp_path):
    """x of 16 MiB (over the 4 MiB that one pass of the cache tiles streams)
    runs in slabs of rows: the same product."""
    rng = np.random.default_rng(4)
    x, w, b = randn(rng, 1024, 4096), randn(rng, 64, 4096), randn(rng, 64)
    (y,) = run_ir(linear_layer("linear", (1024, 4096), 64), [x, w, b],
                  tmp_path, pipeline="lamina-cpu-pipeline{vector-bits=512}")
    assert_product_close(y, x, w, b)


@pytest.mark.parametrize("m", [16, 64])
@pytest.mark.parametrize("epilogue", ["none", "gelu", "dropout"])
@pytest.mark.parametrize("pipeline", [
    "lamina-cpu-pipeline{vector-bits=512}",
    "lamina-cpu-pipeline{vector-bits=256}",
])
def test_register_tiles_share_chunks_of_k(tmp_path, m, epilogue, pipeline):
    """Few rows and a deep K: the register tiles of rows share each group
    of blocks' weight panel in chunks of k, the accumulators written back
    between chunks and the epilogue applied after the last: the same
    layer."""
    rng = np.random.default_rng(12)
    k, n, p, seed = 4096, 64, 0.25, 21
    x, w, b = randn(rng, m, k), randn(rng, n, k), randn(rng, n)
    if epilogue == "none":
        (y,) = run_ir(linear_layer("linear", x.shape, n), [x, w, b],
                      tmp_path, pipeline=pipeline)
        assert_product_close(y, x, w, b)
        return
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    exact = x64 @ w64.T + b
    # The product's rounding bound, carried through GELU (|GELU'| < 1.13)
    # and dropout's scaling; float32 rounding of the epilogue on top.
    bound = 1.13 * np.sqrt(k) * 2.0**-24 * (np.abs(x64) @ np.abs(w64).T)
    if epilogue == "gelu":
        ir = linear_layer("linear_act", x.shape, n,
                          attrs="activation gelu_tanh")
        (y,) = run_ir(ir, [x, w, b], tmp_path, pipeline=pipeline)
        ref = F.gelu(torch.from_numpy(exact), approximate="tanh").numpy()
    else:
        ir = linear_layer("linear_dropout", x.shape, n,
                          attrs=f"dropout <p = {p}, training>", seed=True)
        (y,) = run_ir(ir, [x, w, b, ("i64", seed)], tmp_path,
                      pipeline=pipeline)
        keep = philox.keep_mask(y.shape, p, seed)
        assert np.array_equal(y != 0, keep)
        scale = 1.0 / (1.0 - p)
        ref, bound = np.where(keep, exact * scale, 0.0), bound * scale
    assert (np.abs(y - ref) - bound - 1e-6 * np.abs(ref)).max() <= 0


@pytest.mark.parametrize("op", ["linear_separate_bias", "linear_sync"])
def test_separate_bias_and_sync(tmp_path, op):
    # A single-rank program: the sync function is the identity.
    rng = np.random.default_rng(2)
    x, w, b = randn(rng, 2, 6, 32), randn(rng, 24, 32), randn(rng, 24)
    attrs = "" if op == "linear_separate_bias" else ""
    ir = linear_layer(op, x.shape, 24, attrs=attrs)
    if op == "linear_sync":
        ir = ir.replace("%x, %w bias %b", "%x, %w sync <fwd_post, all_reduce> bias %b")
    (y,) = run_ir(ir, [x, w, b], tmp_path)
    torch.testing.assert_close(torch.from_numpy(y), eager_linear(x, w, b))


@pytest.mark.parametrize("kind,eager", [
    ("gelu_tanh", lambda y: F.gelu(y, approximate="tanh")),
    ("gelu_erf", lambda y: F.gelu(y)),
    ("relu", F.relu),
    ("silu", F.silu),
    ("sigmoid", torch.sigmoid),
])
@pytest.mark.parametrize("x_shape,n", SHAPES)
def test_linear_act(tmp_path, kind, eager, x_shape, n):
    rng = np.random.default_rng(3)
    x, w, b = randn(rng, *x_shape), randn(rng, n, x_shape[-1]), randn(rng, n)
    ir = linear_layer("linear_act", x_shape, n, attrs=f"activation {kind}")
    (y,) = run_ir(ir, [x, w, b], tmp_path)
    torch.testing.assert_close(torch.from_numpy(y), eager(eager_linear(x, w, b)))


@pytest.mark.parametrize("kind,eager", [("silu", F.silu),
                                        ("sigmoid", torch.sigmoid)])
def test_silu_and_sigmoid_epilogues_in_register_tiles(tmp_path, kind, eager):
    """The cache- and register-tiled matmul (256 rows) with the activation
    in its vectorized epilogue, on pre-activations from -100 to 100: exp(-x)
    overflows for the most negative ones, where both are 0 (no NaN)."""
    rng = np.random.default_rng(4)
    x, w = randn(rng, 256, 64), randn(rng, 128, 64)
    b = np.linspace(-100, 100, 128).astype(np.float32)
    ir = linear_layer("linear_act", (256, 64), 128, attrs=f"activation {kind}")
    (y,) = run_ir(ir, [x, w, b], tmp_path)
    want = eager(eager_linear(x, w, b))
    assert np.isfinite(y).all()
    torch.testing.assert_close(torch.from_numpy(y), want, rtol=1e-5,
                               atol=1e-5)


def test_fused_qkv(tmp_path):
    hidden, heads = 32, 4
    head_dim = hidden // heads
    rng = np.random.default_rng(4)
    x = randn(rng, 2, 5, hidden)
    w, b = randn(rng, 3 * hidden, hidden), randn(rng, 3 * hidden)
    ir = linear_layer("fused_qkv", x.shape, 3 * hidden,
                      attrs=f"num_heads {heads} world_size 1",
                      qkv_heads=(heads, head_dim))
    q, k, v = run_ir(ir, [x, w, b], tmp_path)
    # Slapo's FusedQKV: view [..., heads, head_dim, 3] and split the last dim.
    qkv = eager_linear(x, w, b).view(2, 5, heads, head_dim, 3)
    for got, t in zip((q, k, v), range(3)):
        torch.testing.assert_close(torch.from_numpy(got), qkv[..., t])
    # Equivalently, stacking separate Wq, Wk, Wv on dim 1 gives the weight.
    wq, wk, wv = w.reshape(hidden, 3, hidden).transpose(1, 0, 2)
    torch.testing.assert_close(
        torch.from_numpy(q).reshape(2, 5, hidden),
        eager_linear(x, wq, b.reshape(hidden, 3)[:, 0]))


def to_bits(array, element):
    tensor = torch.from_numpy(array).to(getattr(torch, {"bf16": "bfloat16",
                                                      "f16": "float16"}[element]))
    rounded = tensor.to(torch.float64).numpy()
    if element == "bf16":
        return tensor.view(torch.int16).numpy().view(np.uint16), rounded
    return tensor.numpy(), rounded


def from_bits(array, element):
    if element == "bf16":
        return torch.from_numpy(array.view(np.int16)).view(
            torch.bfloat16).to(torch.float64).numpy()
    return array.astype(np.float64)


HALF_LAYERS = {
    "linear": ("", lambda z: z),
    "linear_separate_bias": ("", lambda z: z),
    "linear_act": ("activation gelu_tanh", lambda z: 0.5 * z * (
        1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z**3)))),
    "linear_dropout": ("dropout <p = 0.2>", lambda z: z),  # eval mode
}


@pytest.mark.parametrize("op", sorted(HALF_LAYERS))
@pytest.mark.parametrize("element", ["bf16", "f16"])
@pytest.mark.parametrize("result_element", ["same", "f32"])
@pytest.mark.parametrize("x_shape,n", [((8, 64), 32), ((2, 3, 17), 5)])
def test_half_precision(tmp_path, op, element, result_element, x_shape, n):
    """Rounded inputs, f32 accumulation, against float64 on the same inputs."""
    rng = np.random.default_rng(5)
    x, x64 = to_bits(randn(rng, *x_shape), element)
    w, w64 = to_bits(randn(rng, n, x_shape[-1]), element)
    b, b64 = to_bits(randn(rng, n), element)
    out = element if result_element == "same" else "f32"
    attrs, reference = HALF_LAYERS[op]
    ir = linear_layer(op, x_shape, n, element=element, result_element=out,
                      attrs=attrs)
    (y,) = run_ir(ir, [x, w, b], tmp_path)
    got = from_bits(y, out) if out != "f32" else y.astype(np.float64)
    ref = reference(x64 @ w64.T + b64)
    bound = (1e-2 if out != "f32" else 1e-4) * np.abs(ref).max()
    assert np.abs(got - ref).max() <= bound


DROPOUT_IR = linear_layer("linear_dropout", (64, 48), 96,
                          attrs="dropout <p = {p}, {mode}offset = 3>",
                          seed=True)


def run_dropout(tmp_path, x, w, b, p, seed, training=True):
    ir = DROPOUT_IR.replace("{p}", repr(float(p))).replace(
        "{mode}", "training, " if training else "")
    if not training or p == 0:
        ir = ir.replace(" seed %seed", "")
        return run_ir(ir.replace(", %seed: i64", "").replace(", i64)", ")"),
                      [x, w, b], tmp_path)[0]
    return run_ir(ir, [x, w, b, ("i64", seed)], tmp_path)[0]


def test_dropout_statistics_and_scaling(tmp_path):
    rng = np.random.default_rng(6)
    x, w, b = randn(rng, 64, 48), randn(rng, 96, 48), randn(rng, 96)
    p = 0.3
    y = run_dropout(tmp_path / "train", x, w, b, p, seed=1234)
    z = run_dropout(tmp_path / "eval", x, w, b, p, seed=1234, training=False)
    torch.testing.assert_close(torch.from_numpy(z), eager_linear(x, w, b))
    kept = y != 0
    rate = kept.mean()
    bound = 3.3 * np.sqrt(p * (1 - p) / y.size)  # 99.9% binomial bound
    assert abs(rate - (1 - p)) < bound
    # Survivors are exactly the un-dropped value times float32(1/(1-p)).
    scale = np.float32(1.0 / (1.0 - p))
    assert np.array_equal(y[kept], z[kept] * scale)
    # The mask is the reference Philox stream's, keyed by (seed, offset, index).
    assert np.array_equal(kept, philox.keep_mask(y.shape, p, 1234, offset=3))


def test_dropout_determinism_and_identities(tmp_path):
    rng = np.random.default_rng(7)
    x, w, b = randn(rng, 64, 48), randn(rng, 96, 48), randn(rng, 96)
    first = run_dropout(tmp_path / "a", x, w, b, 0.5, seed=99)
    second = run_dropout(tmp_path / "b", x, w, b, 0.5, seed=99)
    other = run_dropout(tmp_path / "c", x, w, b, 0.5, seed=100)
    assert np.array_equal(first, second)
    assert not np.array_equal(first != 0, other != 0)
    ref = eager_linear(x, w, b)
    for p, training in [(0.0, True), (0.5, False)]:
        y = run_dropout(tmp_path / f"id{p}", x, w, b, p, seed=5,
                        training=training)
        torch.testing.assert_close(torch.from_numpy(y), ref)
    all_dropped = run_dropout(tmp_path / "one", x, w, b, 1.0, seed=5)
    assert not all_dropped.any()


@pytest.mark.parametrize("shape", [
    (2, 3, 8),     # rows of 8: the mask drawn in groups of four beforehand
    (5, 12),       # odd rows
    (64,),         # rank 1
    (4, 6),        # rows of 6: one Philox call per element
    (3, 1024),     # long rows, vectorized mask
])
def test_dropout_on_its_own(tmp_path, shape):
    """lamina.dropout on any shape keeps exactly the reference Philox
    stream's elements, scaled by float32(1/(1-p))."""
    rng = np.random.default_rng(13)
    x = randn(rng, *shape)
    p, seed = 0.3, 77
    t = "tensor<" + "x".join(map(str, shape)) + "xf32>"
    ir = f"""
func.func @main(%x: {t}, %seed: i64) -> {t} {{
  %0 = lamina.dropout %x <p = {p}, training, offset = 9> seed %seed : {t}
  return %0 : {t}
}}
"""
    (y,) = run_ir(ir, [x, ("i64", seed)], tmp_path)
    keep = philox.keep_mask(shape, p, seed, offset=9)
    assert np.array_equal(y != 0, keep)
    assert np.array_equal(y[keep], x[keep] * np.float32(1.0 / (1.0 - p)))


@pytest.mark.parametrize("kind", ["gelu", "dropout", "matmul"])
@pytest.mark.parametrize("m,k,n", [
    (256, 64, 64),    # a part of 2 blocks per thread: register tiles only
    (256, 64, 512),   # cache tiles of 8 blocks in each thread's part
    (512, 64, 256),   # ... of 2 blocks
    (16, 2048, 64),   # decoding: each part's register tiles share chunks
    (256, 64, 48),    # 3 blocks: not shared out, one thread
])
@pytest.mark.parametrize("bits", [256, 512])
def test_two_threads(tmp_path, kind, m, k, n, bits):
    """threads=2 shares the blocks of features out between the threads,
    each running one thread's schedule on its part: the same results as
    one thread, bit for bit (every output sums over k in the same order),
    and as eager PyTorch."""
    rng = np.random.default_rng(8)
    x, w, b = randn(rng, m, k), randn(rng, n, k), randn(rng, n)
    if kind == "gelu":
        ir = linear_layer("linear_act", x.shape, n,
                          attrs="activation gelu_tanh")
        inputs = [x, w, b]
    elif kind == "dropout":
        ir = linear_layer("linear_dropout", x.shape, n,
                          attrs="dropout <p = 0.2, training>", seed=True)
        inputs = [x, w, b, ("i64", 11)]
    else:
        ir = linear_layer("linear", x.shape, n, bias=False)
        inputs = [x, w]
    (one,) = run_ir(ir, inputs, tmp_path / "one",
                    pipeline=f"lamina-cpu-pipeline{{vector-bits={bits}}}")
    (two,) = run_ir(
        ir, inputs, tmp_path / "two",
        pipeline=f"lamina-cpu-pipeline{{vector-bits={bits} threads=2}}")
    assert np.array_equal(one, two)
    if kind == "gelu":
        assert_gelu_layer_close(two, x, w, b)
    elif kind == "matmul":
        assert_product_close(two, x, w)


@pytest.mark.parametrize("element", ["bf16", "f16"])
def test_half_precision_fused_qkv(tmp_path, element):
    hidden, heads = 32, 4
    rng = np.random.default_rng(10)
    x, x64 = to_bits(randn(rng, 3, hidden), element)
    w, w64 = to_bits(randn(rng, 3 * hidden, hidden), element)
    b, b64 = to_bits(randn(rng, 3 * hidden), element)
    ir = linear_layer("fused_qkv", (3, hidden), 3 * hidden, element=element,
                      result_element="f32",
                      attrs=f"num_heads {heads} world_size 1",
                      qkv_heads=(heads, hidden // heads))
    outputs = run_ir(ir, [x, w, b], tmp_path)
    qkv = (x64 @ w64.T + b64).reshape(3, heads, hidden // heads, 3)
    for t, got in enumerate(outputs):
        ref = qkv[..., t]
        assert np.abs(got - ref).max() <= 1e-4 * np.abs(ref).max()


def weight_gradient_ir(tokens, k, n):
    """dW [n, k] = dY [tokens, n]ᵀ · X [tokens, k], as the backward writes
    it (a matmul on the transposes of dY and X)."""
    return f"""
func.func @main(%dy: tensor<{tokens}x{n}xf32>, %x: tensor<{tokens}x{k}xf32>) -> tensor<{n}x{k}xf32> {{
  %dyt_init = tensor.empty() : tensor<{n}x{tokens}xf32>
  %dyt = linalg.transpose ins(%dy : tensor<{tokens}x{n}xf32>) outs(%dyt_init : tensor<{n}x{tokens}xf32>) permutation = [1, 0]
  %xt_init = tensor.empty() : tensor<{k}x{tokens}xf32>
  %xt = linalg.transpose ins(%x : tensor<{tokens}x{k}xf32>) outs(%xt_init : tensor<{k}x{tokens}xf32>) permutation = [1, 0]
  %dw = lamina.matmul "fc" %dyt, %xt : (tensor<{n}x{tokens}xf32>, tensor<{k}x{tokens}xf32>) -> tensor<{n}x{k}xf32>
  return %dw : tensor<{n}x{k}xf32>
}}
"""


@pytest.mark.parametrize("tokens,k,n", [
    (64, 64, 512),   # dY in panels of 8 and 4 rows; cache tiles of 128
    (24, 32, 8),     # one panel of 8 rows (the register tile's rows)
    (12, 48, 20),    # n = 20: panels of 4 only
    (16, 32, 18),    # n not a multiple of 4: dYᵀ materialized
    (2048, 32, 2048),  # dYᵀ of 16 MiB: panels in slabs of rows
])
@pytest.mark.parametrize("pipeline", [
    "lamina-cpu-pipeline{vector-bits=512}",
    "lamina-cpu-pipeline{vector-bits=256}",
    "lamina-cpu-pipeline{vector-bits=512 threads=2}",
])
def test_weight_gradient(tmp_path, tokens, k, n, pipeline):
    """dW = dYᵀ·X with dY packed in panels of the register tile's rows
    (where they divide n) equals eager PyTorch's product."""
    rng = np.random.default_rng(9)
    dy, x = randn(rng, tokens, n), randn(rng, tokens, k)
    (dw,) = run_ir(weight_gradient_ir(tokens, k, n), [dy, x], tmp_path,
                   pipeline=pipeline)
    if tokens > 1000:
        assert_product_close(dw, dy.T, x.T)
    else:
        torch.testing.assert_close(torch.from_numpy(dw),
                                   torch.from_numpy(dy).T @ torch.from_numpy(x))
