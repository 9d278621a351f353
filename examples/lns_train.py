#!/usr/bin/env python3
"""Training in a logarithmic number system, as xlnstorch does it: an MLP of
LNSLazyLinear layers, loss.backward() through LNS tensors (gradients
computed in LNS arithmetic), LNSAdam steps, then the model saved and
loaded with its codes and bases.

    /usr/bin/python3 examples/lns_train.py
"""

import io

import torch
import torch.nn.functional as F

from lamina import lns


class LnsMLP(lns.LNSModule):
    def __init__(self, f=16):
        super().__init__()
        self.fc1 = lns.LNSLazyLinear(32, weight_f=f)
        self.fc2 = lns.LNSLazyLinear(1, weight_f=f)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def main():
    torch.manual_seed(0)
    x = torch.randn(64, 8, dtype=torch.float64)
    y = torch.sin(x[:, :1]) + 0.5 * x[:, 1:2]
    xs, ys = lns.lnstensor(x, f=16), lns.lnstensor(y, f=16)

    model = LnsMLP()
    model(xs)  # the lazy layers take their widths from a first input
    optimizer = lns.LNSAdam(model.lns_parameters(), lr=0.01)
    for step in range(30):
        optimizer.zero_grad()
        loss = F.mse_loss(model(xs), ys)
        loss.backward()          # gradients in LNS, into each *_lns .grad
        optimizer.step()         # the update in LNS as well
        if step % 10 == 0 or step == 29:
            print(f"step {step:2d}: loss {loss.item():.4f}")

    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    restored = LnsMLP()
    restored(xs)
    restored.load_state_dict(torch.load(buffer))
    assert torch.equal(restored(xs).codes, model(xs).codes)
    print("saved and loaded:", sorted(model.state_dict()))


if __name__ == "__main__":
    main()
