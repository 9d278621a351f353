"""The ops a LLaMA-2 file writes (issue: LLaMA as people write it): RMSNorm
computing in float (`x.float()`, `type_as`), rotary embeddings applied with
`reshape(..., -1, 2).unbind(-1)` and `torch.stack(..., dim=-1).flatten(3)`,
casts between float types; compiled forward and gradients against eager
PyTorch."""

import pytest
import torch
from torch import nn

import lamina
from llama_model import RMSNorm, apply_rotary_emb, precompute_freqs

TOL = dict(rtol=1e-5, atol=1e-5)


class Rotary(nn.Module):
    """Queries and keys projected, split into heads and rotated."""

    def __init__(self, dim=32, heads=4, length=8):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        cos, sin = precompute_freqs(self.head_dim, length)
        self.register_buffer("freqs_cos", cos, persistent=False)
        self.register_buffer("freqs_sin", sin, persistent=False)

    def forward(self, x):
        b, t, _ = x.shape
        xq = self.wq(x).view(b, t, self.heads, self.head_dim)
        xk = self.wk(x).view(b, t, self.heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, self.freqs_cos[:t],
                                  self.freqs_sin[:t])
        return (xq * xk).sum(-1)


def twins(make):
    torch.manual_seed(0)
    model = make()
    eager = make()
    eager.load_state_dict(model.state_dict())
    return model, eager


@pytest.mark.parametrize("make", [lambda: RMSNorm(32), Rotary],
                         ids=["rmsnorm", "rotary"])
def test_forward_and_gradients_match_eager(make):
    model, eager = twins(make)
    compiled = lamina.build(lamina.create_schedule(model))
    x = torch.randn(2, 8, 32, generator=torch.Generator().manual_seed(1))
    ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
    y, y_eager = compiled(ours), eager(theirs)
    torch.testing.assert_close(y, y_eager, **TOL)
    weight = torch.randn(y.shape, generator=torch.Generator().manual_seed(2))
    (y * weight).sum().backward()
    (y_eager * weight).sum().backward()
    torch.testing.assert_close(ours.grad, theirs.grad, **TOL)
    grads = dict(eager.named_parameters())
    for name, parameter in compiled.named_parameters():
        torch.testing.assert_close(parameter.grad, grads[name].grad, **TOL,
                                   msg=lambda m: f"{name}: {m}")


class Casts(nn.Module):
    def forward(self, x):
        wide = x.float() * 3.0
        return wide.to(torch.bfloat16), wide.half(), wide.type_as(x)


def test_casts_between_float_types_round_as_eager():
    x = torch.randn(4, 16).to(torch.bfloat16)
    compiled = lamina.build(lamina.create_schedule(Casts()))
    with torch.no_grad():
        ours, theirs = compiled(x), Casts()(x)
    for got, want in zip(ours, theirs):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=0, atol=0)
