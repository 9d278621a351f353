"""Tensor and pipeline parallelism on MPI ranks (mpirun.mpich, 2 and 4
ranks): every schedule of examples/ computes, on every rank, what the
unsharded program computes on the same full weights (PyTorch's default fp32
tolerance), and dropout masks follow the spec's rules."""

import pathlib
import subprocess

import numpy as np
import pytest
import torch

from lamina.tools import run_ir_on_ranks, tool

# Each test launches MPI ranks: run in the serial pass (test/CMakeLists.txt).
pytestmark = pytest.mark.ranks

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"
SEED = ("i64", 11)


def linear_parameters(in_features, out_features, generator):
    """Weights drawn as nn.Linear draws them: U(±1/sqrt(in_features))."""
    bound = 1.0 / np.sqrt(in_features)
    weight = torch.empty(out_features, in_features).uniform_(
        -bound, bound, generator=generator)
    bias = torch.empty(out_features).uniform_(-bound, bound,
                                              generator=generator)
    return weight.numpy(), bias.numpy()


def mlp_inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 16, 64, generator=g).numpy()
    w_in, b_in = linear_parameters(64, 256, g)
    w_out, b_out = linear_parameters(256, 64, g)
    return [x, w_in, b_in, w_out, b_out, SEED]


def attention_inputs(seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 16, 64, generator=g).numpy()
    w_qkv, b_qkv = linear_parameters(64, 192, g)
    w_out, b_out = linear_parameters(64, 64, g)
    return [x, w_qkv, b_qkv, w_out, b_out]


def block(array, axis, rank, ranks):
    return np.split(array, ranks, axis=axis)[rank]


def unsharded(ir_path, inputs, entry, tmp_path):
    (result,) = run_ir_on_ranks(1, ir_path, inputs, tmp_path / "whole",
                                entry=entry)[0]
    return result


def sharded(ranks, ir_path, inputs, entry, schedule, tmp_path):
    """Per rank, the results of `ir_path` scheduled for `ranks` ranks."""
    return run_ir_on_ranks(ranks, ir_path, inputs, tmp_path / "ranks",
                           entry=entry, schedule=EXAMPLES / schedule,
                           world_size=ranks)


def assert_close(actual, expected):
    torch.testing.assert_close(torch.from_numpy(actual),
                               torch.from_numpy(expected))


@pytest.mark.parametrize("ranks", [2, 4])
def test_megatron_mlp(ranks, tmp_path):
    ir = EXAMPLES / "gpt2_mlp.mlir"
    inputs = mlp_inputs()
    whole = unsharded(ir, inputs, "mlp", tmp_path)
    outputs = sharded(ranks, ir, inputs, "mlp", "megatron_mlp.schedule.mlir",
                      tmp_path)
    for (result,) in outputs:
        assert_close(result, whole)
    # The dropout acts on the all-reduced (replicated) value: the same mask
    # on every rank, the unsharded one.
    for (result,) in outputs:
        np.testing.assert_array_equal(result == 0, whole == 0)
        np.testing.assert_array_equal(result, outputs[0][0])
    assert 0.05 < (whole == 0).mean() < 0.15


def mlp_on_grid(path, grid):
    """The GPT-2 MLP example declared on the device grid `grid` (the text of
    a lamina.grid dictionary) instead of its world size, written to
    `path`."""
    text = (EXAMPLES / "gpt2_mlp.mlir").read_text()
    declared = "module attributes {lamina.world_size = 2 : i64}"
    assert declared in text
    path.write_text(text.replace(
        declared, f"module attributes {{lamina.grid = {grid}}}"))
    return path


def test_megatron_mlp_on_a_data_and_tensor_grid(tmp_path):
    """The MLP declared on a grid of 2 data replicas × 2 tensor ranks
    (lamina.grid), run on 4 ranks: the all-reduce of each replica's program
    runs over its tensor axis alone (over the world it would sum 4 partial
    products, twice the layer), so every rank's result and gradient blocks
    are the unsharded program's."""
    ir = mlp_on_grid(tmp_path / "mlp_grid.mlir", "{dp = 2, tp = 2}")
    inputs = mlp_inputs()
    dy = tmp_path / "dy.npy"
    np.save(dy, torch.randn(2, 16, 64, generator=torch.Generator()
                            .manual_seed(3)).numpy())
    extra = ["--backward", f"--cotangent={dy}"]
    whole = unsharded(EXAMPLES / "gpt2_mlp.mlir", inputs, "mlp", tmp_path)
    (gradients,) = run_ir_on_ranks(1, EXAMPLES / "gpt2_mlp.mlir", inputs,
                                   tmp_path / "whole_backward", entry="mlp",
                                   world_size=1, extra=extra)
    schedule = EXAMPLES / "megatron_mlp.schedule.mlir"
    outputs = run_ir_on_ranks(4, ir, inputs, tmp_path / "grid", entry="mlp",
                              schedule=schedule)
    for (result,) in outputs:
        assert_close(result, whole)
    backward = run_ir_on_ranks(4, ir, inputs, tmp_path / "grid_backward",
                               entry="mlp", schedule=schedule, extra=extra)
    axes = [None, 0, 0, 1, None]  # x, w_in, b_in, w_out, b_out
    for rank, blocks in enumerate(backward):
        for gradient, expected, axis in zip(blocks, gradients, axes):
            if axis is not None:
                expected = block(expected, axis, rank % 2, 2)
            assert_close(gradient, expected)


def test_grid_needs_its_world(tmp_path):
    """A module declaring a grid of 4 ranks, run as one process: lamina-run
    names the sizes and the launch it needs; a grid axis other than dp, pp
    and tp is named."""
    def run_alone(grid):
        ir = mlp_on_grid(tmp_path / "mlp_grid.mlir", grid)
        completed = subprocess.run(
            [tool("lamina-run"), str(ir), "--entry=mlp", "--random-inputs"],
            capture_output=True, text=True)
        assert completed.returncode != 0
        return completed.stderr

    assert "the module's grid has 4 ranks but the MPI world has 1; launch " \
        "it with `mpirun.mpich -np 4`" in run_alone("{dp = 2, tp = 2}")
    # An axis the runtime has no communicator for.
    assert "the module's grid has an axis 'ep'; lamina-run runs grids of " \
        "the axes dp, pp and tp" in run_alone("{ep = 2, tp = 2}")


@pytest.mark.parametrize("ranks", [2, 4])
def test_megatron_mlp_backward(ranks, tmp_path):
    """lamina-run --backward: each rank's gradient blocks are the unsharded
    program's (the same dropout masks), the input gradient whole."""
    ir = EXAMPLES / "gpt2_mlp.mlir"
    inputs = mlp_inputs()
    dy = tmp_path / "dy.npy"
    np.save(dy, torch.randn(2, 16, 64, generator=torch.Generator()
                            .manual_seed(3)).numpy())
    extra = ["--backward", f"--cotangent={dy}"]
    (whole,) = run_ir_on_ranks(1, ir, inputs, tmp_path / "whole", entry="mlp",
                               world_size=1, extra=extra)
    assert [g.shape for g in whole] == [a.shape for a in inputs[:5]]
    outputs = run_ir_on_ranks(
        ranks, ir, inputs, tmp_path / "ranks", entry="mlp",
        schedule=EXAMPLES / "megatron_mlp.schedule.mlir", world_size=ranks,
        extra=extra)
    axes = [None, 0, 0, 1, None]  # x, w_in, b_in, w_out, b_out
    for rank, gradients in enumerate(outputs):
        for gradient, expected, axis in zip(gradients, whole, axes):
            if axis is not None:
                expected = block(expected, axis, rank, ranks)
            assert_close(gradient, expected)
    assert len(outputs) == ranks and whole[1].any()


@pytest.mark.parametrize("ranks", [2, 4])
def test_sequence_parallel_mlp(ranks, tmp_path):
    ir = EXAMPLES / "gpt2_mlp.mlir"
    inputs = mlp_inputs(1)
    whole = unsharded(ir, inputs, "mlp", tmp_path)
    outputs = sharded(ranks, ir, inputs, "mlp",
                      "sequence_parallel_mlp.schedule.mlir", tmp_path)
    # Each rank holds its block of the tokens; its dropout mask is that
    # block of the unsharded mask.
    for rank, (result,) in enumerate(outputs):
        expected = block(whole, 1, rank, ranks)
        assert result.shape == expected.shape
        assert_close(result, expected)
        np.testing.assert_array_equal(result == 0, expected == 0)


@pytest.mark.parametrize("ranks", [2, 4])
def test_megatron_attention(ranks, tmp_path):
    ir = EXAMPLES / "gpt2_attention.mlir"
    inputs = attention_inputs(2)
    whole = unsharded(ir, inputs, "attention", tmp_path)
    outputs = sharded(ranks, ir, inputs, "attention",
                      "megatron_attention.schedule.mlir", tmp_path)
    for (result,) in outputs:
        assert_close(result, whole)


def test_attention_matches_eager_pytorch(tmp_path):
    """The unsharded attention projections themselves follow Slapo's
    FusedQKV (interleaved q, k, v per head)."""
    x, w_qkv, b_qkv, w_out, b_out = attention_inputs(3)
    whole = unsharded(EXAMPLES / "gpt2_attention.mlir",
                      [x, w_qkv, b_qkv, w_out, b_out], "attention", tmp_path)
    qkv = torch.from_numpy(x) @ torch.from_numpy(w_qkv).T + torch.from_numpy(b_qkv)
    q, k, v = qkv.view(2, 16, 4, 16, 3).unbind(-1)
    mix = (q * k + v).reshape(2, 16, 64)
    expected = mix @ torch.from_numpy(w_out).T + torch.from_numpy(b_out)
    assert_close(whole, expected.numpy())


def test_pipeline_two_stages(tmp_path):
    inputs = mlp_inputs(4)
    ir = EXAMPLES / "gpt2_mlp.mlir"
    whole = unsharded(ir, inputs, "mlp", tmp_path)
    outputs = run_ir_on_ranks(2, ir, inputs, tmp_path / "pp", entry="mlp",
                              schedule=EXAMPLES / "pipeline_mlp.schedule.mlir")
    # Every rank gets the last stage's result; stages compute exactly what
    # the unsplit program does.
    for (result,) in outputs:
        np.testing.assert_array_equal(result, whole)


def test_pipeline_four_stages(tmp_path):
    """Four stages on four ranks; the residual %h0 travels from rank 0
    through rank 2 to rank 3."""
    ir = EXAMPLES / "mlp_stack.mlir"
    g = torch.Generator().manual_seed(5)
    inputs = [torch.randn(8, 32, generator=g).numpy()]
    inputs += [linear_parameters(32, 32, g)[0] for _ in range(4)]
    inputs.append(linear_parameters(32, 32, g)[1])
    whole = unsharded(ir, inputs, "stack", tmp_path)
    outputs = run_ir_on_ranks(4, ir, inputs, tmp_path / "pp4", entry="stack",
                              schedule=EXAMPLES / "pipeline_stack.schedule.mlir")
    for (result,) in outputs:
        np.testing.assert_array_equal(result, whole)


DROPOUT = """module attributes {lamina.world_size = 2 : i64} {
  func.func @drop(%x: tensor<16x64xf32>, %w: tensor<256x64xf32>, %b: tensor<256xf32>, %seed: i64) -> tensor<16x256xf32> {
    %y = lamina.linear_dropout "fc" %x, %w bias %b dropout <p = 0.5, training> seed %seed : (tensor<16x64xf32>, tensor<256x64xf32>, tensor<256xf32>, i64) -> tensor<16x256xf32>
    return %y : tensor<16x256xf32>
  }
}
"""

COLUMN_PARALLEL = """module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %fc = transform.lamina.match %root path "fc" : (!transform.any_op) -> !transform.any_op
    transform.lamina.shard %fc "weight" axis 0 : !transform.any_op
    transform.lamina.shard %fc "bias" axis 0 : !transform.any_op
    FORK
    transform.yield
  }
}
"""


def dropout_run(tmp_path, fork):
    ir = tmp_path / "drop.mlir"
    ir.write_text(DROPOUT)
    schedule = tmp_path / "schedule.mlir"
    schedule.write_text(COLUMN_PARALLEL.replace(
        "FORK", "transform.lamina.fork_rng %fc : !transform.any_op"
        if fork else ""))
    g = torch.Generator().manual_seed(6)
    x = torch.randn(16, 64, generator=g).numpy()
    w, b = linear_parameters(64, 256, g)
    inputs = [x, w, b, SEED]
    whole = unsharded(ir, inputs, "drop", tmp_path)
    outputs = run_ir_on_ranks(2, ir, inputs, tmp_path / "ranks", entry="drop",
                              schedule=schedule)
    return whole, [result for (result,) in outputs]


def test_sharded_dropout_is_the_unsharded_mask(tmp_path):
    whole, blocks = dropout_run(tmp_path, fork=False)
    for rank, result in enumerate(blocks):
        expected = block(whole, 1, rank, 2)
        np.testing.assert_array_equal(result == 0, expected == 0)
        assert_close(result, expected)


def test_fork_rng_keys_the_stream_by_rank(tmp_path):
    whole, blocks = dropout_run(tmp_path, fork=True)
    n = blocks[0].size
    masks = [result != 0 for result in blocks]
    for rank, mask in enumerate(masks):
        # Keep rate 1 - p within 5 binomial standard deviations.
        assert abs(mask.mean() - 0.5) < 5 * np.sqrt(0.25 / n)
        # Survivors are scaled by exactly 1 / (1 - p) = 2 of the unsharded
        # pre-dropout value: where both runs keep an element, they agree.
        expected = block(whole, 1, rank, 2)
        both = mask & (expected != 0)
        assert_close(blocks[rank][both], expected[both])
        # A different stream: the mask is not the unsharded block's.
        agreement = (mask == (expected != 0)).mean()
        assert abs(agreement - 0.5) < 5 * np.sqrt(0.25 / n)
    # Independent streams on the two ranks.
    agreement = (masks[0] == masks[1]).mean()
    assert abs(agreement - 0.5) < 5 * np.sqrt(0.25 / n)


def test_fork_rng_on_replicated_value_is_rejected(tmp_path):
    schedule = tmp_path / "fork.mlir"
    schedule.write_text("""module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %fc2 = transform.lamina.match %root path "h.0.mlp.fc_out" : (!transform.any_op) -> !transform.any_op
    transform.lamina.fork_rng %fc2 : !transform.any_op
    transform.yield
  }
}
""")
    completed = subprocess.run(
        [tool("lamina-run"), str(EXAMPLES / "gpt2_mlp.mlir"), "--entry=mlp",
         f"--schedule={schedule}", "--random-inputs"],
        capture_output=True, text=True)
    assert completed.returncode != 0
    assert "fork_rng on a replicated value" in completed.stderr


def test_megatron_without_fc2_all_reduce_is_rejected(tmp_path):
    schedule = tmp_path / "no_all_reduce.mlir"
    text = (EXAMPLES / "megatron_mlp.schedule.mlir").read_text()
    schedule.write_text(text.replace(
        'transform.lamina.sync %fc2 "fwd_post" "all_reduce" : !transform.any_op',
        ""))
    completed = subprocess.run(
        ["mpirun.mpich", "-np", "2", tool("lamina-run"),
         str(EXAMPLES / "gpt2_mlp.mlir"), "--entry=mlp",
         f"--schedule={schedule}", "--random-inputs"],
        capture_output=True, text=True)
    assert completed.returncode != 0
    assert "adds its bias to partial sums (layout P) of layer " \
        "'h.0.mlp.fc_out'" in completed.stderr


HALF_MLP = """module attributes {{lamina.world_size = 2 : i64}} {{
  func.func @mlp(%x: tensor<2x16x64x{t}>, %w_in: tensor<256x64x{t}>, %b_in: tensor<256x{t}>,
                 %w_out: tensor<64x256x{t}>, %b_out: tensor<64x{t}>, %seed: i64) -> tensor<2x16x64x{t}> {{
    %h = lamina.linear_act "h.0.mlp.fc_in" %x, %w_in bias %b_in activation gelu_tanh
        : (tensor<2x16x64x{t}>, tensor<256x64x{t}>, tensor<256x{t}>) -> tensor<2x16x256x{t}>
    %y = lamina.linear_dropout "h.0.mlp.fc_out" %h, %w_out bias %b_out
        dropout <p = 0.1, training> seed %seed
        : (tensor<2x16x256x{t}>, tensor<64x256x{t}>, tensor<64x{t}>, i64) -> tensor<2x16x64x{t}>
    return %y : tensor<2x16x64x{t}>
  }}
}}
"""


@pytest.mark.parametrize("element", ["bf16", "f16"])
@pytest.mark.parametrize("schedule", ["megatron_mlp.schedule.mlir",
                                      "sequence_parallel_mlp.schedule.mlir"])
def test_half_precision_collectives(element, schedule, tmp_path):
    """All-reduce, all-gather and reduce-scatter of bf16/f16 values (the
    runtime reduces them in f32): within half precision of the unsharded
    program, the dropout masks identical."""
    ir = tmp_path / f"mlp_{element}.mlir"
    ir.write_text(HALF_MLP.format(t=element))
    floats = mlp_inputs(7)
    if element == "bf16":  # bf16 travels as its raw 16 bits
        def to_element(a):
            bits = a.astype(np.float32).view(np.uint32)
            rounded = bits + 0x7FFF + ((bits >> 16) & 1)
            return (rounded >> 16).astype(np.uint16)

        def to_float(a):
            return (a.astype(np.uint32) << 16).view(np.float32)
    else:
        to_element, to_float = (lambda a: a.astype(np.float16),
                                lambda a: a.astype(np.float32))
    inputs = [to_element(a) for a in floats[:-1]] + [floats[-1]]
    whole = to_float(unsharded(ir, inputs, "mlp", tmp_path))
    outputs = sharded(2, ir, inputs, "mlp", schedule, tmp_path)
    scale = np.abs(whole).max()
    for rank, (result,) in enumerate(outputs):
        result = to_float(result)
        expected = whole if "megatron" in schedule else \
            block(whole, 1, rank, 2)
        assert np.abs(result - expected).max() <= 1e-2 * scale
        # The same mask: an element dropped in one run and kept in the other
        # would differ by a whole value; a kept value that rounds to zero
        # in one of them differs by less than the tolerance.
        differs = (result == 0) != (expected == 0)
        assert (np.abs(result - expected)[differs] <= 1e-3 * scale).all()
        assert differs.mean() < 1e-3
