"""Checks lamina-run-model-ops.mlir's results against eager PyTorch."""

import sys

import numpy as np
import torch
import torch.nn.functional as F

directory = sys.argv[1]


def load(name):
    return torch.from_numpy(np.load(f"{directory}/{name}.npy"))


idx, w, t, p = load("idx"), load("w"), load("t"), load("p")
w.requires_grad_()
p.requires_grad_()
mask = torch.tensor([False, True, False, True, False]).view(1, 5, 1)
rows = F.embedding(idx, w).masked_fill(mask, -2.5).reshape(10, 4)
loss = F.cross_entropy(rows @ p, t, ignore_index=-1)
loss.backward()
got = np.load(f"{directory}/fwd/result0.npy")
np.testing.assert_allclose(got, loss.detach().numpy(), rtol=1e-6)
for index, expected in enumerate((w.grad, p.grad)):
    np.testing.assert_allclose(np.load(f"{directory}/bwd/result{index}.npy"),
                               expected.numpy(), rtol=1e-5, atol=1e-6)
