"""Repeated blocks compiled once (lamina-outline-repeated-blocks, on by
default in lamina-cpu-pipeline): a GPT of three equal layers computes what
the program with every layer inline computes, dropout masks included
(each layer keeps its own), and what eager PyTorch computes without
dropout."""

import copy

import torch

import lamina
from gpt_models import GPTConfig, TiedGPT

INLINED = "lamina-cpu-pipeline{outline-repeated-blocks=false}"


def config(dropout):
    return GPTConfig(block_size=16, vocab_size=96, n_layer=3, n_head=4,
                     n_embd=32, dropout=dropout)


def batch():
    generator = torch.Generator().manual_seed(3)
    idx = torch.randint(0, 96, (2, 16), generator=generator)
    return idx, torch.roll(idx, -1, 1)


def step(compiled, idx, targets, seed):
    """The loss and every parameter's gradient of one training step whose
    dropout masks come from `seed`."""
    compiled.zero_grad(set_to_none=True)
    lamina.manual_seed(seed)
    _, loss = compiled(idx, targets)
    loss.backward()
    return loss.detach(), {name: p.grad.clone()
                           for name, p in compiled.named_parameters()}


def test_dropout_masks_and_gradients_equal_the_inlined_programs():
    torch.manual_seed(0)
    model = TiedGPT(config(dropout=0.2)).train()
    outlined = lamina.build(lamina.create_schedule(copy.deepcopy(model)))
    inlined = lamina.build(lamina.create_schedule(copy.deepcopy(model)),
                           pipeline=INLINED)
    idx, targets = batch()
    for seed in (7, 8):
        loss, grads = step(outlined, idx, targets, seed)
        loss_inlined, grads_inlined = step(inlined, idx, targets, seed)
        # Other masks would move the loss by far more than rounding.
        torch.testing.assert_close(loss, loss_inlined, rtol=1e-6, atol=1e-6)
        assert grads.keys() == grads_inlined.keys()
        for name in grads:
            torch.testing.assert_close(grads[name], grads_inlined[name],
                                       rtol=1e-5, atol=1e-6, msg=name)
    # The masks are drawn again for each seed: two seeds, two losses.
    assert step(outlined, idx, targets, 7)[0] != \
        step(outlined, idx, targets, 8)[0]


def test_outlined_layers_train_as_eager():
    torch.manual_seed(0)
    model = TiedGPT(config(dropout=0.0)).train()
    eager = copy.deepcopy(model)
    compiled = lamina.build(lamina.create_schedule(model))
    idx, targets = batch()
    loss, grads = step(compiled, idx, targets, seed=0)
    _, eager_loss = eager(idx, targets)
    eager_loss.backward()
    torch.testing.assert_close(loss, eager_loss.detach(), rtol=1e-5,
                               atol=1e-5)
    for name, parameter in eager.named_parameters():
        torch.testing.assert_close(grads[name], parameter.grad, rtol=1e-4,
                                   atol=1e-5, msg=name)
    with torch.no_grad():
        compiled.eval()
        eager.eval()
        torch.testing.assert_close(compiled(idx)[0], eager(idx)[0],
                                   rtol=1e-5, atol=1e-5)
