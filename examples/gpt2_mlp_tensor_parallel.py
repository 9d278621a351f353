#!/usr/bin/env python3
"""The GPT-2 MLP tensor parallel on 2 MPI ranks (Megatron's recipe),
scheduled from Python; each rank takes its block of the full weights.

    mpirun.mpich -np 2 /usr/bin/python3 examples/gpt2_mlp_tensor_parallel.py

Lamina uses MPICH: launch with `mpirun.mpich` (Debian's plain `mpirun` is
Open MPI's, whose processes would each see a world of one, which Lamina
refuses).
"""

import torch

import lamina
from gpt2_mlp_schedule import MLP


def main():
    torch.manual_seed(0)  # the same full weights on every rank
    model = MLP()
    x = torch.randn(4, 32, 256)

    sch = lamina.create_schedule(model, world_size=2, example_inputs=(x,))
    sch["fc_in"].shard("weight", 0)
    sch["fc_in"].shard("bias", 0)
    sch["fc_in"].sync("bwd_post", "all_reduce")
    sch["fc_out"].shard("weight", 1)
    sch["fc_out"].sync("fwd_post", "all_reduce")  # before fc_out's bias

    lamina.verify(sch, (x,))    # every rank against the unsharded model
    lamina.manual_seed(1234)    # the same dropout seed on every rank
    compiled = lamina.build(sch, (x,))
    y = compiled(x)             # training-mode dropout, masks by element
    print(f"rank {lamina.rank()} of {lamina.world_size()}: output "
          f"{tuple(y.shape)}, dropped {float((y == 0).float().mean()):.3f}",
          flush=True)


if __name__ == "__main__":
    main()
