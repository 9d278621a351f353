"""Training with lamina.build: the compiled module's parameters, torch.optim
steps against eager PyTorch, prepared weights reused until a parameter
changes, NumPy calls, the backward compiled once per shape, and programs
pipeline stages. Training on several ranks: test_training_ranks.py."""

import copy
import gc

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lamina
from lamina import training

TOL = dict(rtol=1e-5, atol=1e-5)


def inputs(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


class MLP(nn.Module):
    def __init__(self, hidden=32, inter=64):
        super().__init__()
        self.fc1 = nn.Linear(hidden, inter)
        self.act = nn.GELU(approximate="tanh")
        self.fc2 = nn.Linear(inter, hidden)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(x)))


def test_parameters_are_the_models_under_its_names():
    torch.manual_seed(0)
    model = MLP()
    x = inputs(2, 4, 32)
    compiled = lamina.build(lamina.create_schedule(model), (x,))
    assert isinstance(compiled, nn.Module)
    ours = list(compiled.named_parameters())
    theirs = list(model.named_parameters())
    assert [n for n, _ in ours] == ["fc1.weight", "fc1.bias", "fc2.weight",
                                    "fc2.bias"]
    assert all(p is q for (_, p), (_, q) in zip(ours, theirs))
    assert all(isinstance(p, nn.Parameter) for _, p in ours)
    assert list(compiled.state_dict()) == list(model.state_dict())
    # Another shape compiles again, on the same Parameter objects.
    compiled(inputs(3, 5, 32, seed=1)).sum().backward()
    assert [p for _, p in compiled.named_parameters()] == [p for _, p in ours]
    assert all(p.grad is not None for _, p in ours)


class Tied(nn.Module):
    """Two layers sharing one weight."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 16)
        self.b.weight = self.a.weight

    def forward(self, x):
        return self.b(F.gelu(self.a(x)))


def test_tied_parameters_are_one_parameter_with_the_summed_gradient():
    torch.manual_seed(2)
    model = Tied()
    eager = copy.deepcopy(model)
    x = inputs(4, 16, seed=3)
    compiled = lamina.build(lamina.create_schedule(model), (x,))
    assert [n for n, _ in compiled.named_parameters()] == \
        ["a.weight", "a.bias", "b.bias"]
    assert "%p3" not in compiled.ir("imported")  # one argument for a.weight
    compiled(x).square().sum().backward()
    eager(x).square().sum().backward()
    for (name, p), (_, q) in zip(compiled.named_parameters(),
                                 eager.named_parameters()):
        torch.testing.assert_close(p.grad, q.grad, **TOL,
                                   msg=lambda m: f"{name}: {m}")


def test_numpy_calls_return_numpy_and_inputs_get_gradients():
    torch.manual_seed(4)
    model = MLP()
    eager = copy.deepcopy(model)
    x = inputs(2, 4, 32, seed=5)
    compiled = lamina.build(lamina.create_schedule(model), (x,))
    y = compiled(x.numpy())
    assert isinstance(y, np.ndarray)
    np.testing.assert_allclose(y, eager(x).detach().numpy(), **TOL)
    leaf = x.clone().requires_grad_()
    out = compiled(leaf)
    assert out.requires_grad and out.grad_fn is not None
    out.sum().backward()
    reference = x.clone().requires_grad_()
    eager(reference).sum().backward()
    torch.testing.assert_close(leaf.grad, reference.grad, **TOL)
    # No gradient asked for: plain tensors, as before.
    with torch.no_grad():
        assert not compiled(x).requires_grad
    for p in compiled.parameters():
        p.requires_grad_(False)
    assert not compiled(x).requires_grad


def train(module, make_optimizer, steps=10):
    """The loss of every step of `steps` optimizer steps on `module`,
    learning y = x / 2."""
    optimizer = make_optimizer(module.parameters())
    losses = []
    for step in range(steps):
        x = inputs(4, 8, 32, seed=step)
        target = 0.5 * x
        optimizer.zero_grad()
        loss = F.mse_loss(module(x), target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


OPTIMIZERS = {
    "sgd-momentum": lambda ps: torch.optim.SGD(ps, lr=0.5, momentum=0.9),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.1),
}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_ten_optimizer_steps_follow_eager(name):
    torch.manual_seed(6)
    model = MLP()
    eager = copy.deepcopy(model)
    compiled = lamina.build(lamina.create_schedule(model),
                            (inputs(4, 8, 32),))
    got = train(compiled, OPTIMIZERS[name])
    want = train(eager, OPTIMIZERS[name])
    np.testing.assert_allclose(got, want, rtol=1e-4)
    assert got[-1] < got[0] * 0.9  # it learns
    for p, q in zip(compiled.parameters(), eager.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-4)


def test_prepared_arguments_are_reused_until_a_parameter_changes(
        monkeypatch):
    prepared = []
    real = training.prepare
    monkeypatch.setattr(training, "prepare", lambda program, arrays: (
        prepared.append(program), real(program, arrays))[1])
    torch.manual_seed(7)
    model = MLP().eval()
    eager = copy.deepcopy(model)
    x = inputs(2, 4, 32, seed=8)
    compiled = lamina.build(lamina.create_schedule(model), (x,))
    with torch.no_grad():
        first = compiled(x)
        program = compiled._last.program
        packs = program.pack_count
        torch.testing.assert_close(compiled(x), first, rtol=0, atol=0)
        assert len(prepared) == 1 and program.pack_count == packs
        # An in-place optimizer step bumps the parameters' versions: the
        # changed weights are replaced and packed again, nothing is
        # prepared from scratch.
        for module in (compiled, eager):
            for p in module.parameters():
                p.grad = torch.ones_like(p)
        for module in (compiled, eager):
            torch.optim.SGD(module.parameters(), lr=0.01).step()
        stepped = compiled(x)
        assert program.pack_count == packs + 1
        assert not torch.allclose(stepped, first, **TOL)
        torch.testing.assert_close(stepped, eager(x), **TOL)
        compiled(x)
        assert program.pack_count == packs + 1
        # Another tensor as a parameter's data.
        compiled.fc2.bias.data = torch.zeros(32)
        eager.fc2.bias.data = torch.zeros(32)
        torch.testing.assert_close(compiled(x), eager(x), **TOL)
        # An input changed in place: replaced, the weights kept.
        packs = program.pack_count
        x.mul_(2.0)
        torch.testing.assert_close(compiled(x), eager(x), **TOL)
        assert program.pack_count == packs
        assert len(prepared) == 1
        # A NumPy array has no version counter: it is replaced on every call
        # (read in place, so a change made to the same array is seen), and
        # the prepared arguments and packed weights are kept.
        array = x.numpy().copy()
        torch.testing.assert_close(torch.as_tensor(compiled(array)), eager(x),
                                   **TOL)
        array *= 2.0
        torch.testing.assert_close(torch.as_tensor(compiled(array)),
                                   eager(x * 2.0), **TOL)
        assert len(prepared) == 1 and program.pack_count == packs


def test_backward_is_compiled_once_per_shape(monkeypatch):
    compiled_functions = []
    real = training._lamina.TrainingPair

    def recording(*args, on_step, **kwargs):
        def step(name):  # "compiling @f (pipeline)"
            if name.startswith("compiling @"):
                compiled_functions.append(name.split()[1][1:])
            on_step(name)
        return real(*args, on_step=step, **kwargs)
    monkeypatch.setattr(training._lamina, "TrainingPair", recording)
    torch.manual_seed(9)
    model = MLP()
    compiled = lamina.build(lamina.create_schedule(model),
                            (inputs(2, 4, 32),))
    assert compiled_functions == []  # compiled when first needed
    for step in range(3):
        compiled(inputs(2, 4, 32, seed=step)).sum().backward()
    assert compiled_functions == ["forward_forward", "forward_backward"]
    compiled(inputs(3, 4, 32)).sum().backward()
    compiled(inputs(2, 4, 32)).sum().backward()
    assert len(compiled_functions) == 4


@pytest.mark.parametrize("structure", ["tensor", "tuple"])
def test_a_step_leaves_no_reference_cycle(structure):
    """A step's results, autograd graph and saved values are freed by
    reference counting when the step ends. Held in a reference cycle
    until the collector ran, they would pile up over tens of steps: a
    GPT-2 MLP's training process grew by 24 MiB a step, and every step
    paid page faults for fresh memory (2x its time)."""
    class Pair(MLP):
        def forward(self, x):
            y = super().forward(x)
            return (y, (y * 2,)) if structure == "tuple" else y

    torch.manual_seed(4)
    compiled = lamina.build(lamina.create_schedule(Pair()), (inputs(8, 32),))
    optimizer = torch.optim.SGD(compiled.parameters(), lr=0.1)

    def step():
        optimizer.zero_grad()
        outputs = compiled(inputs(8, 32))
        y = outputs[0] if structure == "tuple" else outputs
        y.square().mean().backward()
        optimizer.step()

    step()
    gc.collect()
    gc.disable()
    try:
        for _ in range(3):
            step()
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_lns_layers_carry_gradients_as_in_eager():
    # An LNS layer in a float model: the input's gradient crosses the
    # layer's encode / decode, as in eager lamina.lns (the parameters'
    # LNS gradients: test_lns_compiled_layers.py).
    model = nn.Sequential(lamina.lns.LNSLinear(16, 8, weight_f=16))
    x = inputs(4, 16, seed=10).requires_grad_()
    x_eager = x.detach().clone().requires_grad_()
    compiled = lamina.build(lamina.create_schedule(model), (x,))
    g = inputs(4, 8, seed=11)
    compiled(x).backward(g)
    copy.deepcopy(model)(x_eager).backward(g)
    assert torch.equal(x.grad, x_eager.grad)


def test_backward_through_pipeline_stages():
    """Two stages run whole in a world of one: the backward's stages (in
    reverse order) give eager's gradients; on two ranks see
    test_training_ranks.py."""
    torch.manual_seed(11)
    model = MLP()
    eager = copy.deepcopy(model)
    x = inputs(2, 4, 32, seed=12)
    sch = lamina.create_schedule(model)
    sch["fc1"].cut_pipeline_stage()
    compiled = lamina.build(sch, (x,))
    assert compiled.world_size == 2
    leaf = x.clone().requires_grad_()
    y = compiled(leaf)
    torch.testing.assert_close(y, eager(x), **TOL)
    y.square().sum().backward()
    x_ref = x.clone().requires_grad_()
    eager(x_ref).square().sum().backward()
    for (name, p), q in zip(compiled.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, **TOL, msg=name)
    torch.testing.assert_close(leaf.grad, x_ref.grad, **TOL)
    assert "lamina.pipeline_reversed" in compiled.ir("training")
