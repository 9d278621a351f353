#!/usr/bin/env python3
"""Schedule a GPT-2 MLP Slapo-style and run it compiled on the CPU.

    /usr/bin/python3 examples/gpt2_mlp_schedule.py

(after ./dev.sh build, which makes `import lamina` work for /usr/bin/python3).
"""

import torch
from torch import nn

import lamina


class MLP(nn.Module):
    def __init__(self, hidden=256, inter=1024, p=0.1):
        super().__init__()
        self.fc_in = nn.Linear(hidden, inter)
        self.act = nn.GELU(approximate="tanh")
        self.fc_out = nn.Linear(inter, hidden)
        self.dropout = nn.Dropout(p)

    def forward(self, x):
        return self.dropout(self.fc_out(self.act(self.fc_in(x))))


def main():
    torch.manual_seed(0)
    model = MLP().eval()
    x = torch.randn(4, 32, 256)

    sch = lamina.create_schedule(model, example_inputs=(x,))
    sch["fc_in"].decompose()    # nn.Linear → matmul + separate bias add
    sch["fc_in"].fuse()         # matmul + bias + GELU: one loop nest
    sch["fc_out"].fuse()
    print(sch.transform_script())

    lamina.verify(sch, (x,))    # the compiled program vs eager PyTorch
    compiled = lamina.build(sch, (x,))
    y = compiled(x)
    torch.testing.assert_close(y, model(x))
    print("compiled GPT-2 MLP:", tuple(y.shape), "equals eager PyTorch")


if __name__ == "__main__":
    main()
