"""lamina-generate-backward end to end: @main_forward and @main_backward of
hand-written IR compiled for the CPU, against eager PyTorch autograd.

For each program: the forward's results must equal torch's, and the
backward, given the arguments, the values @main_forward saved and random
cotangents, must return torch.autograd.grad of the same function with the
same cotangents, for every float tensor argument (rtol = atol = 1e-5).
Dropout's reference mask is the spec's Philox stream in NumPy
(lamina.philox), applied in torch. The memory the forward keeps for the
backward ("bytes saved": the sizes of @main_forward's results after @main's
own) is measured with and without a checkpointed layer.
"""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lamina
from lamina import philox
from layer_ir import tensor

PIPELINE = "lamina-cpu-pipeline"
TOL = dict(rtol=1e-5, atol=1e-5)
BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4}


class Pair:
    """@main_forward and @main_backward of `source` after the pass."""

    def __init__(self, source, num_results=1):
        self.ir = lamina._lamina.transform_ir(source, "",
                                              "lamina-generate-backward")
        self.forward = lamina.Program(self.ir, "main_forward", PIPELINE)
        self.backward = lamina.Program(self.ir, "main_backward", PIPELINE)
        self.num_results = num_results
        # The pass's record of the pair, read through the typed accessor.
        entry = lamina._lamina.Module(self.ir).training_entry("main")
        assert (entry["forward"], entry["backward"]) == ("main_forward",
                                                         "main_backward")
        self.gradients = list(entry["gradients"])
        self.saved = entry["saved"]

    @property
    def saved_specs(self):
        return self.forward.results[self.num_results:]

    @property
    def bytes_saved(self):
        return sum(BYTES[dtype] * int(np.prod(shape, dtype=np.int64))
                   for dtype, shape, _ in self.saved_specs)

    def run(self, args, cotangents):
        """(forward results, gradients) for NumPy arguments."""
        outputs = self.forward.run(self.forward.prepare(args))
        assert len(outputs) == self.num_results + self.saved
        results, saved = outputs[:self.num_results], outputs[self.num_results:]
        grads = self.backward.run(
            self.backward.prepare(list(args) + saved + list(cotangents)))
        return results, grads


def randn(rng, *shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype(np.float32)


def check_against_torch(pair, args, reference, seed=0):
    """`reference(*torch tensors)` → tuple of results; every float tensor
    argument differentiated by torch.autograd.grad."""
    rng = np.random.default_rng(seed)
    inputs = [torch.from_numpy(a).requires_grad_(True)
              if isinstance(a, np.ndarray) and a.dtype == np.float32
              else a for a in args]
    expected = reference(*inputs)
    cotangents = [randn(rng, *e.shape) for e in expected]
    differentiable = [i for i, a in enumerate(inputs)
                      if isinstance(a, torch.Tensor) and a.requires_grad]
    assert pair.gradients == differentiable
    want = torch.autograd.grad(expected, [inputs[i] for i in differentiable],
                               [torch.from_numpy(c) for c in cotangents],
                               allow_unused=True)
    results, grads = pair.run(args, cotangents)
    for got, ref in zip(results, expected, strict=True):
        torch.testing.assert_close(torch.from_numpy(got), ref.detach(), **TOL)
    assert len(grads) == len(differentiable)
    for index, got, ref in zip(differentiable, grads, want, strict=True):
        if ref is None:  # unused by the reference: zero
            ref = torch.zeros_like(inputs[index])
        assert got.shape == tuple(ref.shape), index
        torch.testing.assert_close(torch.from_numpy(got), ref, **TOL,
                                   msg=lambda m: f"gradient {index}: {m}")


# --- an MLP with GELU and a residual ---------------------------------------

def mlp_ir(shape, hidden, activation, checkpoint=False):
    """y = x + fc2(act(fc1(x))) with x [..., C]."""
    c = shape[-1]
    x_t, h_t = tensor(shape, "f32"), tensor(shape[:-1] + (hidden,), "f32")
    w1_t, b1_t = tensor((hidden, c), "f32"), tensor((hidden,), "f32")
    w2_t, b2_t = tensor((c, hidden), "f32"), tensor((c,), "f32")
    ck = " {lamina.checkpoint}" if checkpoint else ""
    return f"""
func.func @main(%x: {x_t}, %w1: {w1_t}, %b1: {b1_t}, %w2: {w2_t}, %b2: {b2_t}) -> {x_t} {{
  %h = lamina.linear_act "mlp.fc_in" %x, %w1 bias %b1 activation {activation}{ck}
      : ({x_t}, {w1_t}, {b1_t}) -> {h_t}
  %o = lamina.linear "mlp.fc_out" %h, %w2 bias %b2 : ({h_t}, {w2_t}, {b2_t}) -> {x_t}
  %y = arith.addf %x, %o : {x_t}
  return %y : {x_t}
}}
"""


TORCH_ACT = {
    "gelu_tanh": lambda z: F.gelu(z, approximate="tanh"),
    "gelu_erf": F.gelu,
    "relu": F.relu,
}


def mlp_args(rng, shape, hidden):
    c = shape[-1]
    return [randn(rng, *shape), randn(rng, hidden, c, scale=c ** -0.5),
            randn(rng, hidden), randn(rng, c, hidden, scale=hidden ** -0.5),
            randn(rng, c)]


def mlp_reference(activation):
    def reference(x, w1, b1, w2, b2):
        h = TORCH_ACT[activation](F.linear(x, w1, b1))
        return (x + F.linear(h, w2, b2),)
    return reference


@pytest.mark.parametrize("activation", ["gelu_tanh", "gelu_erf", "relu"])
@pytest.mark.parametrize("shape", [(8, 32), (2, 5, 32)])
def test_mlp_residual(activation, shape):
    rng = np.random.default_rng(len(shape))
    pair = Pair(mlp_ir(shape, 64, activation))
    check_against_torch(pair, mlp_args(rng, shape, 64),
                        mlp_reference(activation), seed=1)


def test_checkpointed_mlp_saves_less():
    shape, hidden = (2, 8, 32), 128
    rng = np.random.default_rng(3)
    args = mlp_args(rng, shape, hidden)
    plain = Pair(mlp_ir(shape, hidden, "gelu_tanh"))
    checkpointed = Pair(mlp_ir(shape, hidden, "gelu_tanh", checkpoint=True))
    for pair in (plain, checkpointed):
        check_against_torch(pair, args, mlp_reference("gelu_tanh"), seed=4)
    # Without a checkpoint the forward keeps fc_in's pre-activation and its
    # output h (both [2, 8, 128]); with fc_in checkpointed, neither: x and
    # the weights are arguments, so fc_in is recomputed from them.
    rows = 2 * 8
    assert plain.bytes_saved == 2 * rows * hidden * 4
    assert checkpointed.saved < plain.saved
    assert checkpointed.bytes_saved < plain.bytes_saved
    print(f"\nbytes saved for backward (MLP {shape}, hidden {hidden}): "
          f"{plain.bytes_saved} without checkpoint, "
          f"{checkpointed.bytes_saved} with fc_in checkpointed")


def test_checkpointed_middle_layer_saves_less():
    """Three layers, the middle one checkpointed: its input (fc1's output)
    stays saved, its own pre-activation and output are recomputed."""
    rows, c, hidden = 16, 32, 64
    x_t, h_t = tensor((rows, c), "f32"), tensor((rows, hidden), "f32")
    w1_t, w2_t, w3_t = (tensor((hidden, c), "f32"),
                        tensor((hidden, hidden), "f32"),
                        tensor((c, hidden), "f32"))
    hb_t, cb_t = tensor((hidden,), "f32"), tensor((c,), "f32")

    def source(checkpoint):
        ck = " {lamina.checkpoint}" if checkpoint else ""
        return f"""
func.func @main(%x: {x_t}, %w1: {w1_t}, %b1: {hb_t}, %w2: {w2_t}, %b2: {hb_t}, %w3: {w3_t}, %b3: {cb_t}) -> {x_t} {{
  %h1 = lamina.linear_act "fc1" %x, %w1 bias %b1 activation gelu_tanh : ({x_t}, {w1_t}, {hb_t}) -> {h_t}
  %h2 = lamina.linear_act "fc2" %h1, %w2 bias %b2 activation gelu_erf{ck} : ({h_t}, {w2_t}, {hb_t}) -> {h_t}
  %y = lamina.linear "fc3" %h2, %w3 bias %b3 : ({h_t}, {w3_t}, {cb_t}) -> {x_t}
  return %y : {x_t}
}}
"""

    def reference(x, w1, b1, w2, b2, w3, b3):
        h1 = F.gelu(F.linear(x, w1, b1), approximate="tanh")
        h2 = F.gelu(F.linear(h1, w2, b2))
        return (F.linear(h2, w3, b3),)

    rng = np.random.default_rng(6)
    args = [randn(rng, rows, c), randn(rng, hidden, c, scale=c ** -0.5),
            randn(rng, hidden), randn(rng, hidden, hidden, scale=hidden ** -0.5),
            randn(rng, hidden), randn(rng, c, hidden, scale=hidden ** -0.5),
            randn(rng, c)]
    plain, checkpointed = Pair(source(False)), Pair(source(True))
    for pair in (plain, checkpointed):
        check_against_torch(pair, args, reference, seed=7)
    one = rows * hidden * 4
    assert plain.bytes_saved == 4 * one  # p1, h1, p2, h2
    assert checkpointed.bytes_saved == 2 * one  # p1, h1
    print(f"\nbytes saved for backward (3 layers, fc2 checkpointed): "
          f"{plain.bytes_saved} without, {checkpointed.bytes_saved} with")


# --- LayerNorm ---------------------------------------------------------------

@pytest.mark.parametrize("weight,bias", [(True, True), (True, False),
                                         (False, True), (False, False)])
def test_layer_norm_then_linear(weight, bias):
    shape, n = (2, 6, 32), 24
    x_t, c_t = tensor(shape, "f32"), tensor((shape[-1],), "f32")
    w_t, y_t = tensor((n, shape[-1]), "f32"), tensor(shape[:-1] + (n,), "f32")
    args, operands, types = [f"%x: {x_t}"], "%x", [x_t]
    if weight:
        args.append(f"%g: {c_t}")
        operands += " weight %g"
        types.append(c_t)
    if bias:
        args.append(f"%beta: {c_t}")
        operands += " bias %beta"
        types.append(c_t)
    source = f"""
func.func @main({", ".join(args)}, %w: {w_t}) -> {y_t} {{
  %n = lamina.layer_norm "ln" {operands} eps 1.000000e-05 : ({", ".join(types)}) -> {x_t}
  %y = lamina.linear "fc" %n, %w : ({x_t}, {w_t}) -> {y_t}
  return %y : {y_t}
}}
"""
    rng = np.random.default_rng(11 + 2 * weight + bias)
    arrays = [randn(rng, *shape) * 2 + 0.5]
    if weight:
        arrays.append(1 + randn(rng, shape[-1], scale=0.3))
    if bias:
        arrays.append(randn(rng, shape[-1]))
    arrays.append(randn(rng, n, shape[-1], scale=shape[-1] ** -0.5))

    def reference(x, *rest):
        rest = list(rest)
        g = rest.pop(0) if weight else None
        beta = rest.pop(0) if bias else None
        (w,) = rest
        return (F.linear(F.layer_norm(x, (shape[-1],), g, beta, 1e-5), w),)

    pair = Pair(source)
    check_against_torch(pair, arrays, reference, seed=12)


# --- softmax, attention ---------------------------------------------------

def test_attention_softmax_batch_matmul():
    """p = softmax(q·kᵀ·scale) along the keys, o = p·v, on [B·H, S, D]
    (linalg.batch_matmul, the importer's form), transposes included."""
    bh, s, d = 4, 8, 16
    qkv_t = tensor((bh, s, d), "f32")
    kt_t, sc_t = tensor((bh, d, s), "f32"), tensor((bh, s, s), "f32")
    source = f"""
func.func @main(%q: {qkv_t}, %k: {qkv_t}, %v: {qkv_t}) -> {qkv_t} {{
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : {kt_t}
  %kt = linalg.transpose ins(%k : {qkv_t}) outs(%e0 : {kt_t}) permutation = [0, 2, 1]
  %e1 = tensor.empty() : {sc_t}
  %z1 = linalg.fill ins(%zero : f32) outs(%e1 : {sc_t}) -> {sc_t}
  %scores = linalg.batch_matmul ins(%q, %kt : {qkv_t}, {kt_t}) outs(%z1 : {sc_t}) -> {sc_t}
  %scale = arith.constant dense<0.25> : {sc_t}
  %scaled = arith.mulf %scores, %scale : {sc_t}
  %p = lamina.softmax "attn" %scaled dim 2 : {sc_t}
  %e2 = tensor.empty() : {qkv_t}
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : {qkv_t}) -> {qkv_t}
  %o = linalg.batch_matmul ins(%p, %v : {sc_t}, {qkv_t}) outs(%z2 : {qkv_t}) -> {qkv_t}
  return %o : {qkv_t}
}}
"""

    def reference(q, k, v):
        p = torch.softmax(torch.bmm(q, k.transpose(1, 2)) * 0.25, dim=2)
        return (torch.bmm(p, v),)

    rng = np.random.default_rng(21)
    args = [randn(rng, bh, s, d) for _ in range(3)]
    pair = Pair(source)
    check_against_torch(pair, args, reference, seed=22)


def softmax_ir(shape, dim, then_linear):
    """softmax along `dim`, as the result or followed by a linear layer."""
    t = tensor(shape, "f32")
    if not then_linear:
        return f"""
func.func @main(%x: {t}) -> {t} {{
  %y = lamina.softmax %x dim {dim} : {t}
  return %y : {t}
}}
"""
    w_t = tensor((shape[-1], shape[-1]), "f32")
    return f"""
func.func @main(%x: {t}, %w: {w_t}) -> {t} {{
  %p = lamina.softmax %x dim {dim} : {t}
  %y = lamina.linear "fc" %p, %w : ({t}, {w_t}) -> {t}
  return %y : {t}
}}
"""


@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_then_linear(dim):
    shape = (6, 10)
    rng = np.random.default_rng(30 + dim)
    pair = Pair(softmax_ir(shape, dim, then_linear=True))
    # The softmax's output (softmax_grad's operand, and fc's input for dW).
    assert pair.saved == 1
    args = [randn(rng, *shape, scale=2.0), randn(rng, shape[-1], shape[-1])]
    check_against_torch(
        pair, args, lambda x, w: (F.linear(torch.softmax(x, dim=dim), w),),
        seed=31)


def compiles_in_child(source, entry):
    """Whether lamina.Program(source, entry) compiles, tried in a child
    process (a compiler crash must not take pytest down)."""
    code = ("import sys, lamina; "
            "lamina.Program(sys.stdin.read(), sys.argv[1], sys.argv[2])")
    env = dict(os.environ,
               PYTHONPATH=os.pathsep.join(
                   [str(pathlib.Path(lamina.__file__).parents[1])] +
                   os.environ.get("PYTHONPATH", "").split(os.pathsep)))
    child = subprocess.run([sys.executable, "-c", code, entry, PIPELINE],
                           input=source, text=True, capture_output=True,
                           env=env, timeout=300)
    return child.returncode == 0


@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_result_is_also_saved(dim):
    # @main_forward returns the softmax's output twice (the result, and
    # saved for softmax_grad): lamina-distinct-results gives it two buffers.
    shape = (6, 10)
    source = softmax_ir(shape, dim, then_linear=False)
    ir = lamina._lamina.transform_ir(source, "", "lamina-generate-backward")
    assert compiles_in_child(ir, "main_forward")
    pair = Pair(source)
    assert pair.saved == 1
    rng = np.random.default_rng(32 + dim)
    check_against_torch(pair, [randn(rng, *shape, scale=2.0)],
                        lambda x: (torch.softmax(x, dim=dim),), seed=33)


# --- dropout in train mode -------------------------------------------------

def test_dropout_train_mode():
    rows, k, n, p, offset, seed = 12, 32, 48, 0.25, 5, 1234
    x_t, w_t = tensor((rows, k), "f32"), tensor((n, k), "f32")
    b_t, y_t = tensor((n,), "f32"), tensor((rows, n), "f32")
    source = f"""
func.func @main(%x: {x_t}, %w: {w_t}, %b: {b_t}, %s: i64) -> {y_t} {{
  %y = lamina.linear_dropout "fc" %x, %w bias %b dropout <p = {p}, training, offset = {offset}> seed %s
      : ({x_t}, {w_t}, {b_t}, i64) -> {y_t}
  %r = lamina.activation relu %y : {y_t}
  return %r : {y_t}
}}
"""
    keep = torch.from_numpy(philox.keep_mask((rows, n), p, seed, offset))
    scale = float(np.float32(1.0 / (1.0 - p)))
    assert 0.6 < keep.float().mean() < 0.9

    def reference(x, w, b, s):
        z = F.linear(x, w, b)
        return (F.relu(torch.where(keep, z * scale, torch.zeros_like(z))),)

    rng = np.random.default_rng(40)
    args = [randn(rng, rows, k), randn(rng, n, k, scale=k ** -0.5),
            randn(rng, n), np.array(seed, dtype=np.int64)]
    pair = Pair(source)
    assert pair.gradients == [0, 1, 2]
    check_against_torch(pair, args, reference, seed=41)


# --- fused QKV --------------------------------------------------------------

def test_fused_qkv():
    rows, hidden, heads = 6, 32, 4
    hd = hidden // heads
    x_t, w_t = tensor((rows, hidden), "f32"), tensor((3 * hidden, hidden), "f32")
    b_t, o_t = tensor((3 * hidden,), "f32"), tensor((rows, heads, hd), "f32")
    source = f"""
func.func @main(%x: {x_t}, %w: {w_t}, %b: {b_t}) -> ({o_t}, {o_t}, {o_t}) {{
  %q, %k, %v = lamina.fused_qkv "qkv" %x, %w bias %b num_heads {heads} world_size 1
      : ({x_t}, {w_t}, {b_t}) -> ({o_t}, {o_t}, {o_t})
  return %q, %k, %v : {o_t}, {o_t}, {o_t}
}}
"""

    def reference(x, w, b):
        # Feature f = (h·hd + d)·3 + t (the op's spec).
        qkv = F.linear(x, w, b).reshape(rows, heads, hd, 3)
        return tuple(qkv[..., t] for t in range(3))

    rng = np.random.default_rng(50)
    args = [randn(rng, rows, hidden),
            randn(rng, 3 * hidden, hidden, scale=hidden ** -0.5),
            randn(rng, 3 * hidden)]
    pair = Pair(source, num_results=3)
    check_against_torch(pair, args, reference, seed=51)


# --- slices, concatenation and sums -----------------------------------------

SLICES_IR = """
func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x3xf32> {
  %s = tensor.extract_slice %x[0, 2] [4, 3] [1, 2] : tensor<4x8xf32> to tensor<4x3xf32>
  %c = tensor.concat dim(1) %s, %y : (tensor<4x3xf32>, tensor<4x8xf32>) -> tensor<4x11xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.reduce ins(%c : tensor<4x11xf32>) outs(%f : tensor<4xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %a = arith.addf %in, %acc : f32
      linalg.yield %a : f32
    }
  %row = tensor.expand_shape %r [[0, 1]] output_shape [4, 1] : tensor<4xf32> into tensor<4x1xf32>
  %t = tensor.insert_slice %row into %s[0, 1] [4, 1] [1, 1] : tensor<4x1xf32> into tensor<4x3xf32>
  %out = arith.mulf %t, %s : tensor<4x3xf32>
  return %out : tensor<4x3xf32>
}
"""


def test_slices_concatenation_and_sums():
    """extract_slice (strided), concat, a linalg.reduce sum and insert_slice
    (which overwrites part of its destination) against torch."""
    def reference(x, y):
        s = x[:, 2:8:2]
        r = torch.cat([s, y], dim=1).sum(dim=1, keepdim=True)
        t = torch.cat([s[:, :1], r, s[:, 2:]], dim=1)
        return (t * s,)

    rng = np.random.default_rng(21)
    pair = Pair(SLICES_IR)
    assert pair.saved == 2  # t and s: sizes come from the static types
    check_against_torch(pair, [randn(rng, 4, 8), randn(rng, 4, 8)], reference)


def test_max_reduction_has_no_rule():
    source = SLICES_IR.replace("%a = arith.addf %in, %acc", "%a = arith.maximumf %in, %acc")
    with pytest.raises(ValueError, match="backward is generated for sums"):
        lamina._lamina.transform_ir(source, "", "lamina-generate-backward")
