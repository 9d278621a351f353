"""A LLaMA-2 model as single-file implementations write it (llama_model.py:
grouped-query attention through repeat_kv, rotary embeddings, an additive
causal mask, SwiGLU, a tied head, the loss stored in `self.last_loss`),
compiled whole on one rank: its logits, the loss it stores and the
gradients of every parameter against eager PyTorch, and five AdamW steps
reading the loss as llama2.c's train.py reads it (`raw_model.last_loss`)."""

import copy

import torch

import lamina
from llama_model import Llama, LlamaArgs

TOL = dict(rtol=1e-4, atol=1e-5)


def twins():
    torch.manual_seed(0)
    model = Llama(LlamaArgs())
    return model, copy.deepcopy(model)


def batch(seed):
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, LlamaArgs.vocab_size, (2, 12), generator=g)
    targets = torch.roll(tokens, -1, 1)
    targets[:, -1] = -1  # ignored, as the last position of a document
    return tokens, targets


def test_logits_loss_and_gradients_match_eager():
    model, eager = twins()
    compiled = lamina.build(lamina.create_schedule(model))
    tokens, targets = batch(1)
    logits = compiled(tokens, targets)
    expected = eager(tokens, targets)
    torch.testing.assert_close(logits, expected, **TOL)
    torch.testing.assert_close(compiled.last_loss, eager.last_loss, **TOL)
    compiled.last_loss.backward()
    eager.last_loss.backward()
    grads = dict(eager.named_parameters())
    for name, parameter in compiled.named_parameters():
        torch.testing.assert_close(parameter.grad, grads[name].grad, **TOL,
                                   msg=lambda m: f"{name}: {m}")
    # Without targets: the last position's logits, and no loss.
    with torch.no_grad():
        torch.testing.assert_close(compiled.eval()(tokens),
                                   eager.eval()(tokens), **TOL)
    assert compiled.last_loss is None


def test_adamw_steps_on_the_stored_loss_give_eager_losses():
    model, eager = twins()
    compiled = lamina.build(lamina.create_schedule(model))
    ours = torch.optim.AdamW(compiled.parameters(), lr=1e-3)
    theirs = torch.optim.AdamW(eager.parameters(), lr=1e-3)
    for step in range(5):
        tokens, targets = batch(10 + step)
        losses = []
        for module, optimizer in ((compiled, ours), (eager, theirs)):
            module(tokens, targets)
            loss = module.last_loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(loss.item())
        assert abs(losses[0] - losses[1]) <= 1e-4 * abs(losses[1]), losses
    weights = dict(eager.named_parameters())
    for name, parameter in compiled.named_parameters():
        torch.testing.assert_close(parameter, weights[name], **TOL,
                                   msg=lambda m: f"{name}: {m}")
