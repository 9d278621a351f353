"""Layers of degenerate shapes compile in bounded time and compute x·Wᵀ."""

import numpy as np

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
