"""Layers of degenerate shapes (in_features = 1, empty dims) compile in
bounded time and compute x·Wᵀ."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lamina


def test_in_features_1_compiles_and_matches_numpy():
    # A depth-1 matmul used to send lamina-cpu-lower-vectors into a cycle.
    m, n = 512, 256
    source = f"""
func.func @main(%x: tensor<{m}x1xf32>, %w: tensor<{n}x1xf32>,
                %b: tensor<{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %y = lamina.linear "fc" %x, %w bias %b
      : (tensor<{m}x1xf32>, tensor<{n}x1xf32>, tensor<{n}xf32>) -> tensor<{m}x{n}xf32>
  return %y : tensor<{m}x{n}xf32>
}}"""
    program = lamina.Program(source, "main", "lamina-cpu-pipeline")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((m, 1), dtype=np.float32)
    w = rng.standard_normal((n, 1), dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    (y,) = program.run(program.prepare([x, w, b]))
    np.testing.assert_allclose(y, x @ w.T + b, rtol=1.3e-6, atol=1e-5)


@pytest.mark.parametrize("m, k, n", [(4, 0, 32), (0, 16, 32), (4, 16, 0),
                                     (512, 0, 256)])
def test_empty_dims_compile_and_match_torch(m, k, n):
    """A dim of size 0 (no rows, in_features = 0: a sum of nothing, no
    outputs) used to crash upstream's tiling; it is left as loops of no
    iterations. relu(x·Wᵀ + b) against torch."""
    x_t, w_t, b_t, y_t = (f"tensor<{m}x{k}xf32>", f"tensor<{n}x{k}xf32>",
                          f"tensor<{n}xf32>", f"tensor<{m}x{n}xf32>")
    source = f"""
func.func @main(%x: {x_t}, %w: {w_t}, %b: {b_t}) -> {y_t} {{
  %y = lamina.linear_act "fc" %x, %w bias %b activation relu
      : ({x_t}, {w_t}, {b_t}) -> {y_t}
  return %y : {y_t}
}}"""
    program = lamina.Program(source, "main", "lamina-cpu-pipeline")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((m, k), dtype=np.float32)
    w = rng.standard_normal((n, k), dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    (y,) = program.run(program.prepare([x, w, b]))
    expected = F.relu(F.linear(torch.from_numpy(x), torch.from_numpy(w),
                               torch.from_numpy(b)))
    assert y.shape == (m, n)
    torch.testing.assert_close(torch.from_numpy(y), expected)
