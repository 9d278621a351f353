"""lamina.create_schedule / build / verify on PyTorch models: the imported
and compiled programs against eager PyTorch, every primitive, transform
scripts replayed by lamina-opt, and clear errors for misuse."""

import re
import subprocess
import sys

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lamina
from lamina import ScheduleError, UnsupportedOperationError
from lamina.tools import build_dir, tool


class MLP(nn.Module):
    """GPT-2's MLP: fc_in, GELU (tanh), fc_out, residual dropout."""

    def __init__(self, hidden=64, inter=256, p=0.1):
        super().__init__()
        self.fc_in = nn.Linear(hidden, inter)
        self.act = nn.GELU(approximate="tanh")
        self.fc_out = nn.Linear(inter, hidden)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        return self.dropout(self.fc_out(self.act(self.fc_in(x))))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = MLP()

    def forward(self, x):
        return x + self.mlp(x)


class Attention(nn.Module):
    """Slapo's FusedQKV, heads as a batch dim, the output projection."""

    def __init__(self, hidden=64, heads=4, world_size=1):
        super().__init__()
        self.qkv = lamina.op.FusedQKV(hidden, heads, world_size)
        self.out_proj = nn.Linear(hidden, hidden)

    def forward(self, x):
        q, k, v = self.qkv(x)
        mix = q + k + v  # element-wise, head by head
        merged = mix.reshape(x.shape[0], x.shape[1], 64)
        return self.out_proj(merged)


def inputs(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_block_matches_eager():
    torch.manual_seed(0)
    model = Block().eval()
    x = inputs(2, 16, 64)
    sch = lamina.create_schedule(model, example_inputs=(x,))
    compiled = lamina.build(sch, (x,))
    torch.testing.assert_close(compiled(x), model(x))
    assert lamina.verify(sch, (x,))


def test_imported_ir_has_module_paths():
    model = Block().eval()
    x = inputs(2, 8, 64)
    text = lamina.create_schedule(model).mlir((x,))
    assert 'lamina.linear "mlp.fc_in"' in text
    assert 'lamina.activation "mlp.act" gelu_tanh' in text
    assert 'lamina.dropout "mlp.dropout"' in text
    assert "arith.addf" in text


def test_slapo_classes_and_functions_match_eager():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = lamina.op.LinearWithAct(32, 64)
            self.b = lamina.op.LinearWithSeparateBias(64, 64)
            self.c = lamina.op.LinearWithSyncFunc(64, 32, bias=False)
            self.d = lamina.op.LinearWithDropout(32, 32, p=0.3)

        def forward(self, x):
            h = F.relu(self.b(self.a(x)))
            h = F.gelu(self.c(h))  # erf GELU
            return self.d(h).transpose(0, 1).contiguous()

    model = Model().eval()
    x = inputs(4, 6, 32, seed=1)
    compiled = lamina.build(lamina.create_schedule(model), (x,))
    torch.testing.assert_close(compiled(x), model(x))


def test_numpy_in_numpy_out_and_new_shapes_recompile():
    model = Block().eval()
    x = inputs(2, 8, 64)
    compiled = lamina.build(lamina.create_schedule(model), (x,))
    y = compiled(x.numpy())
    assert isinstance(y, np.ndarray)
    np.testing.assert_allclose(y, model(x).detach().numpy(), rtol=1.3e-6,
                               atol=1e-5)
    x2 = inputs(3, 5, 64, seed=2)
    torch.testing.assert_close(compiled(x2), model(x2))


def test_fused_qkv_attention_returns_like_the_model():
    model = Attention().eval()
    x = inputs(2, 16, 64, seed=3)
    compiled = lamina.build(lamina.create_schedule(model), (x,))
    torch.testing.assert_close(compiled(x), model(x))
    qkv_only = lamina.build(lamina.create_schedule(model.qkv), (x,))
    q, k, v = qkv_only(x)
    for got, want in zip((q, k, v), model.qkv(x)):
        torch.testing.assert_close(got, want)


def test_dropout_draws_fresh_masks_per_call_and_replays_after_reseeding():
    model = Block().train()
    x = inputs(4, 16, 64, seed=4)
    compiled = lamina.build(lamina.create_schedule(model), (x,))
    lamina.manual_seed(1)
    a = compiled(x)
    b = compiled(x)
    lamina.manual_seed(1)
    a_again, b_again = compiled(x), compiled(x)
    torch.manual_seed(1)  # the same generator as lamina.manual_seed's
    a_torch = compiled(x)
    lamina.manual_seed(2)
    c = compiled(x)
    torch.testing.assert_close(a_again, a, rtol=0, atol=0)
    torch.testing.assert_close(b_again, b, rtol=0, atol=0)
    torch.testing.assert_close(a_torch, a, rtol=0, atol=0)
    for y in (a, b, c):
        dropped = (y == x)  # a dropped MLP output leaves the residual alone
        assert 0.05 < dropped.float().mean() < 0.15
    assert not torch.equal(a == x, b == x)
    assert not torch.equal(a == x, c == x)
    lamina.manual_seed(0)


def test_stages_of_the_ir():
    model = Block().eval()
    x = inputs(2, 8, 64)
    sch = lamina.create_schedule(model, world_size=2, example_inputs=(x,))
    megatron(sch, "mlp.fc_in", "mlp.fc_out")
    compiled = lamina.build(sch, (x,))
    assert "lamina.layout" not in compiled.ir("imported")
    assert "#lamina.layout<S(0)>" in compiled.ir("scheduled")
    partitioned = compiled.ir("partitioned")
    assert "shard.all_reduce" in partitioned
    assert "tensor<128x64xf32>" in partitioned  # fc_in's block of rows
    assert "llvm.func @forward" in compiled.ir("lowered")
    with pytest.raises(ValueError, match="unknown stage"):
        compiled.ir("optimized")
    # Built anywhere; called only in a world of two ranks.
    with pytest.raises(ValueError, match="built for 2 ranks but runs in an "
                       "MPI world of 1"):
        compiled(x)


def megatron(sch, first, second):
    """Megatron-LM tensor parallelism of two layers: `first` column-parallel
    (weight and bias split by rows, its backward pass all-reduced),
    `second` row-parallel with its partial sums all-reduced."""
    sch[first].shard("weight", 0)
    sch[first].shard("bias", 0)
    sch[first].sync("bwd_post", "all_reduce")
    sch[second].shard("weight", 1)
    sch[second].sync("fwd_post", "all_reduce")


def test_transform_script_replays_to_the_same_ir(tmp_path):
    model = Block().eval()
    x = inputs(2, 8, 64)
    sch = lamina.create_schedule(model, world_size=2, example_inputs=(x,))
    megatron(sch, "mlp.fc_in", "mlp.fc_out")
    sch.find(r"mlp\.fc_.*").checkpoint()
    sch["mlp.fc_in"].annotate("weight", "tied", False)
    (tmp_path / "model.mlir").write_text(sch.mlir())
    (tmp_path / "schedule.mlir").write_text(sch.transform_script())
    replayed = subprocess.run(
        [tool("lamina-opt"), str(tmp_path / "model.mlir"),
         "--lamina-record-module-paths",
         "--transform-preload-library=transform-library-paths="
         f"{tmp_path / 'schedule.mlir'}", "--transform-interpreter"],
        capture_output=True, text=True, check=True).stdout
    (tmp_path / "python.mlir").write_text(sch.scheduled_ir())
    python_path = subprocess.run(
        [tool("lamina-opt"), str(tmp_path / "python.mlir")],
        capture_output=True, text=True, check=True).stdout
    assert replayed == python_path
    assert "lamina.checkpoint" in replayed and "tied = false" in replayed


def test_every_primitive_has_its_effect():
    model = Block().eval()
    x = inputs(2, 8, 64)
    sch = lamina.create_schedule(model, example_inputs=(x,))
    sch["mlp.fc_in"].decompose()
    sch["mlp.fc_out"].fuse()
    sch["mlp.fc_out"].cut_pipeline_stage()
    text = sch.scheduled_ir()
    assert 'lamina.linear_separate_bias "mlp.fc_in"' in text
    assert 'lamina.fused_linear "mlp.fc_out"' in text
    assert "lamina.pipeline_cut" in text
    compiled = lamina.build(sch, (x,))
    torch.testing.assert_close(compiled(x), model(x))


def test_replace_with_lns_layer():
    model = Block().eval()
    x = inputs(2, 8, 64)
    sch = lamina.create_schedule(model, example_inputs=(x,))
    sch["mlp.fc_out"].replace(lamina.lns.LNSLinear(256, 64, weight_f=16))
    text = sch.scheduled_ir()
    assert "!lns.num<f = 16>" in text
    y = lamina.build(sch, (x,))(x)
    # f = 16 keeps about 5 significant digits per product.
    torch.testing.assert_close(y, model(x), rtol=1e-3, atol=1e-3)


def test_misuse_raises_schedule_errors():
    model = Block().eval()
    x = inputs(2, 8, 64)
    sch = lamina.create_schedule(model, world_size=2, example_inputs=(x,))
    with pytest.raises(ScheduleError, match="no module 'mlp.fc3'"):
        sch["mlp.fc3"]
    with pytest.raises(ScheduleError, match="no module path matches"):
        sch.find(r"attn\..*")
    with pytest.raises(ScheduleError, match="axis 2 is out of range for the "
                       "weight of rank 2"):
        sch["mlp.fc_in"].shard("weight", 2)
    sch["mlp.fc_in"].shard("weight", 0)
    with pytest.raises(ScheduleError, match="weight is already sharded on "
                       "axis 0; sharding a parameter twice is an error"):
        sch["mlp.fc_in"].shard("weight", 1)
    with pytest.raises(ScheduleError, match="a Python callable cannot be "
                       "compiled"):
        sch["mlp.fc_in"].sync("fwd_post", lambda t: t)
    with pytest.raises(ScheduleError, match="decompose must come before "
                       "shard"):
        sch["mlp.fc_in"].decompose()
    with pytest.raises(ScheduleError, match="not divisible by the world size"):
        _shard_odd()
    # The failed primitives left no trace: the script shards once.
    assert sch.transform_script().count("transform.lamina.shard") == 1


def _shard_odd():
    class One(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 5)

        def forward(self, x):
            return self.fc(x)

    sch = lamina.create_schedule(One(), world_size=2,
                                 example_inputs=(inputs(2, 8),))
    sch["fc"].shard("weight", 0)


def test_sync_on_the_wrong_layout():
    model = Block().eval()
    x = inputs(2, 8, 64)
    sch = lamina.create_schedule(model, world_size=2, example_inputs=(x,))
    sch["mlp.fc_in"].shard("weight", 0).shard("bias", 0)
    # fc_in's output is sharded, not partial: an all-reduce is illegal.
    with pytest.raises(ScheduleError, match=r"sync #lamina.sync<fwd_post, "
                       r"all_reduce> needs partial sums \(P\), but the layer's "
                       r"output has layout #lamina.layout<S\(2\)>"):
        sch["mlp.fc_in"].sync("fwd_post", "all_reduce")
    # Where only the whole program fixes the layout, build rejects it:
    # the GELU's output (sharded) gathered on the wrong axis.
    without_shapes = lamina.create_schedule(model, world_size=2)
    without_shapes["mlp.fc_in"].shard("weight", 0).shard("bias", 0)
    without_shapes["mlp.fc_out"].sync("fwd_pre", "all_gather", axis=1)
    with pytest.raises(ScheduleError, match=r"needs a value sharded on axis "
                       r"1, but its input has layout #lamina.layout<S\(2\)>"):
        lamina.build(without_shapes, (x,))


def test_missing_all_reduce_is_rejected_at_build():
    model = Block().eval()
    x = inputs(2, 8, 64)
    sch = lamina.create_schedule(model, world_size=2, example_inputs=(x,))
    sch["mlp.fc_in"].shard("weight", 0).shard("bias", 0)
    sch["mlp.fc_out"].shard("weight", 1)
    with pytest.raises(ScheduleError, match="adds its bias to partial sums"):
        lamina.build(sch, (x,))


def test_unsupported_operations_name_the_op_and_module():
    class Norm(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm1d(16)
            self.fc = nn.Linear(16, 16)

        def forward(self, x):
            return self.fc(self.bn(x))

    class Cumsum(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Sequential(nn.Linear(16, 16))

        def forward(self, x):
            return torch.cumsum(self.inner(x), dim=-1)

    x = inputs(2, 16)
    with pytest.raises(UnsupportedOperationError,
                       match="BatchNorm1d 'bn' in module 'bn'"):
        lamina.create_schedule(Norm().eval(), example_inputs=(x,))
    with pytest.raises(UnsupportedOperationError,
                       match="LayerNorm '0' over more than the last dim"):
        lamina.create_schedule(nn.Sequential(nn.LayerNorm((4, 16))),
                               example_inputs=(inputs(2, 4, 16),))
    with pytest.raises(UnsupportedOperationError,
                       match="function cumsum in the model's forward"):
        lamina.create_schedule(Cumsum(), example_inputs=(x,))
    with pytest.raises(UnsupportedOperationError, match="Python sync_fn"):
        lamina.create_schedule(
            lamina.op.LinearWithSyncFunc(16, 16, sync_fn=lambda t: t),
            example_inputs=(x,))


def test_rank_and_world_size_outside_mpirun():
    assert lamina.rank() == 0
    assert lamina.world_size() == 1


MEGATRON_SCRIPT = """
import sys
sys.path.insert(0, {python!r})
sys.path.insert(0, {tests!r})
import torch, lamina
from test_schedule_api import Block, Attention, inputs, megatron
torch.manual_seed(0)
model = Block().eval()
x = inputs(2, 16, 64)
sch = lamina.create_schedule(model, world_size=2, example_inputs=(x,))
megatron(sch, "mlp.fc_in", "mlp.fc_out")
assert lamina.world_size() == 2
lamina.verify(sch, (x,))
y = lamina.build(sch, (x,))(x)
torch.testing.assert_close(y, model(x))

attention = Attention(world_size=2).eval()
asch = lamina.create_schedule(attention, world_size=2, example_inputs=(x,))
megatron(asch, "qkv", "out_proj")
lamina.verify(asch, (x,))
print(f"rank {{lamina.rank()}} of {{lamina.world_size()}} ok", flush=True)
"""


@pytest.mark.ranks
def test_megatron_from_python_on_two_ranks(tmp_path):
    script = tmp_path / "megatron.py"
    script.write_text(MEGATRON_SCRIPT.format(
        python=str(build_dir() / "python"),
        tests=str(__import__("pathlib").Path(__file__).parent)))
    completed = subprocess.run(
        ["mpirun.mpich", "-np", "2", sys.executable, str(script)],
        capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "rank 0 of 2 ok" in completed.stdout
    assert "rank 1 of 2 ok" in completed.stdout


def test_fork_rng_from_python():
    layer = lamina.op.LinearWithDropout(16, 32, p=0.2)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = layer

        def forward(self, x):
            return self.fc(x)

    x = inputs(4, 16)
    sch = lamina.create_schedule(Model().train(), world_size=2,
                                 example_inputs=(x,))
    with pytest.raises(ScheduleError, match="fork_rng on a replicated value"):
        sch["fc"].fork_rng()
    sch["fc"].shard("weight", 0).shard("bias", 0).fork_rng()
    assert "fork_rng" in sch.scheduled_ir()
    # Column parallel alone: the input's gradient would be partial sums,
    # rejected when a call asks for it; the parameters' gradients are right
    # (training_on_ranks.py runs both on 2 ranks).
    scheduled = lamina._lamina.Module(sch.scheduled_ir())
    lamina.training.check_gradient_layouts(scheduled, constants=[0])
    with pytest.raises(ScheduleError, match="add sync"):
        lamina.training.check_gradient_layouts(scheduled)
    with torch.no_grad():
        partitioned = lamina.build(sch, (x,)).ir("partitioned")
    assert "fork_rng> seed" in partitioned and "rank %" in partitioned


class GPT2Attention(nn.Module):
    """LayerNorm, FusedQKV, scaled dot-product attention with softmax, the
    output projection and the residual, as GPT-2 computes them."""

    def __init__(self, hidden=64, heads=4):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)
        self.qkv = lamina.op.FusedQKV(hidden, heads, 1)
        self.out_proj = nn.Linear(hidden, hidden)
        self.scale = (hidden // heads) ** -0.5

    def forward(self, x):
        q, k, v = self.qkv(self.ln(x))
        q = q.permute(0, 2, 1, 3)
        k = k.permute(0, 2, 3, 1)
        v = v.permute(0, 2, 1, 3)
        weights = torch.matmul(q, k) * self.scale
        probs = weights.softmax(dim=-1)
        heads = torch.matmul(probs, v).permute(0, 2, 1, 3)
        merged = heads.reshape(x.shape[0], x.shape[1], 64)
        return x + self.out_proj(merged)


def test_gpt2_attention_with_layer_norm_and_softmax():
    model = GPT2Attention().eval()
    with torch.no_grad():  # a LayerNorm with non-trivial affine parameters
        model.ln.weight.uniform_(0.5, 1.5)
        model.ln.bias.uniform_(-0.5, 0.5)
    x = inputs(2, 8, 64, seed=9)
    sch = lamina.create_schedule(model, example_inputs=(x,))
    text = sch.mlir()
    assert re.search(r"lamina\.softmax %v\d+ dim 3 : tensor<2x4x8x8xf32>",
                     text)
    assert 'lamina.layer_norm "ln" %x0 weight %p0 bias %p1 eps 1.0e-05' in text
    assert "linalg.batch_matmul" in text
    compiled = lamina.build(sch, (x,))
    torch.testing.assert_close(compiled(x), model(x))


def test_layer_norm_without_affine_and_scaled_matrices():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln = nn.LayerNorm(32, elementwise_affine=False, eps=1e-3)

        def forward(self, x, y):
            return F.softmax(torch.matmul(self.ln(x), y) / 4.0, dim=0)

    x, y = inputs(6, 32, seed=10), inputs(32, 5, seed=11)
    model = Model().eval()
    compiled = lamina.build(lamina.create_schedule(model), (x, y))
    torch.testing.assert_close(compiled(x, y), model(x, y))


WORLD_SIZE_SCRIPT = """
import sys
sys.path.insert(0, {python!r})
import torch
from torch import nn
import lamina
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16)).eval()
x = torch.randn(4, 16)
assert lamina.create_schedule(model).world_size == 2  # the launched world
assert lamina.create_schedule(model, world_size=1).world_size == 1
with torch.no_grad():
    torch.testing.assert_close(
        lamina.build(lamina.create_schedule(model, world_size=1), (x,))(x),
        model(x))
try:
    lamina.create_schedule(model, world_size=4)
except lamina.ScheduleError as error:
    assert "world_size=4 in an MPI world of 2 ranks" in str(error), error
else:
    raise AssertionError("world_size=4 under mpirun -np 2 was accepted")
print(f"rank {{lamina.rank()}}: world sizes ok", flush=True)
"""


@pytest.mark.ranks
def test_world_size_defaults_to_the_launched_world(tmp_path):
    script = tmp_path / "world_size.py"
    script.write_text(WORLD_SIZE_SCRIPT.format(
        python=str(build_dir() / "python")))
    completed = subprocess.run(
        ["mpirun.mpich", "-np", "2", sys.executable, str(script)],
        capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    for rank in (0, 1):
        assert f"rank {rank}: world sizes ok" in completed.stdout


def test_world_size_outside_mpirun():
    model = nn.Linear(16, 16)
    assert lamina.create_schedule(model).world_size == 1
    # A schedule for more ranks can be built and inspected here.
    assert lamina.create_schedule(model, world_size=2).world_size == 2
    for bad in (1.5, "2", True):
        with pytest.raises(ScheduleError, match="world_size must be an "
                           "integer"):
            lamina.create_schedule(model, world_size=bad)
