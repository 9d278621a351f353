"""Weights prepared once: a built model keeps its packed weights across
calls with new inputs, and packs them again only when a parameter's data or
version counter changes (an in-place optimizer step included)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lamina
from layer_ir import linear_layer


def arrays(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((4, 32)).astype(np.float32),
            rng.standard_normal((48, 32)).astype(np.float32),
            rng.standard_normal(48).astype(np.float32))


def reference(x, w, b):
    return F.linear(*(torch.from_numpy(a) for a in (x, w, b))).numpy()


def test_update_of_an_input_keeps_the_packed_weights():
    program = lamina.Program(linear_layer("linear", (4, 32), 48))
    x, w, b = arrays()
    prepared = program.prepare([x, w, b])
    assert program.pack_count == 1
    x2 = arrays(1)[0]
    program.update(prepared, {0: x2})
    assert program.pack_count == 1
    (y,) = program.run(prepared)
    np.testing.assert_allclose(y, reference(x2, w, b), rtol=1e-5, atol=1e-5)


def test_update_of_a_weight_packs_again():
    program = lamina.Program(linear_layer("linear", (4, 32), 48))
    x, w, b = arrays()
    prepared = program.prepare([x, w, b])
    w2 = arrays(2)[1]
    program.update(prepared, {1: w2})
    assert program.pack_count == 2
    (y,) = program.run(prepared)
    np.testing.assert_allclose(y, reference(x, w2, b), rtol=1e-5, atol=1e-5)


def test_update_checks_what_it_is_given():
    program = lamina.Program(linear_layer("linear", (4, 32), 48))
    prepared = program.prepare(list(arrays()))
    with pytest.raises(ValueError, match="must have dtype float32"):
        program.update(prepared, {0: np.zeros((4, 32))})
    with pytest.raises(ValueError, match=r"must be tensor<4x32xf32>, got "
                       r"shape \[4, 31\]"):
        program.update(prepared, {0: np.zeros((4, 31), np.float32)})
    with pytest.raises(ValueError, match="takes 3 arguments, argument 5"):
        program.update(prepared, {5: np.zeros(1, np.float32)})


def _program_of(compiled):
    return compiled._last.program


def test_built_model_packs_only_when_a_parameter_changes():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32))
    compiled = lamina.build(lamina.create_schedule(model.eval()))
    with torch.no_grad():
        compiled(torch.randn(8, 32))
        program = _program_of(compiled)
        packs = program.pack_count
        for _ in range(3):
            x = torch.randn(8, 32)
            torch.testing.assert_close(compiled(x), model(x))
        assert program.pack_count == packs  # new inputs, same weights
        model[0].weight.mul_(0.5)  # in place: the version counter moves
        x = torch.randn(8, 32)
        torch.testing.assert_close(compiled(x), model(x))
        assert program.pack_count == packs + 1
        model[2].weight.data = torch.randn(32, 64)  # new data
        torch.testing.assert_close(compiled(x), model(x))
        assert program.pack_count == packs + 2


def test_optimizer_steps_are_seen_by_the_next_call():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32))
    twin = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 32))
    twin.load_state_dict(model.state_dict())
    compiled = lamina.build(lamina.create_schedule(model))
    ours = torch.optim.SGD(compiled.parameters(), lr=0.1)
    theirs = torch.optim.SGD(twin.parameters(), lr=0.1)
    for step in range(3):
        x = torch.randn(8, 32)
        for optimizer, module in ((ours, compiled), (theirs, twin)):
            optimizer.zero_grad()
            loss = module(x).square().mean()
            loss.backward()
            optimizer.step()
        torch.testing.assert_close(compiled(x), twin(x))
