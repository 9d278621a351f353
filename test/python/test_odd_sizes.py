"""Feature sizes that are not multiples of the vector width: a language
model's head over a vocabulary of 65 or 76 with cross-entropy, an MLP of odd
widths, trained through the compiled forward / backward pair against eager
PyTorch (fp32, rtol = atol = 1e-5). A subset of the sweep that
bench/odd_sizes.py runs whole (every size 1-130 and primes near 1000, with
compile times)."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lamina

TOL = dict(rtol=1e-5, atol=1e-5)


class Head(nn.Module):
    """nanoGPT's head and loss: logits over the vocabulary, cross-entropy."""

    def __init__(self, n_embd, vocab, bias=False):
        super().__init__()
        self.lm_head = nn.Linear(n_embd, vocab, bias=bias)

    def forward(self, x, targets):
        logits = self.lm_head(x)
        return F.cross_entropy(logits.view(-1, logits.size(-1)),
                               targets.view(-1))


class Mlp(nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.fc_in = nn.Linear(width, hidden)
        self.act = nn.GELU(approximate="tanh")
        self.fc_out = nn.Linear(hidden, width)

    def forward(self, x):
        return x + self.fc_out(self.act(self.fc_in(x)))


def step(model, inputs):
    """The loss (or output sum of squares) and every gradient."""
    leaves = [x.clone().requires_grad_() if x.is_floating_point() else x
              for x in inputs]
    out = model(*leaves)
    loss = out if out.ndim == 0 else out.square().sum()
    loss.backward()
    grads = {name: p.grad for name, p in model.named_parameters()}
    return loss.detach(), grads, [x.grad for x in leaves
                                  if x.is_floating_point()]


def check_against_eager(model, inputs):
    eager = copy.deepcopy(model)
    compiled = lamina.build(lamina.create_schedule(model,
                                                   example_inputs=inputs))
    got, got_grads, got_dx = step(compiled, inputs)
    want, want_grads, want_dx = step(eager, inputs)
    torch.testing.assert_close(got, want, **TOL)
    assert got_grads.keys() == want_grads.keys()
    for name in want_grads:
        torch.testing.assert_close(got_grads[name], want_grads[name], **TOL,
                                   msg=lambda m: f"{name}: {m}")
    for g, w in zip(got_dx, want_dx):
        torch.testing.assert_close(g, w, **TOL)


@pytest.mark.parametrize("vocab", [1, 2, 3, 7, 12, 17, 31, 65, 76, 97, 130])
def test_head_and_cross_entropy_of_any_vocabulary(vocab):
    torch.manual_seed(vocab)
    x = torch.randn(4, 8, 32)
    targets = torch.randint(0, vocab, (4, 8))
    check_against_eager(Head(32, vocab).train(), (x, targets))


@pytest.mark.parametrize("n_embd, vocab", [(64, 76), (24, 65), (13, 50)])
def test_heads_with_bias_and_odd_widths(n_embd, vocab):
    torch.manual_seed(n_embd)
    x = torch.randn(2, 16, n_embd)
    targets = torch.randint(0, vocab, (2, 16))
    check_against_eager(Head(n_embd, vocab, bias=True).train(), (x, targets))


@pytest.mark.parametrize("width, hidden", [(20, 76), (9, 36), (48, 131)])
def test_mlp_of_odd_widths(width, hidden):
    torch.manual_seed(width)
    check_against_eager(Mlp(width, hidden).train(),
                        (torch.randn(3, 10, width),))
