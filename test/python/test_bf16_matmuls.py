"""bf16 layer matmuls on AVX512-BF16 (lamina-cpu-pipeline{bf16=dot}:
vdpbf16ps on operands packed in pairs of k) and widened to f32
(bf16=widen, the path of CPUs without the instruction, forced here), for
the layer's, the backward's dX and dW shapes and the schedules' tilings,
against float64 products of the same bf16 inputs."""

import pathlib

import numpy as np
import pytest

from lamina.tools import run_ir
from layer_ir import linear_layer, tensor
from test_cpu_numerics import from_bits, to_bits

def host_has_bf16_dot_products():
    flags = pathlib.Path("/proc/cpuinfo").read_text()
    return " avx512_bf16" in flags and " avx512f" in flags


# bf16=dot runs vdpbf16ps: only on a CPU that has it (the pipeline's
# default, bf16=host, picks widen elsewhere; widen runs everywhere).
MODES = [pytest.param("dot", marks=pytest.mark.skipif(
    not host_has_bf16_dot_products(), reason="the CPU lacks AVX512-BF16")),
    "widen"]


def pipeline(mode):
    return f"lamina-cpu-pipeline{{vector-bits=512 bf16={mode}}}"


def randn(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def accumulation_bound(a64, b64):
    """|exact − computed| of f32 sums of K exact bf16 products, in any
    order: K unit roundoffs of the sum of magnitudes (Higham's γ_K)."""
    k = a64.shape[-1]
    return (k + 1) * 2.0**-24 * (np.abs(a64) @ np.abs(b64).T)


def layer_inputs(rng, m, k, n):
    """x [m, k], W [n, k], b [n] rounded to bf16: (bits, float64 values)
    each."""
    return [to_bits(randn(rng, *shape), "bf16")
            for shape in ((m, k), (n, k), (n,))]


def check_layer_in_f32(tmp_path, m, k, n, rng, pipeline_text, extra_args=()):
    """x·Wᵀ + b of bf16 inputs with f32 results, within the accumulation
    bound of the float64 product."""
    (x, x64), (w, w64), (b, b64) = layer_inputs(rng, m, k, n)
    ir = linear_layer("linear", (m, k), n, element="bf16",
                      result_element="f32")
    (y,) = run_ir(ir, [x, w, b], tmp_path, pipeline=pipeline_text,
                  extra_args=extra_args)
    exact = x64 @ w64.T + b64
    assert np.all(np.abs(y - exact) <= accumulation_bound(x64, w64)
                  + 2.0**-24 * np.abs(exact))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("m,k,n", [
    (64, 256, 128),   # register tiles of 8 rows × 2 blocks, k in steps
    (1, 64, 32),      # one token: a tile of one row
    (3, 32, 96),      # rows the tiles do not divide
    (512, 128, 64),   # cache tiles
    (16, 4096, 64),   # register tiles sharing chunks of k
    (8, 6, 32),       # three pairs of k, unrolled whole
])
def test_matmul_in_f32(tmp_path, mode, m, k, n):
    check_layer_in_f32(tmp_path, m, k, n, np.random.default_rng(m + k + n),
                       pipeline(mode))


@pytest.mark.skipif(not host_has_bf16_dot_products(),
                    reason="the CPU lacks AVX512-BF16")
def test_two_threads_share_the_blocks(tmp_path):
    """threads=2: each thread runs the dot products of its half of the
    blocks of features; the same bound as one thread."""
    check_layer_in_f32(tmp_path, 512, 256, 128, np.random.default_rng(9),
                       "lamina-cpu-pipeline{vector-bits=512 bf16=dot "
                       "threads=2}", extra_args=["--threads=2"])


@pytest.mark.parametrize("mode", MODES)
def test_fused_gelu_layer_in_bf16(tmp_path, mode):
    """The epilogue (bias, GELU) on the f32 accumulator, rounded to bf16
    once: within bf16's half ulp (2^-8 relative) of the exact layer, plus
    the accumulation bound through GELU (|GELU'| < 1.13)."""
    m, k, n = 64, 256, 128
    (x, x64), (w, w64), (b, b64) = layer_inputs(np.random.default_rng(3),
                                                m, k, n)
    ir = linear_layer("linear_act", (m, k), n, element="bf16",
                      attrs="activation gelu_tanh")
    (y,) = run_ir(ir, [x, w, b], tmp_path, pipeline=pipeline(mode))
    z = x64 @ w64.T + b64
    exact = 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z**3)))
    got = from_bits(y, "bf16")
    bound = 2.0**-8 * np.abs(exact) + 1.13 * accumulation_bound(x64, w64) \
        + 1e-6 * np.abs(z)   # the epilogue's f32 tanh approximation
    assert np.all(np.abs(got - exact) <= bound)


def backward_ir(kind, dy_shape, other_shape, result_shape):
    """dX = dY·W (`kind` "dx": W[N, K] transposed) or dW = dYᵀ·X ("dw":
    both transposed, dY packed in panels of rows)."""
    dy_t, o_t = tensor(dy_shape, "bf16"), tensor(other_shape, "bf16")
    r_t = tensor(result_shape, "f32")
    if kind == "dx":
        wt_t = tensor(other_shape[::-1], "bf16")
        return f"""
func.func @main(%dy: {dy_t}, %w: {o_t}) -> {r_t} {{
  %init = tensor.empty() : {wt_t}
  %wt = linalg.transpose ins(%w : {o_t}) outs(%init : {wt_t}) permutation = [1, 0]
  %dx = lamina.matmul "fc" %dy, %wt : ({dy_t}, {wt_t}) -> {r_t}
  return %dx : {r_t}
}}"""
    dyt_t, xt_t = tensor(dy_shape[::-1], "bf16"), tensor(other_shape[::-1],
                                                         "bf16")
    return f"""
func.func @main(%dy: {dy_t}, %x: {o_t}) -> {r_t} {{
  %i0 = tensor.empty() : {dyt_t}
  %dyt = linalg.transpose ins(%dy : {dy_t}) outs(%i0 : {dyt_t}) permutation = [1, 0]
  %i1 = tensor.empty() : {xt_t}
  %xt = linalg.transpose ins(%x : {o_t}) outs(%i1 : {xt_t}) permutation = [1, 0]
  %dw = lamina.matmul "fc" %dyt, %xt : ({dyt_t}, {xt_t}) -> {r_t}
  return %dw : {r_t}
}}"""


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tokens", [8, 256])
def test_backward_shapes(tmp_path, mode, tokens):
    """dX = dY·W packs W's columns in pairs; dW = dYᵀ·X packs dY's tokens
    in panels of 8 rows and pairs (the depth is the tokens)."""
    rng = np.random.default_rng(tokens)
    k, n = 64, 96
    dy, dy64 = to_bits(randn(rng, tokens, n), "bf16")
    w, w64 = to_bits(randn(rng, n, k), "bf16")
    x, x64 = to_bits(randn(rng, tokens, k), "bf16")
    (dx,) = run_ir(backward_ir("dx", (tokens, n), (n, k), (tokens, k)),
                   [dy, w], tmp_path, pipeline=pipeline(mode))
    assert np.all(np.abs(dx - dy64 @ w64)
                  <= accumulation_bound(dy64, w64.T))
    (dw,) = run_ir(backward_ir("dw", (tokens, n), (tokens, k), (n, k)),
                   [dy, x], tmp_path, pipeline=pipeline(mode))
    assert np.all(np.abs(dw - dy64.T @ x64)
                  <= accumulation_bound(dy64.T, x64.T))
