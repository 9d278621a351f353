"""transform.lamina.replace to the LNS variant, compiled and run: equal to
the LNS spec (NumPy) on the encoded inputs, decoded. The program takes the
layer's weight and bias as their codes."""

import subprocess

import numpy as np

from lamina import Program, lns_numpy
from lamina.tools import tool

LAYER = """func.func @main(%x: tensor<4x24xf32>, %w: tensor<8x24xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = lamina.linear "fc" %x, %w bias %b : (tensor<4x24xf32>, tensor<8x24xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}"""

SCHEDULE = """module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    %l = transform.lamina.replace %fc "lns" f 12 : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}"""


def test_replace_with_lns(tmp_path):
    (tmp_path / "layer.mlir").write_text(LAYER)
    (tmp_path / "schedule.mlir").write_text(SCHEDULE)
    scheduled = subprocess.run(
        [tool("lamina-opt"), str(tmp_path / "layer.mlir"),
         f"--transform-preload-library=transform-library-paths={tmp_path / 'schedule.mlir'}",
         "--transform-interpreter"], capture_output=True, text=True, check=True).stdout
    rng = np.random.default_rng(12)
    x = rng.standard_normal((4, 24)).astype(np.float32)
    w = rng.standard_normal((8, 24)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    program = Program(scheduled)
    assert [kind for kind, _ in program.inputs] == ["f32", "i64", "i64"]
    w_codes, b_codes = lns_numpy.encode(w, 12), lns_numpy.encode(b, 12)
    (y,) = program.run(program.prepare([x, w_codes, b_codes]))
    codes = lns_numpy.linear(lns_numpy.encode(x, 12), w_codes, b_codes, f=12)
    assert np.array_equal(y, lns_numpy.decode(codes, 12).astype(np.float32))
    # LNS with 12 fractional bits stays close to the float layer.
    np.testing.assert_allclose(y, x @ w.T + b, rtol=0.05, atol=0.05)
