"""Device grids on MPI ranks, run by test_grids.py under
`mpirun.mpich -np W`: `python3 grid_on_ranks.py CHECK...`. Each data
replica is called with its slice of one global batch; its parameters'
gradients and its optimizer steps must equal one eager process's on the
whole batch (the gradient of the global batch's mean loss). Prints
"rank R: CHECK ok"."""

import copy
import sys

import torch
import torch.nn.functional as F

import lamina
from test_gated_mlps import LlamaMLP
from test_training import GPT2Block
from training_on_ranks import MLP, inputs, llama_megatron, megatron, seeded

TOL = dict(rtol=1e-5, atol=1e-5)
RANK, WORLD = lamina.rank(), lamina.world_size()


def replica_slice(batch, grid):
    """This replica's rows of the global `batch` (axis 0)."""
    rows = batch.shape[0] // grid.dp
    return batch[grid.rank("dp") * rows:(grid.rank("dp") + 1) * rows]


def tensor_block(full, local, grid):
    """This rank's block of `full` on the tensor axis, matching `local`."""
    for axis, (whole, part) in enumerate(zip(full.shape, local.shape)):
        if whole != part:
            assert whole == part * grid.tp, (full.shape, local.shape)
            return full.narrow(axis, grid.rank("tp") * part, part)
    return full


def assert_gradient_blocks(compiled, eager, grid, scale=1.0):
    """Each of `compiled`'s parameter gradients is its block on the tensor
    axis of `eager`'s (times `scale`)."""
    own = dict(compiled.named_parameters())
    for name, p in eager.named_parameters():
        torch.testing.assert_close(
            own[name].grad, tensor_block(p.grad, own[name], grid) * scale,
            **TOL, msg=lambda m: f"{name}: {m}")


def build_on_grid(model, sizes, example, schedule=None, **kwargs):
    grid = lamina.Grid(**sizes)
    # (A pipeline's stages are its own ranks: its schedule's size is 1.)
    sch = lamina.create_schedule(model, world_size=grid.tp,
                                 example_inputs=(example,))
    if schedule is not None:
        schedule(sch)
    return lamina.build(sch, (example,), grid=sizes, **kwargs), grid


def assert_replica_gradients(make, sizes, schedule=None, shape=(8, 4, 32),
                             scale=1.0, **kwargs):
    """One backward of the mean squared error on this replica's slice: each
    parameter's gradient (this rank's block on the tensor axis) equals
    eager's on the global batch, times `scale`."""
    model = seeded(make)
    eager = copy.deepcopy(model)
    batch, target = inputs(*shape, seed=1), inputs(*shape, seed=2)
    grid = lamina.Grid(**sizes)
    x = replica_slice(batch, grid)
    compiled, grid = build_on_grid(model, sizes, x, schedule, **kwargs)
    F.mse_loss(compiled(x), replica_slice(target, grid)).backward()
    F.mse_loss(eager(batch), target).backward()
    assert_gradient_blocks(compiled, eager, grid, scale)
    return compiled


def assert_replica_steps(make, sizes, schedule=None, shape=(8, 4, 32),
                         steps=5, compare_parameters=True):
    """`steps` AdamW steps: each replica's loss on its slice equals the
    eager model's (trained on the global batches) on that slice, and the
    parameters stay equal (rtol 1e-4)."""
    model = seeded(make)
    eager = copy.deepcopy(model)
    grid = lamina.Grid(**sizes)
    batches = [inputs(*shape, seed=10 + i) for i in range(steps)]
    targets = [inputs(*shape, seed=30 + i) for i in range(steps)]
    compiled, grid = build_on_grid(model, sizes,
                                   replica_slice(batches[0], grid), schedule)
    ours = torch.optim.AdamW(compiled.parameters(), lr=1e-3)
    theirs = torch.optim.AdamW(eager.parameters(), lr=1e-3)
    for batch, target in zip(batches, targets):
        x, t = replica_slice(batch, grid), replica_slice(target, grid)
        ours.zero_grad()
        theirs.zero_grad()
        loss = F.mse_loss(compiled(x), t)
        loss.backward()
        F.mse_loss(eager(batch), target).backward()
        with torch.no_grad():
            expected = F.mse_loss(eager(x), t)
        torch.testing.assert_close(loss.detach(), expected, rtol=1e-4, atol=0)
        ours.step()
        theirs.step()
    if not compare_parameters:
        return
    own = dict(compiled.named_parameters())
    for name, p in eager.named_parameters():
        torch.testing.assert_close(own[name].detach(),
                                   tensor_block(p.detach(), own[name], grid),
                                   rtol=1e-4, atol=1e-6,
                                   msg=lambda m: f"{name}: {m}")


def mlp():
    return MLP(p=0.0)


def gpt_block():
    block = GPT2Block()
    with torch.no_grad():  # LayerNorms with non-trivial parameters
        for ln in (block.ln_1, block.ln_2):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.uniform_(-0.5, 0.5)
    return block


def llama_mlp():
    model = LlamaMLP(32, 64)
    with torch.no_grad():
        model.norm.weight.uniform_(0.5, 1.5)
    return model


def check_data_parallel_mlp():
    assert_replica_gradients(mlp, {"dp": WORLD})
    assert_replica_steps(mlp, {"dp": WORLD})


def check_data_parallel_sum():
    # Summed instead of averaged: D times the global batch's mean gradient.
    assert_replica_gradients(mlp, {"dp": WORLD}, scale=WORLD,
                             dp_gradients="sum")


def check_data_parallel_gpt_block():
    assert_replica_gradients(gpt_block, {"dp": WORLD})
    # Losses only: the key bias's gradient is zero in exact arithmetic (the
    # softmax ignores it), and Adam scales its rounding noise up to whole
    # steps of either sign.
    assert_replica_steps(gpt_block, {"dp": WORLD}, compare_parameters=False)


def check_data_and_tensor_parallel_mlp():
    sizes = {"dp": WORLD // 2, "tp": 2}
    compiled = assert_replica_gradients(
        mlp, sizes, lambda s: megatron(s, "fc_in", "fc_out"))
    assert dict(compiled.named_parameters())["fc_in.weight"].shape == (32, 32)
    # The program carries the grid; its all-reduce runs along the tensor
    # axis, the last of (dp, pp, tp).
    partitioned = compiled.ir("partitioned")
    assert (f"lamina.grid = {{dp = {WORLD // 2} : i64, pp = 1 : i64, "
            f"tp = 2 : i64}}") in partitioned
    assert f"shard.grid @lamina_grid(shape = {WORLD // 2}x1x2)" in partitioned
    assert "grid_axes = [2]" in partitioned
    assert "grid_axes = [0]" not in partitioned
    assert_replica_steps(mlp, sizes, lambda s: megatron(s, "fc_in", "fc_out"))


def check_data_and_tensor_parallel_llama_mlp():
    sizes = {"dp": WORLD // 2, "tp": 2}
    assert_replica_gradients(llama_mlp, sizes, llama_megatron)
    assert_replica_steps(llama_mlp, sizes, llama_megatron)


def check_data_and_tensor_parallel_gpt_block():
    sizes = {"dp": WORLD // 2, "tp": 2}
    assert_replica_gradients(gpt_block, sizes,
                             lambda s: megatron(s, "mlp.fc1", "mlp.fc2"))


def check_data_and_pipeline_parallel_mlp():
    # Two stages on the pipeline axis, each replica's pipeline on its
    # slice; every rank of a pipeline gets every gradient.
    sizes = {"dp": WORLD // 2, "pp": 2}
    cut = lambda s: s["fc_in"].cut_pipeline_stage()  # noqa: E731
    compiled = assert_replica_gradients(mlp, sizes, cut)
    assert compiled.world_size == 2
    assert_replica_steps(mlp, sizes, cut)


def check_pipeline_one_f_one_b():
    # A batch of 8 rows as 4 micro-batches through two stages in the 1F1B
    # order (each replica its slice): the loss and gradients of the whole
    # batch's mean loss, every gradient on every rank, at most P - p
    # micro-batches' saved values held on stage p; then 3 SGD steps.
    sizes = {"dp": WORLD // 2, "pp": 2}
    grid = lamina.Grid(**sizes)
    model = seeded(mlp)
    eager = copy.deepcopy(model)
    batches = [(inputs(8 * grid.dp, 4, 32, seed=80 + i),
                inputs(8 * grid.dp, 4, 32, seed=90 + i)) for i in range(3)]
    x0 = replica_slice(batches[0][0], grid)[:2]
    sch = lamina.create_schedule(model, world_size=1, example_inputs=(x0,))
    sch["fc_in"].cut_pipeline_stage()
    compiled = lamina.build(sch, (x0,), grid=sizes)
    ours = torch.optim.SGD(compiled.parameters(), lr=0.05, momentum=0.9)
    theirs = torch.optim.SGD(eager.parameters(), lr=0.05, momentum=0.9)
    for step, (batch, target) in enumerate(batches):
        ours.zero_grad()
        theirs.zero_grad()
        loss = compiled.train_batch(replica_slice(batch, grid),
                                    replica_slice(target, grid), F.mse_loss,
                                    microbatches=4)
        expected = F.mse_loss(eager(batch), target)
        expected.backward()
        torch.testing.assert_close(loss, expected.detach(), rtol=1e-5,
                                   atol=0)
        assert_gradient_blocks(compiled, eager, grid)
        report = compiled._state["batch_report"]
        assert report.peak_in_flight == grid.pp - grid.rank("pp"), \
            report.peak_in_flight
        ours.step()
        theirs.step()
    # Misfits are named.
    expect_error(lambda: compiled.train_batch(
        replica_slice(batches[0][0], grid), replica_slice(batches[0][1], grid),
        F.mse_loss, microbatches=3),
        "does not split into 3 equal micro-batches")


def check_tensor_parallel_pipeline_stages():
    # Two stages, each Megatron-sharded over its two tensor ranks (PP2 x TP2
    # on 4 ranks, DP2 x PP2 x TP2 on 8): gradients and 1F1B batches
    # against eager.
    sizes = {"dp": WORLD // 4, "pp": 2, "tp": 2}

    def schedule(sch):
        megatron(sch, "fc_in", "fc_out")
        sch["fc_in"].cut_pipeline_stage()
    compiled = assert_replica_gradients(mlp, sizes, schedule)
    assert dict(compiled.named_parameters())["fc_in.weight"].shape == (32, 32)
    assert_replica_steps(mlp, sizes, schedule)
    grid = lamina.Grid(**sizes)
    model = seeded(mlp)
    eager = copy.deepcopy(model)
    batch, target = inputs(8 * grid.dp, 4, 32, seed=5), \
        inputs(8 * grid.dp, 4, 32, seed=6)
    x = replica_slice(batch, grid)
    sch = lamina.create_schedule(model, world_size=2,
                                 example_inputs=(x[:2],))
    schedule(sch)
    compiled = lamina.build(sch, (x[:2],), grid=sizes)
    loss = compiled.train_batch(x, replica_slice(target, grid), F.mse_loss,
                                microbatches=4)
    expected = F.mse_loss(eager(batch), target)
    expected.backward()
    torch.testing.assert_close(loss, expected.detach(), rtol=1e-5, atol=0)
    assert_gradient_blocks(compiled, eager, grid)


def check_llama_model_on_a_grid():
    # The LLaMA-2 model of llama_model.py (RoPE, grouped-query attention,
    # SwiGLU, tied embeddings, the loss it stores) Megatron-parallel on the
    # tensor axis of DP x TP: each replica's loss on its sequences, the
    # gradients at the first step and 3 AdamW steps against eager on the
    # global batch (its schedule, at the launched world's size, replayed
    # for the tensor axis).
    from llama_on_ranks import ARGS, megatron as llama_megatron_model, twins
    sizes = {"dp": WORLD // 2, "tp": 2}
    grid = lamina.Grid(**sizes)
    model, twin = twins()

    def global_batch(seed):
        generator = torch.Generator().manual_seed(seed)
        tokens = torch.randint(0, ARGS.vocab_size, (2 * grid.dp, 12),
                               generator=generator)
        targets = torch.roll(tokens, -1, 1)
        targets[:, -1] = -1  # the same number of targets on every replica
        return tokens, targets

    tokens, targets = global_batch(1)
    mine = lambda t: replica_slice(t, grid)  # noqa: E731
    built = lamina.build(llama_megatron_model(model),
                         (mine(tokens), mine(targets)), grid=sizes)
    ours = torch.optim.AdamW(built.parameters(), lr=1e-2)
    theirs = torch.optim.AdamW(twin.parameters(), lr=1e-2)
    for step in range(3):
        tokens, targets = global_batch(10 + step)
        built(mine(tokens), mine(targets))
        loss = built.last_loss
        loss.backward()
        with torch.no_grad():
            twin(mine(tokens), mine(targets))
            want = twin.last_loss
        twin(tokens, targets)
        twin.last_loss.backward()
        torch.testing.assert_close(loss, want, rtol=1e-5, atol=1e-6,
                                   msg=lambda m: f"step {step}: {m}")
        if step == 0:
            assert_gradient_blocks(built, twin, grid)
        ours.step(), theirs.step()
        ours.zero_grad(), theirs.zero_grad()


def check_default_schedule_replayed_for_the_tensor_axis():
    # A schedule left at the launched world's size compiles for the grid's
    # tensor axis.
    model = seeded(mlp)
    eager = copy.deepcopy(model)
    grid = lamina.Grid(dp=WORLD // 2, tp=2)
    batch = inputs(8, 4, 32, seed=1)
    x = replica_slice(batch, grid)
    sch = lamina.create_schedule(model)
    assert sch.world_size == WORLD
    megatron(sch, "fc_in", "fc_out")
    compiled = lamina.build(sch, (x,), grid=grid.sizes())
    assert compiled.world_size == 2
    compiled(x).square().mean().backward()
    eager(batch).square().mean().backward()
    assert_gradient_blocks(compiled, eager, grid)


def state_bytes(optimizer):
    """The bytes of the tensors in `optimizer`'s state."""
    return sum(t.numel() * t.element_size() for state in
               optimizer.state.values() for t in state.values()
               if isinstance(t, torch.Tensor))


def owns(zero, parameter):
    return any(parameter is p for p in zero.owned_parameters())


def zero_steps(stage, steps=4):
    """ZeRO with AdamW on dp replicas of the Megatron MLP (tp 2 on 4 ranks):
    losses, parameters and (consolidated) optimizer state equal one eager
    process's AdamW on the global batches; this replica holds about 1/D of
    the state; a restored checkpoint steps on identically."""
    tp = 2 if WORLD == 4 else 1
    sizes = {"dp": WORLD // tp, "tp": tp}
    schedule = (lambda s: megatron(s, "fc_in", "fc_out")) if tp > 1 else None
    model = seeded(mlp)
    eager = copy.deepcopy(model)
    grid = lamina.Grid(**sizes)
    batches = [inputs(8, 4, 32, seed=10 + i) for i in range(steps + 2)]
    targets = [inputs(8, 4, 32, seed=30 + i) for i in range(steps + 2)]
    compiled, grid = build_on_grid(model, sizes,
                                   replica_slice(batches[0], grid), schedule)
    ours = lamina.optim.ZeroRedundancyOptimizer(
        compiled.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-3,
        weight_decay=0.01, stage=stage)
    theirs = torch.optim.AdamW(eager.parameters(), lr=1e-3,
                               weight_decay=0.01)
    own = dict(compiled.named_parameters())

    def step(batch, target, check=True):
        x, t = replica_slice(batch, grid), replica_slice(target, grid)
        ours.zero_grad()
        theirs.zero_grad()
        loss = F.mse_loss(compiled(x), t)
        loss.backward()
        F.mse_loss(eager(batch), target).backward()
        for name, p in eager.named_parameters():
            mine = own[name]
            if stage == 2 and not owns(ours, mine):
                assert mine.grad is None, name  # reduced to its owner
            else:
                torch.testing.assert_close(
                    mine.grad, tensor_block(p.grad, mine, grid), **TOL)
        ours.step()
        theirs.step()
        for name, p in eager.named_parameters():
            torch.testing.assert_close(
                own[name].detach(), tensor_block(p.detach(), own[name], grid),
                rtol=1e-4, atol=1e-6, msg=lambda m: f"{name}: {m}")

    for batch, target in zip(batches[:steps], targets):
        step(batch, target)
    # About 1/D of the state here: AdamW's two moments of the parameters
    # this replica owns, every parameter owned once.
    owned = ours.owned_parameters()
    assert state_bytes(ours.optim) == 2 * sum(
        p.numel() * p.element_size() for p in owned) + 4 * len(owned)
    total = sum(p.numel() for p in compiled.parameters())
    assert sum(p.numel() for p in owned) <= total // grid.dp + 64 * 32
    # The whole state, gathered on each replica in turn, equals eager's.
    for replica in range(grid.dp):
        ours.consolidate_state_dict(to=replica)
    full = ours.state_dict()
    reference = theirs.state_dict()
    order = [n for n, _ in compiled.named_parameters()]
    for index, name in enumerate(order):
        for key in ("exp_avg", "exp_avg_sq"):
            expected = reference["state"][
                [n for n, _ in eager.named_parameters()].index(name)][key]
            torch.testing.assert_close(
                full["state"][index][key],
                tensor_block(expected, own[name], grid), rtol=1e-4, atol=1e-7)
    # Restored into a fresh optimizer, training goes on identically.
    ours = lamina.optim.ZeroRedundancyOptimizer(
        compiled.parameters(), optimizer_class=torch.optim.AdamW, lr=0.5,
        stage=stage)
    ours.load_state_dict(full)
    assert ours.param_groups[0]["lr"] == 1e-3
    for batch, target in zip(batches[steps:], targets[steps:]):
        step(batch, target)


def check_zero_stage_1():
    zero_steps(stage=1)


def check_zero_stage_2():
    zero_steps(stage=2)


def check_global_norm_clipping():
    # On DP x TP: the norm of the whole model's gradient, each element once
    # (tensor blocks summed over the tensor axis), and the same scaling of
    # every gradient as torch.nn.utils.clip_grad_norm_ on one process.
    for stage in (None, 2):
        tp = 2 if WORLD == 4 else 1
        sizes = {"dp": WORLD // tp, "tp": tp}
        schedule = (lambda s: megatron(s, "fc_in", "fc_out")) if tp > 1 \
            else None
        model = seeded(mlp)
        eager = copy.deepcopy(model)
        grid = lamina.Grid(**sizes)
        batch = inputs(8, 4, 32, seed=1)
        compiled, grid = build_on_grid(model, sizes,
                                       replica_slice(batch, grid), schedule)
        if stage:
            zero = lamina.optim.ZeroRedundancyOptimizer(
                compiled.parameters(), optimizer_class=torch.optim.SGD,
                lr=0.1, stage=stage)
        compiled(replica_slice(batch, grid)).square().mean().backward()
        eager(batch).square().mean().backward()
        for norm_type in (2.0, float("inf")):
            expected = torch.nn.utils.clip_grad_norm_(
                eager.parameters(), max_norm=1e9, norm_type=norm_type)
            total = lamina.optim.clip_grad_norm_(
                compiled.parameters(), max_norm=1e9, norm_type=norm_type)
            torch.testing.assert_close(total, expected,
                                       rtol=1e-5, atol=0)
        expected = torch.nn.utils.clip_grad_norm_(eager.parameters(), 0.01)
        lamina.optim.clip_grad_norm_(compiled.parameters(), 0.01)
        own = dict(compiled.named_parameters())
        for name, p in eager.named_parameters():
            if own[name].grad is None:
                assert stage == 2 and not owns(zero, own[name])
                continue
            torch.testing.assert_close(own[name].grad,
                                       tensor_block(p.grad, own[name], grid),
                                       **TOL)


def deepspeed_steps(sizes, schedule, steps=2, accumulation=2, micro=2,
                    pipeline=False):
    """Slapo's build(target="deepspeed") on the grid of DeepSpeed's
    topology: each replica's micro-batches through engine/backward/step (or
    train_batch, for a pipeline) give eager's steps on the global batches
    (SGD with momentum, ZeRO-1 when not pipelined, clipping at 0.05)."""
    import types

    import lamina.slapo as slapo

    model = seeded(mlp)
    eager = copy.deepcopy(model)
    grid = lamina.Grid(**sizes)
    rows = micro * grid.dp  # a global micro-batch
    data = [(inputs(rows, 4, 32, seed=50 + i), inputs(rows, 4, 32, seed=70 + i))
            for i in range(steps * accumulation)]
    mine = [(replica_slice(x, grid), replica_slice(y, grid)) for x, y in data]
    sch = slapo.create_schedule(model, world_size=grid.tp,
                                example_inputs=(mine[0][0],))
    schedule(sch)
    config = {"train_batch_size": rows * accumulation,
              "train_micro_batch_size_per_gpu": micro,
              "optimizer": {"type": "SGD",
                            "params": {"lr": 0.05, "momentum": 0.9}},
              "gradient_clipping": 0.05}
    if not pipeline:
        config["zero_optimization"] = {"stage": 1}
    topology = types.SimpleNamespace(num_pp=grid.pp, num_mp=grid.tp,
                                     num_dp=grid.dp)
    engine, optimizer = slapo.build(sch, target="deepspeed", config=config,
                                    topology=topology, loss_fn=F.mse_loss,
                                    init_weights=False)
    assert engine.gradient_accumulation_steps() == accumulation
    assert engine.mpu.get_data_parallel_rank() == grid.rank("dp")
    assert isinstance(optimizer, lamina.optim.ZeroRedundancyOptimizer) != \
        pipeline
    reference = torch.optim.SGD(eager.parameters(), lr=0.05, momentum=0.9)
    iterator = iter(mine)
    for step in range(steps):
        expected = []
        for x, y in data[step * accumulation:(step + 1) * accumulation]:
            loss = F.mse_loss(eager(x), y)
            (loss / accumulation).backward()
            expected.append(loss.item())
        torch.nn.utils.clip_grad_norm_(eager.parameters(), 0.05)
        reference.step()
        reference.zero_grad()
        if pipeline:
            loss = engine.train_batch(data_iter=iterator).item()
            torch.testing.assert_close(loss, sum(expected) / accumulation,
                                       rtol=1e-5, atol=0)
        else:
            for _ in range(accumulation):
                x, y = next(iterator)
                engine.backward(F.mse_loss(engine(x), y))
                engine.step()
    assert engine.global_steps == steps
    own = dict(engine.module.named_parameters())
    for name, p in eager.named_parameters():
        torch.testing.assert_close(own[name].detach(),
                                   tensor_block(p.detach(), own[name], grid),
                                   rtol=1e-5, atol=1e-6,
                                   msg=lambda m: f"{name}: {m}")


def check_deepspeed_engine_steps():
    tp = 2 if WORLD == 4 else 1

    def schedule(sch):
        if tp > 1:  # (Slapo's primitives return None: no chaining)
            sch["fc_in"].shard("weight", 0)
            sch["fc_in"].shard("bias", 0)
            sch["fc_in"].sync("bwd_post", "all_reduce")
            sch["fc_out"].shard("weight", 1)
            sch["fc_out"].sync("fwd_post", "all_reduce")
    deepspeed_steps({"dp": WORLD // tp, "tp": tp}, schedule)


def check_deepspeed_pipeline_train_batch():
    def schedule(sch):
        sch.trace_until("")
        sch["fc_in"].cut_pipeline_stage()
    deepspeed_steps({"dp": WORLD // 2, "pp": 2}, schedule, pipeline=True)


def check_bf16_parameters_data_parallel():
    """A model with bf16 parameters on data replicas: the bf16 gradients
    are summed over the replicas in f32 (the runtime's f16/bf16 reduction)
    and rounded once. Against one Lamina process on the global batch (an
    unsharded run), each gradient within 4u of its largest magnitude: two
    roundings to bf16 apart; a sum instead of a mean would be off by the
    gradient itself."""
    u = 2.0 ** -8
    torch.manual_seed(5)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64),
                                torch.nn.GELU(approximate="tanh"),
                                torch.nn.Linear(64, 32)).to(torch.bfloat16)
    whole = copy.deepcopy(model)
    batch = inputs(8, 32, seed=11).to(torch.bfloat16)
    grid = lamina.Grid(dp=WORLD)
    mine = replica_slice(batch, grid)
    compiled, _ = build_on_grid(model, {"dp": WORLD}, mine)
    compiled(mine).float().pow(2).mean().backward()
    # Every rank runs the unsharded program on the global batch itself:
    # what the replicas' gradients must add up to.
    reference = lamina.build(lamina.create_schedule(whole, world_size=1),
                             (batch,))
    reference(batch).float().pow(2).mean().backward()
    own = dict(compiled.named_parameters())
    for name, p in reference.named_parameters():
        got = own[name].grad
        assert got.dtype == torch.bfloat16, name
        scale = p.grad.float().abs().max()
        assert ((got.float() - p.grad.float()).abs() <= 4 * u * scale).all(), \
            name


def check_deepspeed_bf16_data_parallel():
    """DeepSpeed's 'bf16': {'enabled': True} on data replicas: each
    replica's matmuls in bf16, its f32 gradients averaged over the replicas
    in f32. After one backward every gradient lies within twice
    test_autocast.py's first-order bf16 bounds of eager autocast's on the
    global batch (a sum instead of a mean would be off by the gradient
    itself), and five SGD steps' losses within 16u of eager autocast's."""
    import types

    import lamina.slapo as slapo
    from test_autocast import MLP as AutocastMLP
    from test_autocast import U, gradient_bounds

    torch.manual_seed(4)
    model = AutocastMLP(width=32, hidden=64)
    eager = copy.deepcopy(model)
    bounds = gradient_bounds(copy.deepcopy(model), inputs(8, 32, seed=90))
    grid = lamina.Grid(dp=WORLD)
    data = [inputs(8, 32, seed=90 + step) for step in range(5)]
    sch = slapo.create_schedule(model, world_size=1,
                                example_inputs=(replica_slice(data[0], grid),))
    config = {"train_micro_batch_size_per_gpu": 8 // WORLD,
              "optimizer": {"type": "SGD", "params": {"lr": 0.05,
                                                      "momentum": 0.9}},
              "bf16": {"enabled": True}}
    engine, _ = slapo.build(sch, target="deepspeed", config=config,
                            topology=types.SimpleNamespace(
                                num_pp=1, num_mp=1, num_dp=WORLD),
                            init_weights=False)
    reference = torch.optim.SGD(eager.parameters(), lr=0.05, momentum=0.9)
    for step, x in enumerate(data):
        engine.backward(engine(replica_slice(x, grid)).pow(2).mean())
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = eager(x)
        loss = out.float().pow(2).mean()
        loss.backward()
        if step == 0:
            own = dict(engine.module.named_parameters())
            for name, p in eager.named_parameters():
                assert own[name].grad.dtype == torch.float32
                error = (own[name].grad - p.grad).abs()
                assert (error <= 2 * bounds[name].detach()).all(), name
        engine.step()
        reference.step()
        reference.zero_grad()
    with torch.no_grad():
        last = data[-1]
        ours = engine(replica_slice(last, grid)).pow(2).mean().item()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            theirs = eager(replica_slice(last, grid)).float().pow(2).mean()
    assert abs(ours - theirs.item()) <= 16 * U * theirs.item(), (ours, theirs)


def expect_error(call, *fragments):
    try:
        call()
    except lamina.ScheduleError as error:
        for fragment in fragments:
            assert fragment in str(error), (fragment, str(error))
    else:
        raise AssertionError(f"no error naming {fragments}")


def check_grid_errors():
    model, x = mlp(), inputs(2, 4, 32)
    sch = lamina.create_schedule(model, world_size=1)
    expect_error(lambda: lamina.build(sch, (x,), grid={"dp": WORLD + 1}),
                 f"dp={WORLD + 1} x pp=1 x tp=1 = {WORLD + 1} ranks",
                 f"MPI world of {WORLD}")
    expect_error(lambda: lamina.build(sch, (x,), grid={"data": WORLD}),
                 "grid axes are 'dp', 'pp' and 'tp'", "'data'")
    expect_error(lambda: lamina.build(sch, (x,), grid={"dp": 0}),
                 "grid axis 'dp' must be a positive integer")
    expect_error(lambda: lamina.build(sch, (x,), grid={"dp": WORLD},
                                      dp_gradients="max"),
                 "dp_gradients is 'mean' or 'sum'")
    sharded = lamina.create_schedule(model)
    megatron(sharded, "fc_in", "fc_out")
    expect_error(lambda: lamina.build(sharded, (x,), grid={"dp": WORLD}),
                 "the schedule shards or syncs values over ranks, but the "
                 "grid's tensor axis has tp=1")
    if WORLD == 2:
        return  # (a schedule for 2 ranks is the launched world's: replayed)
    two = lamina.create_schedule(model, world_size=2)
    expect_error(lambda: lamina.build(two, (x,), grid={"dp": WORLD}),
                 "the schedule is for 2 ranks but the grid's tensor axis has "
                 "tp=1", "world_size=1")


if __name__ == "__main__":
    for check in sys.argv[1:]:
        globals()[f"check_{check}"]()
        print(f"rank {RANK}: {check} ok", flush=True)
