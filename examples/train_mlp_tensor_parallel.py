#!/usr/bin/env python3
"""Train a GPT-2 MLP Megatron-sharded over MPI ranks: each rank holds its
blocks of fc_in (rows) and fc_out (columns), runs the compiled forward and
backward (the collectives transposed by the compiler) and takes AdamW steps
on its blocks; every loss is checked against eager PyTorch on the whole
model.

    mpirun.mpich -np 2 /usr/bin/python3 examples/train_mlp_tensor_parallel.py

docs/training.md describes tensor-parallel training.
"""

import copy

import torch
import torch.nn.functional as F
from torch import nn

import lamina


class MLP(nn.Module):
    """GPT-2's MLP with its residual: fc_in, GELU (tanh), fc_out."""

    def __init__(self, hidden=64, inter=256):
        super().__init__()
        self.fc_in = nn.Linear(hidden, inter)
        self.act = nn.GELU(approximate="tanh")
        self.fc_out = nn.Linear(inter, hidden)

    def forward(self, x):
        return x + self.fc_out(self.act(self.fc_in(x)))


def step(module, optimizer, x, target):
    optimizer.zero_grad()
    loss = F.mse_loss(module(x), target)
    loss.backward()
    optimizer.step()
    return loss.item()


def main():
    rank, ranks = lamina.rank(), lamina.world_size()
    torch.manual_seed(0)  # the same model on every rank
    model = MLP()
    eager = copy.deepcopy(model)
    data = torch.Generator().manual_seed(1)
    batches = [(torch.randn(4, 16, 64, generator=data),
                torch.randn(4, 16, 64, generator=data)) for _ in range(5)]

    sch = lamina.create_schedule(model, world_size=ranks,
                                 example_inputs=(batches[0][0],))
    # Megatron-LM: fc_in column parallel, its input gradient all-reduced in
    # the backward; fc_out row parallel, its partial sums all-reduced.
    sch["fc_in"].shard("weight", 0).shard("bias", 0)
    sch["fc_in"].sync("bwd_post", "all_reduce")
    sch["fc_out"].shard("weight", 1).sync("fwd_post", "all_reduce")
    compiled = lamina.build(sch, (batches[0][0],))
    shapes = {n: tuple(p.shape) for n, p in compiled.named_parameters()}
    print(f"rank {rank} of {ranks}: parameter blocks {shapes}", flush=True)

    ours = torch.optim.AdamW(compiled.parameters(), lr=1e-3)
    theirs = torch.optim.AdamW(eager.parameters(), lr=1e-3)
    for index, (x, target) in enumerate(batches):
        loss = step(compiled, ours, x, target)
        expected = step(eager, theirs, x, target)
        if abs(loss - expected) > 1e-4 * abs(expected):
            raise SystemExit(f"rank {rank}, step {index}: loss {loss} differs "
                             f"from eager PyTorch's {expected}")
        print(f"rank {rank}, step {index}: loss {loss:.6f}", flush=True)
    print(f"rank {rank}: every step equals eager PyTorch", flush=True)


if __name__ == "__main__":
    main()
