"""The LLaMA-2 model of llama_model.py Megatron-parallel under
``mpirun.mpich -np N``: queries, keys and values column parallel by heads
(keys and values by KV heads while those divide among the ranks, else
replicated), `repeat_kv` local to each rank, the output projection row
parallel; the SwiGLU feed-forward column then row parallel; the tied
embedding vocabulary parallel with the loss on the head's blocks. Each check
compares with the unsharded eager model (every rank builds it from one
seed) and prints "rank R: NAME ok"."""

import copy
import sys

import torch

import lamina
from block_checks import assert_blocks_differentiated_once
from llama_model import Llama, LlamaArgs

RANK, RANKS = lamina.rank(), lamina.world_size()
ARGS = LlamaArgs(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=68,
                 hidden_dim=96, max_seq_len=16)


def megatron(model, vocabulary_parallel=False):
    """Megatron's recipe on every block, with the bwd_post all-reduces of
    training on the inputs of the column-parallel layers."""
    sch = lamina.create_schedule(model, world_size=RANKS)
    kv_sharded = ARGS.n_kv_heads % RANKS == 0
    for i in range(ARGS.n_layers):
        block = f"layers.{i}"
        column = [f"{block}.attention.wq", f"{block}.feed_forward.w1",
                  f"{block}.feed_forward.w3"]
        if kv_sharded:
            column += [f"{block}.attention.wk", f"{block}.attention.wv"]
        for name in column:
            sch[name].shard("weight", 0)
            sch[name].sync("bwd_post", "all_reduce")
        for name in (f"{block}.attention.wo", f"{block}.feed_forward.w2"):
            sch[name].shard("weight", 1)
            sch[name].sync("fwd_post", "all_reduce")
    if vocabulary_parallel:
        sch["tok_embeddings"].shard("weight", 0)  # the tied head's too
        sch["tok_embeddings"].sync("fwd_post", "all_reduce")
        sch["output"].sync("bwd_post", "all_reduce")
    return sch


def twins():
    torch.manual_seed(0)
    model = Llama(ARGS)
    return model, copy.deepcopy(model)


def batch(seed):
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, ARGS.vocab_size, (2, 12), generator=generator)
    targets = torch.roll(tokens, -1, 1)
    targets[:, -1] = -1
    return tokens, targets


def block_of(tensor, axis):
    return tensor.chunk(RANKS, dim=axis)[RANK]


def forward():
    """Logits of the last position (no targets) equal eager's."""
    model, twin = twins()
    model.eval(), twin.eval()
    tokens, _ = batch(0)
    built = lamina.build(megatron(model), (tokens,))
    with torch.no_grad():
        torch.testing.assert_close(built(tokens), twin(tokens), rtol=1e-4,
                                   atol=1e-5)


def training(vocabulary_parallel=False):
    """The loss the model stores, every gradient block and five AdamW steps
    equal eager's; the blocks are differentiated once, partitioned."""
    model, twin = twins()
    tokens, targets = batch(1)
    built = lamina.build(megatron(model, vocabulary_parallel),
                         (tokens, targets))
    ours = torch.optim.AdamW(built.parameters(), lr=1e-2)
    theirs = torch.optim.AdamW(twin.parameters(), lr=1e-2)
    for step in range(5):
        tokens, targets = batch(10 + step)
        built(tokens, targets)
        twin(tokens, targets)
        loss, want = built.last_loss, twin.last_loss
        loss.backward()
        want.backward()
        torch.testing.assert_close(loss, want, rtol=1e-4, atol=1e-5,
                                   msg=lambda m: f"step {step}: {m}")
        if step == 0:
            check_gradient_blocks(built, twin)
            assert_blocks_differentiated_once(built, "layers", ARGS.n_layers)
        ours.step(), theirs.step()
        ours.zero_grad(), theirs.zero_grad()


def check_gradient_blocks(built, twin):
    """Each gradient is this rank's block of eager's (rows of a
    column-parallel weight, columns of a row-parallel one)."""
    eager = dict(twin.named_parameters())
    for name, parameter in built.named_parameters():
        want = eager[name].grad
        for axis, (ours, whole) in enumerate(zip(parameter.shape,
                                                 want.shape)):
            if ours != whole:
                want = block_of(want, axis)
        torch.testing.assert_close(parameter.grad, want, rtol=1e-4,
                                   atol=1e-5, msg=lambda m: f"{name}: {m}")


CHECKS = {"forward": forward, "training": training,
          "vocabulary_parallel_training": lambda: training(True)}

if __name__ == "__main__":
    for name in sys.argv[1:]:
        CHECKS[name]()
        print(f"rank {RANK}: {name} ok", flush=True)
