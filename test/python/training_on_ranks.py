"""Training on MPI ranks, run by test_training_ranks.py under
`mpirun.mpich -np W`: `python3 training_on_ranks.py CHECK...`. Each check
compares one rank's gradients with the matching blocks of eager PyTorch's
(or, in train mode, of the unsharded compiled program's: the masks are
Lamina's), and prints "rank R: CHECK ok"."""

import copy
import sys

import torch
import torch.nn.functional as F
from torch import nn

import lamina
from test_training import GPT2Block

TOL = dict(rtol=1e-5, atol=1e-5)
RANK, WORLD = lamina.rank(), lamina.world_size()


def inputs(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


class MLP(nn.Module):
    """GPT-2's MLP with its residual and dropout."""

    def __init__(self, hidden=32, inter=64, p=0.1):
        super().__init__()
        self.fc_in = nn.Linear(hidden, inter)
        self.act = nn.GELU(approximate="tanh")
        self.fc_out = nn.Linear(inter, hidden)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        return x + self.dropout(self.fc_out(self.act(self.fc_in(x))))


class Attention(nn.Module):
    """Slapo's FusedQKV (heads sharded), a per-head mix, the output
    projection."""

    def __init__(self, hidden=32, heads=4, world_size=1):
        super().__init__()
        self.hidden = hidden
        self.qkv = lamina.op.FusedQKV(hidden, heads, world_size)
        self.out_proj = nn.Linear(hidden, hidden)

    def forward(self, x):
        q, k, v = self.qkv(x)
        mix = q + k + v + q  # q twice: its cotangents add up
        return self.out_proj(mix.reshape(x.shape[0], x.shape[1], self.hidden))


def megatron(sch, first, second):
    sch[first].shard("weight", 0).shard("bias", 0)
    sch[first].sync("bwd_post", "all_reduce")
    sch[second].shard("weight", 1).sync("fwd_post", "all_reduce")


def sequence_parallel(sch, first, second):
    sch[first].shard("input", 1).shard("weight", 0).shard("bias", 0)
    sch[first].sync("fwd_pre", "all_gather", axis=1)
    sch[second].shard("weight", 1)
    sch[second].sync("fwd_post", "reduce_scatter", axis=1)


def block_of(full, local):
    """This rank's block of `full` matching `local`'s shape."""
    for axis, (whole, part) in enumerate(zip(full.shape, local.shape)):
        if whole != part:
            assert whole == part * WORLD, (full.shape, local.shape)
            return full.narrow(axis, RANK * part, part)
    return full


def assert_gradients(compiled, reference, x, x_ref):
    ours = dict(compiled.named_parameters())
    assert set(ours) == {n for n, _ in reference.named_parameters()}
    for name, p in reference.named_parameters():
        assert ours[name].grad is not None, name
        torch.testing.assert_close(ours[name].grad, block_of(p.grad, ours[name]),
                                   **TOL, msg=lambda m: f"{name}: {m}")
    torch.testing.assert_close(x.grad, x_ref.grad, **TOL)


def seeded(make):
    """`make()` with the same random state on every rank: each rank holds
    the same model, of which it computes its blocks."""
    torch.manual_seed(0)
    return make()


def gradients_vs_eager(model, schedule, shape, loss=lambda y: y.square().sum(),
                       checkpoint=None):
    """Eval-mode gradients of a sharded schedule of `model` against eager."""
    eager = copy.deepcopy(model)
    x = inputs(*shape, seed=1).requires_grad_()
    sch = lamina.create_schedule(model, world_size=WORLD, example_inputs=(x,))
    schedule(sch)
    if checkpoint:
        sch[checkpoint].checkpoint()
    compiled = lamina.build(sch, (x,))
    y = compiled(x)
    axes = compiled.result_shard_axes()
    loss(y).backward()
    x_ref = x.detach().clone().requires_grad_()
    y_ref = eager(x_ref)
    if axes[0] is not None:  # this rank's block: the loss of every rank sums
        torch.testing.assert_close(y, torch.chunk(y_ref, WORLD, axes[0])[RANK])
    else:
        torch.testing.assert_close(y, y_ref)
    loss(y_ref).backward()
    assert_gradients(compiled, eager, x, x_ref)
    return compiled


def check_megatron_mlp():
    model = seeded(MLP).eval()
    compiled = gradients_vs_eager(
        model, lambda s: megatron(s, "fc_in", "fc_out"), (2, 8, 32))
    blocks = dict(compiled.named_parameters())
    assert blocks["fc_in.weight"].shape == (64 // WORLD, 32)
    assert blocks["fc_out.weight"].shape == (32, 64 // WORLD)
    assert blocks["fc_out.bias"] is model.fc_out.bias  # replicated: the model's
    # A new input shape compiles again with the same Parameter objects.
    before = {n: id(p) for n, p in compiled.named_parameters()}
    compiled(inputs(1, 4, 32)).sum().backward()
    assert before == {n: id(p) for n, p in compiled.named_parameters()}


def check_state_dict_of_blocks():
    # A sharded parameter stands under the model's key as this rank's block;
    # a whole (eager) checkpoint loads as this rank's blocks, and a rank's
    # own checkpoint loads back.
    model = seeded(MLP).eval()
    sch = lamina.create_schedule(model, world_size=WORLD)
    megatron(sch, "fc_in", "fc_out")
    x = inputs(2, 8, 32)
    compiled = lamina.build(sch, (x,))
    original = copy.deepcopy(model)
    state = {k: v.clone() for k, v in compiled.state_dict().items()}
    assert list(state) == list(model.state_dict())
    assert state["fc_in.weight"].shape == (64 // WORLD, 32)
    other = seeded(lambda: MLP().eval())
    with torch.no_grad():
        for p in other.parameters():
            p.mul_(-0.5)
    compiled.load_state_dict(other.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), other(x), **TOL)
    compiled.load_state_dict(state)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), original(x), **TOL)


def check_megatron_mlp_checkpointed():
    gradients_vs_eager(seeded(MLP).eval(), lambda s: megatron(s, "fc_in", "fc_out"),
                       (2, 8, 32), checkpoint="fc_in")


def check_sequence_parallel_mlp():
    gradients_vs_eager(seeded(MLP).eval(),
                       lambda s: sequence_parallel(s, "fc_in", "fc_out"),
                       (2, 8, 32))


class NormedMLP(nn.Module):
    """LayerNorm, then the MLP, with the residual around both."""

    def __init__(self, hidden=32, inter=64):
        super().__init__()
        self.ln = nn.LayerNorm(hidden)
        self.mlp = MLP(hidden, inter, p=0.0)
        with torch.no_grad():  # not the identity, so that its gradients show
            self.ln.weight.uniform_(0.5, 1.5)
            self.ln.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        return x + self.mlp(self.ln(x))


def check_sequence_parallel_layer_norm():
    # The LayerNorm runs on this rank's tokens: its replicated weight and
    # bias get partial gradients, which the compiled backward all-reduces
    # (assert_gradients compares them whole with eager's).
    def schedule(sch):
        sch["ln"].shard("input", 1)
        sch["mlp.fc_in"].shard("weight", 0).shard("bias", 0)
        sch["mlp.fc_in"].sync("fwd_pre", "all_gather", axis=1)
        sch["mlp.fc_out"].shard("weight", 1)
        sch["mlp.fc_out"].sync("fwd_post", "reduce_scatter", axis=1)
    compiled = gradients_vs_eager(seeded(NormedMLP).eval(), schedule,
                                  (2, 8, 32))
    blocks = dict(compiled.named_parameters())
    assert blocks["ln.weight"].shape == (32,)
    assert compiled.result_shard_axes() == [1]


def check_megatron_attention():
    model = seeded(lambda: Attention(world_size=WORLD)).eval()
    twin = Attention(world_size=1).eval()
    twin.load_state_dict(model.state_dict())
    x = inputs(2, 8, 32, seed=1).requires_grad_()
    sch = lamina.create_schedule(model, world_size=WORLD, example_inputs=(x,))
    megatron(sch, "qkv", "out_proj")
    compiled = lamina.build(sch, (x,))
    compiled(x).square().sum().backward()
    x_ref = x.detach().clone().requires_grad_()
    twin(x_ref).square().sum().backward()
    assert_gradients(compiled, twin, x, x_ref)


def check_dropout_in_train_mode():
    """Train mode: the gradients of each rank's blocks equal the unsharded
    compiled program's (the same Philox masks, keyed by element index)."""
    model = seeded(lambda: MLP(p=0.3)).train()
    x = inputs(2, 8, 32, seed=1).requires_grad_()
    runs = []
    for world, schedule in ((1, lambda s: None),
                            (WORLD, lambda s: megatron(s, "fc_in", "fc_out"))):
        sch = lamina.create_schedule(model, world_size=world,
                                     example_inputs=(x,))
        schedule(sch)
        compiled = lamina.build(sch, (x,))
        leaf = x.detach().clone().requires_grad_()
        lamina.manual_seed(5)
        y = compiled(leaf)
        y.square().sum().backward()
        runs.append((compiled, leaf, y))
    (whole, x1, y1), (sharded, x2, y2) = runs
    torch.testing.assert_close(y2, y1)
    assert (y1 - x == 0).any()  # some elements were dropped
    mine = dict(sharded.named_parameters())
    for name, p in whole.named_parameters():
        torch.testing.assert_close(mine[name].grad, block_of(p.grad, mine[name]),
                                   **TOL)
    torch.testing.assert_close(x2.grad, x1.grad, **TOL)


def check_block_with_megatron_mlp():
    """The block with its MLP Megatron-sharded (attention replicated):
    gradients and 5 AdamW steps against eager."""
    def make():
        block = GPT2Block()
        with torch.no_grad():  # LayerNorms with non-trivial parameters
            for ln in (block.ln_1, block.ln_2):
                ln.weight.uniform_(0.5, 1.5)
                ln.bias.uniform_(-0.5, 0.5)
        return block.eval()
    gradients_vs_eager(seeded(make),
                       lambda s: megatron(s, "mlp.fc1", "mlp.fc2"),
                       (2, 8, 32))
    model = seeded(make)
    eager = copy.deepcopy(model)
    batches = [inputs(2, 8, 32, seed=10 + i) for i in range(5)]
    targets = [inputs(2, 8, 32, seed=30 + i) for i in range(5)]
    sch = lamina.create_schedule(model, world_size=WORLD,
                                 example_inputs=(batches[0],))
    megatron(sch, "mlp.fc1", "mlp.fc2")
    compiled = lamina.build(sch, (batches[0],))
    adamw = lambda ps: torch.optim.AdamW(ps, lr=1e-3)
    ours = losses(compiled, adamw, 5, batches, targets)
    theirs = losses(eager, adamw, 5, batches, targets)
    torch.testing.assert_close(torch.tensor(ours), torch.tensor(theirs),
                               rtol=1e-4, atol=0)


def check_pipeline_two_stages():
    """Two pipeline stages, one per rank: the backward runs them in reverse
    (rank 1 first), cotangents sent point to point; every rank gets every
    gradient; 10 SGD steps give eager's losses."""
    assert WORLD == 2
    model = seeded(MLP).eval()
    eager = copy.deepcopy(model)
    x = inputs(2, 8, 32, seed=1)
    sch = lamina.create_schedule(model, example_inputs=(x,))
    sch["fc_in"].cut_pipeline_stage()
    compiled = lamina.build(sch, (x,))
    assert compiled.world_size == 2
    leaf = x.clone().requires_grad_()
    compiled(leaf).square().sum().backward()
    x_ref = x.clone().requires_grad_()
    eager(x_ref).square().sum().backward()
    assert_gradients(compiled, eager, leaf, x_ref)
    batches = [inputs(2, 8, 32, seed=10 + i) for i in range(10)]
    targets = [inputs(2, 8, 32, seed=30 + i) for i in range(10)]
    sgd = lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9)
    ours = losses(compiled, sgd, 10, batches, targets)
    theirs = losses(eager, sgd, 10, batches, targets)
    torch.testing.assert_close(torch.tensor(ours), torch.tensor(theirs),
                               rtol=1e-4, atol=0)


def check_missing_bwd_post_is_rejected_for_input_gradients():
    """Without fc_in's bwd_post all-reduce, the input's gradient would be
    partial sums on each rank: a call whose input requires a gradient is
    rejected, naming the layer and the sync. Data that requires none needs
    no such sync: the parameters' gradients are right, as eager's."""
    model = seeded(MLP).eval()
    eager = copy.deepcopy(model)
    x = inputs(2, 8, 32)
    sch = lamina.create_schedule(model, world_size=WORLD, example_inputs=(x,))
    sch["fc_in"].shard("weight", 0).shard("bias", 0)
    sch["fc_out"].shard("weight", 1).sync("fwd_post", "all_reduce")
    compiled = lamina.build(sch, (x,))
    compiled(x).square().sum().backward()
    eager(x).square().sum().backward()
    for name, p in eager.named_parameters():
        ours = dict(compiled.named_parameters())[name]
        torch.testing.assert_close(ours.grad, block_of(p.grad, ours), **TOL,
                                   msg=lambda m: f"{name}: {m}")
    try:  # rejected at the forward, or at the backward that needs it
        compiled(x.clone().requires_grad_()).sum().backward()
    except lamina.ScheduleError as error:
        message = str(error)
        assert "layer 'fc_in'" in message, message
        assert 'sync("bwd_post", "all_reduce")' in message, message
        assert "partial sums" in message, message
    else:
        raise AssertionError("the input's partial gradient was accepted")
    # Inference only is not checked.
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x))


def losses(model, make_optimizer, steps, batches, targets):
    optimizer = make_optimizer(model.parameters())
    result = []
    for x, target in zip(batches[:steps], targets):
        optimizer.zero_grad()
        loss = F.mse_loss(model(x), target)
        loss.backward()
        optimizer.step()
        result.append(loss.item())
    return result


def check_optimizer_steps():
    """10 steps of SGD with momentum and of AdamW: the same losses as eager
    at every step (rtol 1e-4), each rank updating its blocks."""
    for make_optimizer in (
            lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9),
            lambda ps: torch.optim.AdamW(ps, lr=1e-3, weight_decay=0.01)):
        model = seeded(MLP).eval()
        eager = copy.deepcopy(model)
        batches = [inputs(2, 8, 32, seed=10 + i) for i in range(10)]
        targets = [inputs(2, 8, 32, seed=30 + i) for i in range(10)]
        sch = lamina.create_schedule(model, world_size=WORLD,
                                     example_inputs=(batches[0],))
        megatron(sch, "fc_in", "fc_out")
        compiled = lamina.build(sch, (batches[0],))
        ours = losses(compiled, make_optimizer, 10, batches, targets)
        theirs = losses(eager, make_optimizer, 10, batches, targets)
        torch.testing.assert_close(torch.tensor(ours), torch.tensor(theirs),
                                   rtol=1e-4, atol=0)
        assert theirs[-1] < theirs[0]


def llama_megatron(sch, up_sync=True):
    """Megatron's recipe for a gated MLP: gate and up column parallel (each
    rank its rows of both), down row parallel; both projections read the
    normed input, so each needs its bwd_post all-reduce."""
    for name in ("gate_proj", "up_proj"):
        sch[name].shard("weight", 0)
    sch["gate_proj"].sync("bwd_post", "all_reduce")
    if up_sync:
        sch["up_proj"].sync("bwd_post", "all_reduce")
    sch["down_proj"].shard("weight", 1).sync("fwd_post", "all_reduce")


def check_llama_mlp():
    from test_gated_mlps import LlamaMLP

    def make():
        model = LlamaMLP(32, 64)
        with torch.no_grad():
            model.norm.weight.uniform_(0.5, 1.5)
        return model
    compiled = gradients_vs_eager(seeded(make), llama_megatron, (2, 8, 32))
    # The norm, a module between layers, recomputed in each rank's backward.
    gradients_vs_eager(seeded(make), llama_megatron, (2, 8, 32),
                       checkpoint="norm")
    blocks = dict(compiled.named_parameters())
    assert blocks["gate_proj.weight"].shape == (64 // WORLD, 32)
    assert blocks["down_proj.weight"].shape == (32, 64 // WORLD)
    # Without up_proj's sync, the partial sums it leaves are named.
    x = inputs(2, 8, 32)
    sch = lamina.create_schedule(seeded(make), world_size=WORLD,
                                 example_inputs=(x,))
    llama_megatron(sch, up_sync=False)
    try:
        lamina.build(sch, (x,))
    except lamina.ScheduleError as error:
        assert "layer 'up_proj'" in str(error), str(error)
        assert 'sync("bwd_post", "all_reduce")' in str(error), str(error)
    else:
        raise AssertionError("the schedule without up_proj's bwd_post built")


if __name__ == "__main__":
    for check in sys.argv[1:]:
        globals()[f"check_{check}"]()
        print(f"rank {RANK}: {check} ok", flush=True)
