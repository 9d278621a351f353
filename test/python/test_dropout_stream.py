"""Compiled dropout's random stream (lamina.rng): each call draws fresh
masks from PyTorch's generator, reseeding replays them, the backward of a
call follows that call's masks, and saving and restoring the generator's
state mid-run resumes the sequence. References: lamina.philox (the masks'
definition) and an uninterrupted run of the same loop."""

import copy

import numpy as np
import torch
from torch import nn

import lamina
from lamina import philox


def inputs(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


class Dropout(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return self.drop(x)


class Mlp(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.fc_in = nn.Linear(16, 32)
        self.act = nn.GELU(approximate="tanh")
        self.fc_out = nn.Linear(32, 16)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return self.drop(self.fc_out(self.drop(self.act(self.fc_in(x)))))


def kept(y):
    return y != 0


def built_dropout(p, x):
    return lamina.build(lamina.create_schedule(Dropout(p).train()), (x,))


def test_every_call_draws_new_masks_at_the_rate_p():
    p, calls = 0.25, 40
    x = inputs(32, 64, seed=1) + 5.0  # no element is zero
    compiled = built_dropout(p, x)
    lamina.manual_seed(3)
    masks = torch.stack([kept(compiled(x)) for _ in range(calls)])
    rates = 1 - masks.float().mean(dim=(1, 2))
    assert ((0.2 < rates) & (rates < 0.3)).all(), rates
    distinct = {tuple(m.flatten().tolist()) for m in masks}
    assert len(distinct) == calls
    # One mask reused would keep an element in every call or in none;
    # independent masks keep it in all 40 with probability 0.75^40 ~ 1e-5.
    per_element = masks.float().mean(dim=0)
    assert (per_element == 1).float().mean() < 0.01
    assert (per_element == 0).sum() == 0
    assert abs(per_element.mean().item() - (1 - p)) < 0.02


def test_each_call_is_the_philox_mask_of_the_key_it_drew():
    p = 0.3
    x = inputs(8, 40, seed=2) + 5.0
    compiled = built_dropout(p, x)
    lamina.manual_seed(11)
    got = [compiled(x) for _ in range(3)]
    lamina.manual_seed(11)
    keys = [lamina.rng.next_dropout_key() for _ in range(3)]
    assert len(set(keys)) == 3
    for y, key in zip(got, keys):
        want = philox.apply_dropout(x.numpy(), p, key, offset=0)
        np.testing.assert_array_equal(y.numpy(), want)


def test_reseeding_replays_the_sequence_and_torch_seeds_it_too():
    x = inputs(8, 64, seed=3) + 5.0
    compiled = built_dropout(0.5, x)
    lamina.manual_seed(5)
    first = [compiled(x) for _ in range(3)]
    torch.manual_seed(5)
    again = [compiled(x) for _ in range(3)]
    for a, b in zip(first, again):
        assert torch.equal(a, b)
    lamina.manual_seed(6)
    assert not torch.equal(compiled(x), first[0])


def test_fork_rng_and_eval_mode_leave_the_sequence_alone():
    x = inputs(8, 64, seed=4) + 5.0
    compiled = built_dropout(0.5, x)
    lamina.manual_seed(7)
    a = compiled(x)
    with torch.random.fork_rng(devices=[]):
        compiled(x)
        compiled(x)
    compiled.eval()
    assert torch.equal(compiled(x), x)  # no dropout, no draw
    compiled.train()
    b = compiled(x)
    lamina.manual_seed(7)
    assert torch.equal(compiled(x), a)
    assert torch.equal(compiled(x), b)


def test_each_backward_follows_its_own_calls_masks():
    p = 0.4
    x = inputs(16, 32, seed=5) + 5.0
    compiled = built_dropout(p, x)
    lamina.manual_seed(9)
    leaves = [x.clone().requires_grad_() for _ in range(3)]
    outputs = [compiled(leaf) for leaf in leaves]
    assert not torch.equal(kept(outputs[0]), kept(outputs[1]))
    # Backwards in another order than the forwards, with draws between.
    compiled(x)
    for i in (2, 0, 1):
        outputs[i].sum().backward()
    for leaf, y in zip(leaves, outputs):
        want = kept(y).float() / (1 - p)
        torch.testing.assert_close(leaf.grad, want, rtol=1e-6, atol=0)


def train(model, optimizer, x, steps):
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def test_resuming_from_a_checkpoint_draws_the_uninterrupted_masks(tmp_path):
    x = inputs(4, 16, seed=6)
    torch.manual_seed(12)
    eager = Mlp(0.3).train()
    initial = copy.deepcopy(eager.state_dict())

    def fresh():
        model = Mlp(0.3).train()
        model.load_state_dict(initial)
        compiled = lamina.build(lamina.create_schedule(model), (x,))
        return compiled, torch.optim.AdamW(compiled.parameters(), lr=1e-2)

    lamina.manual_seed(21)
    model, optimizer = fresh()
    uninterrupted = train(model, optimizer, x, 6)
    final = {k: v.clone() for k, v in model.state_dict().items()}

    lamina.manual_seed(21)
    model, optimizer = fresh()
    first = train(model, optimizer, x, 3)
    torch.save({"model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "rng": torch.get_rng_state()}, tmp_path / "ckpt.pt")
    lamina.manual_seed(99)  # what happens between the runs is forgotten
    checkpoint = torch.load(tmp_path / "ckpt.pt")
    model, optimizer = fresh()
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    torch.set_rng_state(checkpoint["rng"])
    resumed = first + train(model, optimizer, x, 3)

    assert resumed == uninterrupted
    assert len(set(uninterrupted)) == 6
    for name, value in model.state_dict().items():
        assert torch.equal(value, final[name]), name
