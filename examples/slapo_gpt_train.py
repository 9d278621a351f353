#!/usr/bin/env python3
"""A Slapo schedule, as Slapo users write it, compiled and trained by Lamina:
a GPT-style stack (LayerNorm, FusedQKV softmax attention, GELU MLP, a final
LayerNorm and a head) with Megatron-sharded MLPs, built with slapo.build,
checked with slapo.Verify (outputs and gradients), and trained with AdamW;
every loss is checked against eager PyTorch on the whole model.

    mpirun.mpich -np 2 /usr/bin/python3 examples/slapo_gpt_train.py

docs/slapo.md describes lamina.slapo.
"""

import copy

import torch
import torch.nn.functional as F
from torch import nn

import lamina
import lamina.slapo as slapo


class Block(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.hidden = hidden
        self.ln_1 = nn.LayerNorm(hidden)
        self.attn = slapo.op.FusedQKV(hidden, heads, 1)
        self.proj = nn.Linear(hidden, hidden)
        self.scale = (hidden // heads) ** -0.5
        self.ln_2 = nn.LayerNorm(hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden),
                                 nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * hidden, hidden))

    def forward(self, x):
        q, k, v = self.attn(self.ln_1(x))
        q, v = q.permute(0, 2, 1, 3), v.permute(0, 2, 1, 3)
        scores = torch.matmul(q, k.permute(0, 2, 3, 1)) * self.scale
        heads = torch.matmul(scores.softmax(dim=-1), v).permute(0, 2, 1, 3)
        x = x + self.proj(heads.reshape(x.shape[0], x.shape[1], self.hidden))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, layers=2, hidden=32, heads=4, outputs=16):
        super().__init__()
        self.h = nn.ModuleList([Block(hidden, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, outputs)

    def forward(self, x):
        for block in self.h:
            x = block(x)
        return self.head(self.ln_f(x))


def schedule(sch):
    """Megatron's MLP recipe on every block, in Slapo's spelling."""
    for index in range(len(sch.mod.h)):
        mlp = sch[f"h.{index}"]["mlp"]
        mlp["0"].shard("weight", axis=0)
        mlp["0"].shard("bias", axis=0)
        mlp["0"].sync(mode="bwd_post", sync_op_or_fn="all_reduce")
        mlp["2"].shard("weight", axis=1)
        mlp["2"].sync(mode="fwd_post", sync_op_or_fn="all_reduce")


def main():
    torch.manual_seed(0)  # the same model and data on every rank
    model = GPT().eval()
    eager = copy.deepcopy(model)
    rank = lamina.rank()
    x = torch.randn(2, 8, 32)

    sch = slapo.create_schedule(model)  # the world: the launched MPI world
    with slapo.Verify(sch, [x]):
        schedule(sch)
    compiled, _ = slapo.build(sch, init_weights=False)
    optimizer = torch.optim.AdamW(compiled.parameters(), lr=1e-3)
    reference = torch.optim.AdamW(eager.parameters(), lr=1e-3)
    block = dict(compiled.named_parameters())["h.0.mlp.0.weight"]
    print(f"rank {rank} of {sch.world_size}: h.0.mlp.0.weight block "
          f"{tuple(block.shape)} of {tuple(model.h[0].mlp[0].weight.shape)}",
          flush=True)
    for step in range(5):
        x, target = torch.randn(2, 8, 32), torch.randn(2, 8, 16)
        losses = []
        for opt, net in ((optimizer, compiled), (reference, eager)):
            opt.zero_grad()
            loss = F.mse_loss(net(x), target)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        print(f"rank {rank}, step {step}: loss {losses[0]:.6f}", flush=True)
        torch.testing.assert_close(losses[0], losses[1], rtol=1e-4, atol=0)
    print(f"rank {rank}: every step equals eager PyTorch", flush=True)


if __name__ == "__main__":
    main()
