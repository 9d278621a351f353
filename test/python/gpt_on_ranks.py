"""Whole GPT-2 models (examples/gpt_models.py) run Megatron-parallel under
``mpirun.mpich -np N``: attention sharded by heads (the contiguous [Q; K; V]
projection in 3 groups), its output projection row parallel, the MLP column
then row parallel, each block's two all-reduces; embeddings, LayerNorms and
the head replicated. Each check compares with the unsharded eager model
(every rank builds it from one seed) and prints "rank R: NAME ok"."""

import pathlib
import sys

import torch

import lamina
import lamina.slapo as slapo

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] /
                       "examples"))
from gpt_models import GPTConfig, HandWrittenGPT, TiedGPT  # noqa: E402
from block_checks import assert_blocks_differentiated_once  # noqa: E402

RANK, RANKS = lamina.rank(), lamina.world_size()
CONFIG = GPTConfig(block_size=16, vocab_size=96, n_layer=2, n_head=4,
                   n_embd=32)


def megatron(model, native_names):
    """Megatron's recipe on every block of `model`, through the native
    schedule API."""
    sch = lamina.create_schedule(model, world_size=RANKS)
    for i in range(CONFIG.n_layer):
        block = f"transformer.h.{i}"
        attn = sch[f"{block}.attn.c_attn"]
        attn.shard("weight", 0, groups=3)
        attn.shard("bias", 0, groups=3)
        proj = sch[f"{block}.attn.c_proj"]
        proj.shard("weight", 1)
        proj.sync("fwd_post", "all_reduce")
        fc, out = native_names(block)
        sch[fc].shard("weight", 0)
        sch[fc].shard("bias", 0)
        sch[out].shard("weight", 1)
        sch[out].sync("fwd_post", "all_reduce")
    return sch


def twins(make):
    torch.manual_seed(0)
    model, twin = make(CONFIG), make(CONFIG)
    twin.load_state_dict(model.state_dict())
    return model.eval(), twin.eval()


def batch(seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(0, CONFIG.vocab_size, (2, 8), generator=generator)


def hand_written_forward():
    model, twin = twins(HandWrittenGPT)
    sch = megatron(model, lambda b: (f"{b}.mlp.c_fc", f"{b}.mlp.c_proj"))
    built = lamina.build(sch)
    idx = batch()
    with torch.no_grad():
        torch.testing.assert_close(built(idx), twin(idx))


def tied_forward():
    model, twin = twins(TiedGPT)
    sch = megatron(model, lambda b: (f"{b}.mlp.c_fc", f"{b}.mlp.c_proj"))
    built = lamina.build(sch)
    idx = batch(1)
    with torch.no_grad():
        logits, loss = built(idx)
        want, _ = twin(idx)
    assert loss is None
    torch.testing.assert_close(logits, want)
    # This rank's heads of each of Q, K and V.
    weight = dict(built.named_parameters())[
        "transformer.h.0.attn.c_attn.weight"]
    part = CONFIG.n_embd // RANKS
    rows = torch.cat([twin.transformer.h[0].attn.c_attn.weight[
        g * CONFIG.n_embd + RANK * part:g * CONFIG.n_embd + (RANK + 1) * part]
        for g in range(3)])
    torch.testing.assert_close(weight.detach(), rows)


def vocab_parallel_forward():
    """The token embedding sharded on its rows (vocabulary parallel, its
    all-reduce after it) and the head tied to it column parallel (its
    all-gather after it), on top of Megatron's blocks."""
    model, twin = twins(TiedGPT)
    sch = megatron(model, lambda b: (f"{b}.mlp.c_fc", f"{b}.mlp.c_proj"))
    sch["transformer.wte"].shard("weight", 0)  # the head's weight too
    sch["transformer.wte"].sync("fwd_post", "all_reduce")
    sch["lm_head"].sync("fwd_post", "all_gather", axis=2)
    built = lamina.build(sch)
    idx = batch(2)
    with torch.no_grad():
        logits, _ = built(idx)
        want, _ = twin(idx)
    torch.testing.assert_close(logits, want)
    rows = CONFIG.vocab_size // RANKS
    weight = dict(built.named_parameters())["transformer.wte.weight"]
    torch.testing.assert_close(
        weight.detach(),
        twin.transformer.wte.weight[RANK * rows:(RANK + 1) * rows])


def slapo_megatron(model):
    """Megatron's training recipe with the vocabulary-parallel embedding
    and head, in Slapo's API and keyword spellings (lamina.slapo)."""
    sch = slapo.create_schedule(model)
    for i in range(CONFIG.n_layer):
        block = sch[f"transformer.h.{i}"]
        for column, row in (("attn.c_attn", "attn.c_proj"),
                            ("mlp.c_fc", "mlp.c_proj")):
            groups = {"groups": 3} if column == "attn.c_attn" else {}
            block[column].shard("weight", axis=0, **groups)
            block[column].shard("bias", axis=0, **groups)
            block[column].sync(mode="bwd_post", sync_op_or_fn="all_reduce")
            block[row].shard("weight", axis=1)
            block[row].sync(mode="fwd_post", sync_op_or_fn="all_reduce")
    sch["transformer.wte"].shard("weight", axis=0)
    sch["transformer.wte"].sync(mode="fwd_post", sync_op_or_fn="all_reduce")
    sch["lm_head"].sync(mode="fwd_post", sync_op_or_fn="all_gather", axis=2)
    sch["lm_head"].sync(mode="bwd_post", sync_op_or_fn="all_reduce")
    return sch


def tied_training(vocab_parallel=False, slapo_api=False):
    """Megatron's training recipe (bwd_post all-reduces on the inputs of
    the column-parallel layers): the loss, every parameter's gradient block
    and three AdamW steps equal the unsharded eager model's."""
    model, twin = twins(TiedGPT)
    model.train(), twin.train()
    idx = batch(0)
    if slapo_api:
        built, optimizer = slapo.build(
            slapo_megatron(model), init_weights=False,
            example_inputs=(idx, torch.roll(idx, -1, dims=1)))
        assert optimizer is None
        train(built, twin)
        return
    sch = megatron(model, lambda b: (f"{b}.mlp.c_fc", f"{b}.mlp.c_proj"))
    for i in range(CONFIG.n_layer):
        for part in ("attn.c_attn", "mlp.c_fc"):
            sch[f"transformer.h.{i}.{part}"].sync("bwd_post", "all_reduce")
    if vocab_parallel:
        # Every rank computes the loss on the whole logits: the gathered
        # logits' gradient is whole, each rank keeps its block of it.
        sch["transformer.wte"].shard("weight", 0)
        sch["transformer.wte"].sync("fwd_post", "all_reduce")
        # The gathered logits' gradient is whole: the gather's backward,
        # derived, keeps this rank's block.
        sch["lm_head"].sync("fwd_post", "all_gather", axis=2)
        sch["lm_head"].sync("bwd_post", "all_reduce")
    # Compiled at build, so that the optimizer gets this rank's blocks.
    train(lamina.build(sch, (idx, torch.roll(idx, -1, dims=1))), twin)


def train(built, twin):
    """Three AdamW steps of `built` and the eager `twin`: equal losses, and
    this rank's blocks of the twin's gradients at the first."""
    ours = torch.optim.AdamW(built.parameters(), lr=1e-2)
    theirs = torch.optim.AdamW(twin.parameters(), lr=1e-2)
    for step in range(3):
        idx = batch(step)
        targets = torch.roll(idx, -1, dims=1)
        ours.zero_grad(), theirs.zero_grad()
        _, loss = built(idx, targets)
        _, want = twin(idx, targets)
        loss.backward(), want.backward()
        torch.testing.assert_close(loss, want,
                                   msg=lambda m: f"step {step}: {m}")
        if step == 0:
            check_gradient_blocks(built, twin)
            assert_blocks_differentiated_once(built, "transformer.h",
                                              CONFIG.n_layer)
        ours.step(), theirs.step()


def check_gradient_blocks(built, twin):
    """Each of the built model's gradients is this rank's block of the
    eager model's (its heads' rows of each of Q, K and V for c_attn)."""
    for name, parameter in built.named_parameters():
        want = dict(twin.named_parameters())[name].grad
        if parameter.shape != want.shape:
            axis = next(a for a, (p, w) in enumerate(zip(parameter.shape,
                                                         want.shape))
                        if p != w)
            groups = 3 if "c_attn" in name else 1
            want = torch.cat([part.chunk(RANKS, dim=axis)[RANK]
                              for part in want.chunk(groups, dim=axis)],
                             dim=axis)
        torch.testing.assert_close(parameter.grad, want, atol=1e-5,
                                   rtol=1e-4, msg=lambda m: f"{name}: {m}")


CHECKS = {"hand_written_forward": hand_written_forward,
          "tied_forward": tied_forward,
          "vocab_parallel_forward": vocab_parallel_forward,
          "tied_training": tied_training,
          "vocab_parallel_training": lambda: tied_training(True),
          "slapo_training": lambda: tied_training(True, slapo_api=True)}

if __name__ == "__main__":
    for name in sys.argv[1:]:
        CHECKS[name]()
        print(f"rank {RANK}: {name} ok", flush=True)
