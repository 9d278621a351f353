"""slapo.op.ParallelCrossEntropy with Slapo's signature (per-token losses,
no reduction), against Slapo's formula for one rank (logsumexp of the
logits minus the label's logit), and compiled by Lamina with its gradients
against eager PyTorch."""

import copy

import pytest
import torch
from torch import nn

import lamina.slapo as slapo
from lamina import ScheduleError


def slapo_formula(logits, labels):
    picked = logits.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    return torch.logsumexp(logits, -1) - picked


def test_per_token_losses_as_slapo_computes_them():
    torch.manual_seed(0)
    logits = torch.randn(5, 2, 11)
    labels = torch.randint(0, 11, (5, 2))
    losses = slapo.op.ParallelCrossEntropy()(logits, labels)
    assert losses.shape == (5, 2)
    torch.testing.assert_close(losses, slapo_formula(logits, labels))


class LanguageModelLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(16, 40)
        self.loss = slapo.op.ParallelCrossEntropy()

    def forward(self, hidden, labels):
        return self.loss(self.head(hidden), labels).mean()


def test_compiled_loss_and_gradients_match_eager():
    torch.manual_seed(1)
    model = LanguageModelLoss()
    reference = copy.deepcopy(model)
    built, _ = slapo.build(slapo.create_schedule(model), init_weights=False)
    hidden = torch.randn(6, 3, 16)
    labels = torch.randint(0, 40, (6, 3))
    ours, theirs = hidden.clone().requires_grad_(), \
        hidden.clone().requires_grad_()
    loss, expected = built(ours, labels), reference(theirs, labels)
    torch.testing.assert_close(loss, expected)
    loss.backward()
    expected.backward()
    torch.testing.assert_close(ours.grad, theirs.grad)
    torch.testing.assert_close(dict(built.named_parameters())[
        "head.weight"].grad, reference.head.weight.grad)
    assert "lamina.cross_entropy" in built.ir("imported")


def test_process_groups_are_not_taken():
    with pytest.raises(ScheduleError, match="MPI world"):
        slapo.op.ParallelCrossEntropy(group=object())
