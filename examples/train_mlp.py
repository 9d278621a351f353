#!/usr/bin/env python3
"""Train a GPT-2 MLP through Lamina: a few SGD steps on the compiled
forward / backward pair, checked against eager PyTorch at every step.

    /usr/bin/python3 examples/train_mlp.py

(after ./dev.sh build, which makes `import lamina` work for /usr/bin/python3).
docs/training.md describes what is supported.
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
    torch.manual_seed(0)
    model = MLP()
    eager = copy.deepcopy(model)  # the reference, on the same weights
    x = torch.randn(4, 16, 64)

    sch = lamina.create_schedule(model, example_inputs=(x,))
    sch["fc_in"].decompose()
    sch["fc_in"].fuse()       # matmul + bias + GELU in one loop nest
    sch["fc_in"].checkpoint()  # recomputed in the backward, not saved
    compiled = lamina.build(sch, (x,))
    print("parameters:", ", ".join(n for n, _ in compiled.named_parameters()))

    optimizer = torch.optim.SGD(compiled.parameters(), lr=0.5, momentum=0.9)
    reference = torch.optim.SGD(eager.parameters(), lr=0.5, momentum=0.9)
    for index in range(5):
        batch = torch.randn(4, 16, 64)
        target = 0.5 * batch  # learn y = x / 2
        loss = step(compiled, optimizer, batch, target)
        want = step(eager, reference, batch, target)
        assert abs(loss - want) <= 1e-4 * abs(want), (loss, want)
        print(f"step {index}: loss {loss:.6f} (eager {want:.6f})")
    for (name, p), q in zip(compiled.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5,
                                   msg=lambda m: f"{name}: {m}")
    print("trained through Lamina: every step equals eager PyTorch")


if __name__ == "__main__":
    main()
