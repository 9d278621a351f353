"""A dropout's offset_base (what a block function takes per instance):
compiled with the base as an argument, a dropout draws the mask of the
offset plus the base, standalone and as a layer's fused epilogue, on rows
whose length 4 divides (masks drawn four elements at a time) and on rows it
does not; Lamina's Philox stream written in NumPy is the reference."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lamina
from lamina import philox
from layer_ir import tensor

PIPELINE = "lamina-cpu-pipeline"
P, OFFSET, BASE, SEED = 0.25, 1, 6, 4321


def scalar(value):
    return np.array(value, dtype=np.int64)


def dropped(z, offset):
    keep = torch.from_numpy(philox.keep_mask(tuple(z.shape), P, SEED, offset))
    scale = float(np.float32(1.0 / (1.0 - P)))
    return torch.where(keep, z * scale, torch.zeros_like(z))


@pytest.mark.parametrize("shape", [(8, 32), (3, 6)])
def test_standalone_dropout_draws_the_offset_plus_the_base(shape):
    x_t = tensor(shape, "f32")
    source = f"""
func.func @main(%x: {x_t}, %s: i64, %base: i64) -> {x_t} {{
  %y = lamina.dropout %x <p = {P}, training, offset = {OFFSET}> seed %s offset_base %base : {x_t}
  return %y : {x_t}
}}
"""
    program = lamina.Program(source, "main", PIPELINE)
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    (y,) = program.run(program.prepare([x, scalar(SEED), scalar(BASE)]))
    want = dropped(torch.from_numpy(x), OFFSET + BASE)
    torch.testing.assert_close(torch.from_numpy(np.asarray(y)), want,
                               rtol=0, atol=0)
    # Not the attribute's offset alone.
    assert not torch.equal(torch.from_numpy(np.asarray(y)),
                           dropped(torch.from_numpy(x), OFFSET))


@pytest.mark.parametrize("n", [48, 6])
def test_fused_layer_dropout_draws_the_offset_plus_the_base(n):
    rows, k = 12, 32
    x_t, w_t = tensor((rows, k), "f32"), tensor((n, k), "f32")
    b_t, y_t = tensor((n,), "f32"), tensor((rows, n), "f32")
    source = f"""
func.func @main(%x: {x_t}, %w: {w_t}, %b: {b_t}, %s: i64, %base: i64) -> {y_t} {{
  %y = lamina.linear_dropout "fc" %x, %w bias %b dropout <p = {P}, training, offset = {OFFSET}> seed %s offset_base %base
      : ({x_t}, {w_t}, {b_t}, i64, i64) -> {y_t}
  return %y : {y_t}
}}
"""
    # Decomposed and fused again, the epilogue keeps the base.
    fused = lamina._lamina.transform_ir(source, "",
                                        "lamina-decompose,lamina-fuse-epilogues")
    assert "lamina.fused_linear" in fused and "offset_base" in fused
    program = lamina.Program(source, "main", PIPELINE)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((rows, k)).astype(np.float32)
    w = (rng.standard_normal((n, k)) * k ** -0.5).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    (y,) = program.run(program.prepare([x, w, b, scalar(SEED), scalar(BASE)]))
    z = F.linear(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b))
    torch.testing.assert_close(torch.from_numpy(np.asarray(y)),
                               dropped(z, OFFSET + BASE), rtol=1e-5,
                               atol=1e-5)
