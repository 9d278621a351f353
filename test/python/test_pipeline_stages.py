"""Pipeline stages: each stage function compiles and runs on its own, and
running them in order (as stage i on rank i would) equals the unsplit
program; the split program still runs as one."""

import subprocess

import numpy as np

from lamina import Program
from lamina.tools import tool

BLOCK = """func.func @block(%x: tensor<8x16xf32>, %w1: tensor<32x16xf32>, %b1: tensor<32xf32>, %w2: tensor<16x32xf32>, %b2: tensor<16xf32>) -> tensor<8x16xf32> {
  %h = lamina.linear_act "h.0.fc_in" %x, %w1 bias %b1 activation gelu_tanh {lamina.pipeline_cut} : (tensor<8x16xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %y = lamina.linear "h.0.fc_out" %h, %w2 bias %b2 : (tensor<8x32xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<8x16xf32>
  %r = arith.addf %x, %y : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}"""


def run(program, arrays):
    return program.run(program.prepare(arrays))


def test_stages_equal_the_whole(tmp_path):
    (tmp_path / "block.mlir").write_text(BLOCK)
    split = subprocess.run(
        [tool("lamina-opt"), str(tmp_path / "block.mlir"),
         "--lamina-split-pipeline-stages"],
        capture_output=True, text=True, check=True).stdout
    rng = np.random.default_rng(4)
    args = [rng.standard_normal(s).astype(np.float32)
            for s in ((8, 16), (32, 16), (32,), (16, 32), (16,))]
    (whole,) = run(Program(BLOCK, entry="block"), args)
    (called,) = run(Program(split, entry="block"), args)
    np.testing.assert_array_equal(called, whole)
    # Stage by stage, each a separate compiled program: stage 0 sends h;
    # stage 1 takes it with its own weights and the residual input.
    x, w1, b1, w2, b2 = args
    (h,) = run(Program(split, entry="block_stage0"), [x, w1, b1])
    (staged,) = run(Program(split, entry="block_stage1"), [h, w2, b2, x])
    np.testing.assert_array_equal(staged, whole)
