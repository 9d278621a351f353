"""A rank that dies in the middle of a tensor-parallel run, run by
test_mpi_faults.py under `mpirun.mpich -np W`: `python3 rank_fault.py HOW
[data-parallel]`. Every rank compiles the Megatron MLP and runs it once
("rank R: ready"), then the last rank dies (HOW: abort, kill, segfault or
exit, a sys.exit(3)) while the others wait for it in the next run's
all-reduce; with `data-parallel`, every rank is a data replica of the MLP
and the others wait for it in the next training step's gradient
reduction."""

import ctypes
import os
import signal
import sys
import time

import torch
from torch import nn

import lamina

RANK, WORLD = lamina.rank(), lamina.world_size()


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc_in = nn.Linear(16, 32)
        self.fc_out = nn.Linear(32, 16)

    def forward(self, x):
        return self.fc_out(torch.relu(self.fc_in(x)))


def run_once(compiled, x, data_parallel):
    """A forward (tensor parallel) or a training step, whose backward
    reduces the gradients over the data replicas."""
    if data_parallel:
        compiled(x).square().mean().backward()
    else:
        with torch.no_grad():
            compiled(x)


torch.manual_seed(0)
model = MLP().eval()
x = torch.randn(4, 16)
data_parallel = sys.argv[2:] == ["data-parallel"]
if data_parallel:
    sch = lamina.create_schedule(model, world_size=1, example_inputs=(x,))
    compiled = lamina.build(sch, (x,), grid={"dp": WORLD})
else:
    sch = lamina.create_schedule(model, world_size=WORLD,
                                 example_inputs=(x,))
    sch["fc_in"].shard("weight", 0).shard("bias", 0).sync("bwd_post",
                                                           "all_reduce")
    sch["fc_out"].shard("weight", 1).sync("fwd_post", "all_reduce")
    compiled = lamina.build(sch, (x,))
run_once(compiled, x, data_parallel)
print(f"rank {RANK}: ready, process {os.getpid()}", flush=True)

if RANK == WORLD - 1:
    time.sleep(1)  # the others are inside the all-reduce by now
    how = sys.argv[1]
    print(f"rank {RANK}: dies at {time.time():.3f}", flush=True)
    if how == "abort":
        os.abort()
    elif how == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif how == "segfault":
        ctypes.string_at(0)
    elif how == "exit":
        sys.exit(3)
run_once(compiled, x, data_parallel)
print(f"rank {RANK}: finished", flush=True)
