#!/usr/bin/env python3
"""Training in a logarithmic number system, as xlnstorch does it: an MLP of
LNSLazyLinear layers, loss.backward() through LNS tensors (gradients
computed in LNS arithmetic), LNSAdam steps, then the model saved and
loaded with its codes and bases. Then a float MLP whose first layer a
schedule replaces by its LNS variant, trained compiled with torch.optim
for the float layer and LNSSGD for the LNS one, step for step with the
same model in eager PyTorch.

    /usr/bin/python3 examples/lns_train.py
"""

import copy
import io

import torch
import torch.nn.functional as F
from torch import nn

import lamina
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
    compiled_float_model_with_an_lns_layer(x.float(), y.float())


def compiled_float_model_with_an_lns_layer(x, y):
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    sch = lamina.create_schedule(model, example_inputs=(x,))
    sch["0"].replace(lns.LNSLinear(8, 32, weight_f=16))
    compiled = lamina.build(sch, (x,))
    eager = copy.deepcopy(model)
    eager[0] = lns.LNSLinear.from_linear(model[0], weight_f=16)

    def optimizers(m, lns_groups):
        floats = [p for n, p in m.named_parameters() if not n.endswith("_lns")]
        return (torch.optim.SGD(floats, lr=0.05),
                lns.LNSSGD(lns_groups, lr=0.05, momentum=0.9))
    runs = [(compiled, optimizers(compiled, compiled.lns_parameters())),
            (eager, optimizers(eager, eager[0].lns_parameters()))]
    for step in range(10):
        losses = []
        for m, opts in runs:
            for o in opts:
                o.zero_grad()
            loss = F.mse_loss(m(x), y)
            loss.backward()   # the LNS layer's gradients as LNS codes
            for o in opts:
                o.step()
            losses.append(loss.item())
        if step % 3 == 0 or step == 9:
            print(f"compiled step {step}: loss {losses[0]:.4f} "
                  f"(eager {losses[1]:.4f})")
    print("LNS parameters:", [n for n, _ in compiled.named_parameters()
                              if n.endswith("_lns")])


if __name__ == "__main__":
    main()
