"""lamina.layer_norm and lamina.softmax compiled for the CPU against eager
PyTorch (torch.nn.functional.layer_norm / softmax) at its default fp32
tolerance."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lamina
from layer_ir import tensor

PIPELINE = "lamina-cpu-pipeline"


def layer_norm_ir(shape, weight, bias, eps):
    """`@main(x[, w][, b])` applying one lamina.layer_norm over the last dim."""
    x_t = tensor(shape, "f32")
    c_t = tensor((shape[-1],), "f32")
    args, operands, types = [f"%x: {x_t}"], "%x", [x_t]
    if weight:
        args.append(f"%w: {c_t}")
        operands += " weight %w"
        types.append(c_t)
    if bias:
        args.append(f"%b: {c_t}")
        operands += " bias %b"
        types.append(c_t)
    return f"""
func.func @main({", ".join(args)}) -> {x_t} {{
  %y = lamina.layer_norm "ln" {operands} eps {eps:.6e}
      : ({", ".join(types)}) -> {x_t}
  return %y : {x_t}
}}
"""


def softmax_ir(shape, dim):
    t = tensor(shape, "f32")
    return f"""
func.func @main(%x: {t}) -> {t} {{
  %y = lamina.softmax "attn" %x dim {dim} : {t}
  return %y : {t}
}}
"""


def run(source, arrays, entry="main"):
    program = lamina.Program(source, entry, PIPELINE)
    (y,) = program.run(program.prepare(arrays))
    return torch.from_numpy(y)


@pytest.mark.parametrize("shape", [(4, 32), (2, 8, 32), (3, 5, 48)])
@pytest.mark.parametrize("weight,bias", [(True, True), (True, False),
                                         (False, False)])
def test_layer_norm(shape, weight, bias):
    rng = np.random.default_rng(sum(shape) + 2 * weight + bias)
    # An offset and a scale away from N(0, 1), so that both the mean and
    # the variance matter.
    x = (rng.standard_normal(shape) * 3.0 + 1.5).astype(np.float32)
    c = shape[-1]
    w = rng.standard_normal(c).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    arrays = [x] + ([w] if weight else []) + ([b] if bias else [])
    y = run(layer_norm_ir(shape, weight, bias, 1e-05), arrays)
    expected = F.layer_norm(torch.from_numpy(x), (c,),
                            torch.from_numpy(w) if weight else None,
                            torch.from_numpy(b) if bias else None, eps=1e-05)
    torch.testing.assert_close(y, expected)


def test_layer_norm_eps_matters():
    # Rows of variance ~1e-4: eps = 1e-2 dominates it, so an eps that were
    # dropped or misplaced (e.g. added outside the square root) would show.
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((2, 6, 16)) * 1e-2).astype(np.float32)
    w = rng.standard_normal(16).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    y = run(layer_norm_ir(x.shape, True, True, 1e-02), [x, w, b])
    expected = F.layer_norm(torch.from_numpy(x), (16,),
                            torch.from_numpy(w), torch.from_numpy(b), eps=1e-02)
    torch.testing.assert_close(y, expected)


def test_layer_norm_constant_rows():
    # A constant row has zero variance: x − mean = 0 exactly, so the output
    # is the bias, not NaN. (Eager fp32 PyTorch folds the mean into a shift,
    # x·rstd·w − mean·rstd·w + b, and is off by ~6e-5 here; the reference is
    # the same function in float64.)
    x = np.full((3, 8), 7.25, np.float32)
    w = np.linspace(-1.0, 1.0, 8).astype(np.float32)
    b = np.arange(8, dtype=np.float32)
    y = run(layer_norm_ir(x.shape, True, True, 1e-05), [x, w, b])
    expected = F.layer_norm(torch.from_numpy(x).double(), (8,),
                            torch.from_numpy(w).double(),
                            torch.from_numpy(b).double(), eps=1e-05)
    torch.testing.assert_close(y, expected.float())
    assert torch.isfinite(y).all()


@pytest.mark.parametrize("shape,dim", [((4, 16), 1), ((4, 16), 0),
                                       ((2, 5, 8), 0), ((2, 5, 8), 1),
                                       ((2, 5, 8), 2), ((2, 4, 8, 8), 3)])
def test_softmax(shape, dim):
    rng = np.random.default_rng(len(shape) * 10 + dim)
    x = (rng.standard_normal(shape) * 4.0).astype(np.float32)
    y = run(softmax_ir(shape, dim), [x])
    torch.testing.assert_close(y, F.softmax(torch.from_numpy(x), dim=dim))


def test_softmax_large_scores():
    # exp(x) alone overflows f32 beyond ~88: softmax must subtract the max.
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((3, 4, 32)) * 5.0 + 200.0).astype(np.float32)
    y = run(softmax_ir(x.shape, 2), [x])
    assert torch.isfinite(y).all()
    torch.testing.assert_close(y, F.softmax(torch.from_numpy(x), dim=2))


def test_layer_norm_linear_softmax():
    # A pre-norm block in one function: softmax(LayerNorm(x)·Wᵀ + b) along
    # the features, compiled with the linear layer's fusion.
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((2, 8, 32)) * 2.0 - 1.0).astype(np.float32)
    g = rng.standard_normal(32).astype(np.float32)
    beta = rng.standard_normal(32).astype(np.float32)
    w = (rng.standard_normal((16, 32)) * 0.2).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float32)
    source = """
func.func @block(%x: tensor<2x8x32xf32>, %g: tensor<32xf32>, %beta: tensor<32xf32>,
                 %w: tensor<16x32xf32>, %b: tensor<16xf32>) -> tensor<2x8x16xf32> {
  %n = lamina.layer_norm "ln_1" %x weight %g bias %beta eps 1.0e-05
      : (tensor<2x8x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<2x8x32xf32>
  %h = lamina.linear "fc" %n, %w bias %b
      : (tensor<2x8x32xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %p = lamina.softmax %h dim 2 : tensor<2x8x16xf32>
  return %p : tensor<2x8x16xf32>
}
"""
    y = run(source, [x, g, beta, w, b], entry="block")
    t = [torch.from_numpy(a) for a in (x, g, beta, w, b)]
    expected = F.softmax(
        F.linear(F.layer_norm(t[0], (32,), t[1], t[2], eps=1e-05), t[3], t[4]),
        dim=2)
    torch.testing.assert_close(y, expected)
