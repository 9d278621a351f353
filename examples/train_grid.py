#!/usr/bin/env python3
"""Train a GPT-2 MLP on a device grid: the MPI world as data replicas
(`dp`) of a Megatron-sharded model (`tp`). Each replica takes its slice of
every global batch; its backward reduces each parameter's gradient over
the replicas as soon as it is final; AdamW steps each rank's blocks. Every
replica's loss is checked against eager PyTorch trained on the whole
batches in one process.

    mpirun.mpich -np 4 /usr/bin/python3 examples/train_grid.py      # dp 2 x tp 2
    mpirun.mpich -np 8 /usr/bin/python3 examples/train_grid.py      # dp 4 x tp 2
    mpirun.mpich -np 2 /usr/bin/python3 examples/train_grid.py 1    # dp 2 x tp 1

docs/grids.md describes device grids.
"""

import copy
import sys

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


def main():
    tp = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    world = lamina.world_size()
    grid = lamina.Grid(dp=world // tp, tp=tp)
    replica, replicas = grid.rank("dp"), grid.dp
    torch.manual_seed(0)  # the same model on every rank
    model = MLP()
    eager = copy.deepcopy(model)
    data = torch.Generator().manual_seed(1)
    batches = [(torch.randn(8, 16, 64, generator=data),
                torch.randn(8, 16, 64, generator=data)) for _ in range(5)]
    rows = 8 // replicas

    def mine(batch):  # this replica's slice of a global batch
        return batch[replica * rows:(replica + 1) * rows]

    sch = lamina.create_schedule(model, world_size=tp,
                                 example_inputs=(mine(batches[0][0]),))
    if tp > 1:  # Megatron-LM on the tensor axis
        sch["fc_in"].shard("weight", 0).shard("bias", 0)
        sch["fc_in"].sync("bwd_post", "all_reduce")
        sch["fc_out"].shard("weight", 1).sync("fwd_post", "all_reduce")
    compiled = lamina.build(sch, (mine(batches[0][0]),), grid=grid.sizes())
    print(f"rank {lamina.rank()}: replica {replica} of {replicas}, tensor "
          f"rank {grid.rank('tp')} of {tp}", flush=True)

    ours = torch.optim.AdamW(compiled.parameters(), lr=1e-3)
    theirs = torch.optim.AdamW(eager.parameters(), lr=1e-3)
    for index, (x, target) in enumerate(batches):
        ours.zero_grad()
        loss = F.mse_loss(compiled(mine(x)), mine(target))
        loss.backward()
        ours.step()
        with torch.no_grad():
            expected = F.mse_loss(eager(mine(x)), mine(target)).item()
        theirs.zero_grad()
        F.mse_loss(eager(x), target).backward()  # the global batch
        theirs.step()
        if abs(loss.item() - expected) > 1e-4 * abs(expected):
            raise SystemExit(f"rank {lamina.rank()}, step {index}: loss "
                             f"{loss.item()} differs from eager PyTorch's "
                             f"{expected}")
        print(f"rank {lamina.rank()}, step {index}: loss {loss.item():.6f}",
              flush=True)
    print(f"rank {lamina.rank()}: every step equals eager PyTorch on the "
          f"global batch", flush=True)


if __name__ == "__main__":
    main()
