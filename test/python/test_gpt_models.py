"""Whole GPT-2 models as people write them (gpt_models.py), compiled by
Lamina and compared with eager PyTorch: logits and loss in eval and train
mode, gradients through embedding and cross-entropy, and a few optimizer
steps with equal losses."""

import pytest
import torch

import lamina
from gpt_models import GPTConfig, HandWrittenGPT, TiedGPT

CONFIG = GPTConfig(block_size=16, vocab_size=96, n_layer=2, n_head=4,
                   n_embd=32)


def twins(make, config=CONFIG):
    torch.manual_seed(0)
    model, twin = make(config), make(config)
    twin.load_state_dict(model.state_dict())
    return model, twin


_BUILT = {}


def built(make):
    """(model, compiled, eager twin) with the initial weights: one compiled
    module per model class for the whole file (its programs compile once
    per input shape and mode), its weights reset in place."""
    if make not in _BUILT:
        model, _ = twins(make)
        _BUILT[make] = (model, lamina.build(lamina.create_schedule(model)),
                        {k: v.clone() for k, v in model.state_dict().items()})
    model, compiled, initial = _BUILT[make]
    with torch.no_grad():
        model.load_state_dict(initial)
    for parameter in model.parameters():
        parameter.grad = None
    model.train()
    compiled.train()
    twin = make(CONFIG)
    twin.load_state_dict(initial)
    return model, compiled, twin


def batch(seed=0, b=2, t=8):
    generator = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, CONFIG.vocab_size, (b, t), generator=generator)
    targets = torch.randint(0, CONFIG.vocab_size, (b, t),
                            generator=generator)
    targets[0, :2] = -1  # ignored positions
    return idx, targets


def loss_of(model, idx, targets):
    if isinstance(model, HandWrittenGPT) or (
            isinstance(model, lamina.CompiledModule) and
            isinstance(model.schedule.model, HandWrittenGPT)):
        logits = model(idx)
        return logits, torch.nn.functional.cross_entropy(
            logits.view(-1, logits.size(-1)), targets.view(-1),
            ignore_index=-1)
    return model(idx, targets)


@pytest.mark.parametrize("make", [HandWrittenGPT, TiedGPT])
@pytest.mark.parametrize("mode", ["eval", "train"])
def test_logits_match_eager(make, mode):
    model, compiled, twin = built(make)
    compiled.train(mode == "train"), twin.train(mode == "train")
    idx, _ = batch()
    got, want = compiled(idx), twin(idx)
    if make is TiedGPT:
        assert got[1] is None and want[1] is None
        assert got[0].shape == (2, 1, CONFIG.vocab_size)
        got, want = got[0], want[0]
    torch.testing.assert_close(got, want)


@pytest.mark.parametrize("make", [HandWrittenGPT, TiedGPT])
def test_loss_and_gradients_match_eager(make):
    model, compiled, twin = built(make)
    idx, targets = batch()
    logits, loss = loss_of(compiled, idx, targets)
    want_logits, want_loss = loss_of(twin, idx, targets)
    torch.testing.assert_close(logits, want_logits)
    torch.testing.assert_close(loss, want_loss)
    loss.backward()
    want_loss.backward()
    grads = dict(compiled.named_parameters())
    names = [n for n, _ in twin.named_parameters()]
    assert names == list(grads)
    for name, parameter in twin.named_parameters():
        torch.testing.assert_close(grads[name].grad, parameter.grad,
                                   msg=lambda m: f"{name}: {m}")


def test_tied_head_weight_is_one_parameter_with_both_gradients():
    model, compiled, twin = built(TiedGPT)
    parameters = dict(compiled.named_parameters())
    # Registered once, under its first name, as named_parameters() does.
    assert parameters["transformer.wte.weight"] is model.lm_head.weight
    assert "lm_head.weight" not in parameters
    idx, targets = batch()
    compiled(idx, targets)[1].backward()
    twin(idx, targets)[1].backward()
    torch.testing.assert_close(model.lm_head.weight.grad,
                               twin.lm_head.weight.grad)


@pytest.mark.parametrize("make", [HandWrittenGPT, TiedGPT])
def test_optimizer_steps_give_the_eager_losses(make):
    model, compiled, twin = built(make)
    ours = torch.optim.AdamW(compiled.parameters(), lr=1e-2)
    theirs = torch.optim.AdamW(twin.parameters(), lr=1e-2)
    losses = []
    for step in range(3):
        idx, targets = batch(seed=step)
        for optimizer, module in ((ours, compiled), (theirs, twin)):
            optimizer.zero_grad()
            loss = loss_of(module, idx, targets)[1]
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    got, want = losses[0::2], losses[1::2]
    torch.testing.assert_close(torch.tensor(got), torch.tensor(want),
                               rtol=1e-4, atol=1e-5)
    assert got[-1] < got[0]


def test_training_mode_dropout_is_seeded_and_trains():
    config = GPTConfig(block_size=16, vocab_size=96, n_layer=1, n_head=4,
                       n_embd=32, dropout=0.1)
    model = TiedGPT(config).train()
    compiled = lamina.build(lamina.create_schedule(model))
    idx, targets = batch()
    lamina.manual_seed(7)
    first = compiled(idx, targets)[1]
    lamina.manual_seed(7)
    again = compiled(idx, targets)[1]
    lamina.manual_seed(8)
    other = compiled(idx, targets)[1]
    assert first.item() == again.item() != other.item()
    first.backward()
    assert all(p.grad is not None for p in compiled.parameters())


def test_a_longer_sequence_than_the_block_fails_as_in_eager():
    _, compiled, _ = built(TiedGPT)
    idx = torch.zeros(1, CONFIG.block_size + 1, dtype=torch.long)
    with pytest.raises(AssertionError, match="Cannot forward sequence"):
        compiled(idx)
