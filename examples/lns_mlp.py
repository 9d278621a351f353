#!/usr/bin/env python3
"""An MLP whose linear layers compute in a logarithmic number system
(bit-exact with the xlnstorch reference), compiled and compared with the
float model.

    /usr/bin/python3 examples/lns_mlp.py
"""

import torch
from torch import nn

import lamina
from lamina import lns


class LnsMLP(nn.Module):
    def __init__(self, f=16):
        super().__init__()
        self.fc_in = lns.LNSLinear(64, 256, weight_f=f)
        self.act = nn.ReLU()
        self.fc_out = lns.LNSLazyLinear(64, weight_f=f)  # in_features: 256

    def forward(self, x):
        return self.fc_out(self.act(self.fc_in(x)))


def main():
    torch.manual_seed(0)
    model = LnsMLP()
    x = torch.randn(8, 64)
    eager = model(x)            # compiled LNS kernels, layer by layer

    compiled = lamina.build(lamina.create_schedule(model), (x,))
    y = compiled(x)             # the whole model as one program
    assert torch.equal(y, eager), "the compiled model must give the same codes"

    def values(layer):
        return layer.weight.value.float(), layer.bias.value.float()

    floats = nn.functional.linear(
        torch.relu(nn.functional.linear(x, *values(model.fc_in))),
        *values(model.fc_out))
    error = (y - floats).abs().max().item()
    print(f"LNS (f = 16) MLP: {tuple(y.shape)}, max |LNS - float| = "
          f"{error:.2e}")
    print("weight codes of fc_in:", model.fc_in.weight.codes[0, :4].tolist())


if __name__ == "__main__":
    main()
