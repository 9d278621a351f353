"""The compiled module keeps the model's face (docs/python.md): what it does
not define resolves on the model, the model's methods run with their
`self(...)` compiled, attributes the forward sets are set with each call's
values, and its state dict has exactly the model's keys."""

import io
import pathlib
import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lamina

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] /
                       "examples"))
from gpt_models import GPTConfig, TiedGPT  # noqa: E402

CONFIG = dict(block_size=16, vocab_size=67, n_layer=2, n_head=4, n_embd=32)


def gpt(seed=0):
    torch.manual_seed(seed)
    return TiedGPT(GPTConfig(**CONFIG))


def tokens(b=2, t=12, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, CONFIG["vocab_size"], (b, t), generator=g)


def build(model):
    return lamina.build(lamina.create_schedule(model))


def count_compiled_calls(compiled):
    """Counts the calls that reach the compiled forward."""
    calls = []
    run = compiled._forward
    compiled._forward = lambda inputs: calls.append(inputs) or run(inputs)
    return calls


# -- attributes and methods ------------------------------------------------

def test_the_models_attributes_and_helpers_resolve_on_it():
    model = gpt()
    compiled = build(model)
    assert compiled.config is model.config
    assert compiled.get_num_params() == model.get_num_params()
    assert compiled.estimate_mfu(16, 0.5) == model.estimate_mfu(16, 0.5)
    optimizer = compiled.configure_optimizers(0.1, 1e-3, (0.9, 0.95))
    grouped = [p for group in optimizer.param_groups for p in group["params"]]
    assert {id(p) for p in grouped} == {id(p) for p in compiled.parameters()}
    assert "generate" in dir(compiled)
    with pytest.raises(AttributeError, match="no_such_thing"):
        compiled.no_such_thing


def test_generate_runs_the_compiled_forward_and_samples_as_eager():
    model = gpt()
    compiled = build(model).eval()
    calls = count_compiled_calls(compiled)
    start = tokens(1, 3)
    torch.manual_seed(5)
    ours = compiled.generate(start, 4, top_k=1)
    torch.manual_seed(5)
    theirs = model.eval().generate(start, 4, top_k=1)
    assert torch.equal(ours, theirs)
    # Its four calls: the prompt's a compiled call of the whole forward,
    # then a prefill and two decode steps from the cache
    # (test_generation.py).
    assert len(calls) == 1
    with torch.no_grad():
        assert compiled.generation.steps == {"decode": 2, "prefill": 1}
    # Without the cache (max_seq_len=0), each call is a compiled call of
    # the whole forward.
    plain = lamina.build(lamina.create_schedule(gpt()), max_seq_len=0).eval()
    calls = count_compiled_calls(plain)
    torch.manual_seed(5)
    assert torch.equal(plain.generate(start, 4, top_k=1), theirs)
    assert len(calls) == 4


def test_the_model_tree_indexes_iterates_and_calls_through():
    model = gpt()
    compiled = build(model)
    blocks = list(compiled.transformer.h)
    assert len(blocks) == len(compiled.transformer.h) == 2
    assert blocks[1] is compiled.transformer.h[1]
    assert blocks[0].attn.c_attn.weight is model.transformer.h[0].attn \
        .c_attn.weight
    # The model's buffer, read through the compiled tree.
    assert compiled.transformer.h[0].attn.bias is \
        model.transformer.h[0].attn.bias
    # A node called runs the model's module.
    idx = tokens()
    assert torch.equal(compiled.transformer.wte(idx),
                       model.transformer.wte(idx))


def test_crop_block_size_on_the_compiled_module_crops_the_model():
    model, eager = gpt(), gpt()
    compiled = build(model).eval()
    compiled.crop_block_size(8)
    eager.crop_block_size(8)
    assert model.config.block_size == 8
    assert model.transformer.wpe.weight.shape[0] == 8
    idx = tokens(t=8)
    with torch.no_grad():
        torch.testing.assert_close(compiled(idx)[0], eager.eval()(idx)[0])


def test_a_parameter_replaced_on_the_compiled_module_is_used():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 3))
    compiled = build(model)
    x = torch.randn(2, 8)
    compiled(x)
    compiled[0].weight = nn.Parameter(torch.randn(4, 8))
    assert model[0].weight is compiled[0].weight
    torch.testing.assert_close(compiled(x), model(x))
    compiled[2].weight = nn.Parameter(torch.randn(3, 5))
    with pytest.raises(lamina.ScheduleError, match="build the model again"):
        compiled(x)


# -- attributes the forward sets ------------------------------------------

class StoresItsLoss(nn.Module):
    """llama2.c's Transformer.forward: the loss goes to self.last_loss."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 5)
        self.head = nn.Linear(5, 5)
        self.last_loss = None

    def forward(self, x, targets=None):
        h = self.head(torch.relu(self.fc(x)))
        if targets is not None:
            self.last_loss = F.cross_entropy(h, targets)
            self.head.seen = h.sum()
        else:
            self.last_loss = None
        return h


def test_the_loss_stored_in_forward_is_this_calls_and_trains():
    torch.manual_seed(0)
    model, eager = StoresItsLoss(), StoresItsLoss()
    eager.load_state_dict(model.state_dict())
    compiled = build(model)
    assert model.last_loss is None  # no tracing proxy left behind
    for step in range(3):
        x, y = torch.randn(4, 8), torch.randint(0, 5, (4,))
        compiled(x, y)
        eager(x, y)
        assert isinstance(model.last_loss, torch.Tensor)
        assert compiled.last_loss is model.last_loss
        torch.testing.assert_close(compiled.last_loss, eager.last_loss)
        torch.testing.assert_close(compiled.head.seen, eager.head.seen)
        compiled.last_loss.backward()
        eager.last_loss.backward()
        torch.testing.assert_close(compiled.fc.weight.grad,
                                   eager.fc.weight.grad)
    compiled(torch.randn(4, 8))
    assert compiled.last_loss is None and model.last_loss is None


# -- state dicts -------------------------------------------------------------

class WithBuffers(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.register_buffer("scale", torch.full((6,), 2.0))
        self.register_buffer("scratch", torch.zeros(6), persistent=False)

    def forward(self, x):
        return self.fc(x) * self.scale + self.scratch


def test_the_state_dict_has_exactly_the_models_keys():
    model = gpt()
    compiled = build(model)
    ours, theirs = compiled.state_dict(), model.state_dict()
    assert list(ours) == list(theirs)
    assert "lm_head.weight" in ours and \
        "transformer.h.0.attn.bias" in ours
    for key in theirs:
        assert torch.equal(ours[key], theirs[key])
    # Persistent buffers only, as the model's.
    assert list(build(WithBuffers()).state_dict()) == ["scale", "fc.weight",
                                                       "fc.bias"]


def test_loading_a_state_dict_changes_the_next_call():
    x = torch.randn(3, 6)
    source, target = WithBuffers(), WithBuffers()
    with torch.no_grad():
        source.scale.fill_(3.0)
    compiled = build(target)
    before = compiled(x)
    compiled.load_state_dict(source.state_dict())
    torch.testing.assert_close(compiled(x), source(x))
    assert not torch.allclose(before, compiled(x))


def test_checkpoints_round_trip_between_eager_and_compiled():
    idx = tokens()
    trained = build(gpt(seed=3))
    optimizer = torch.optim.AdamW(trained.parameters(), lr=1e-2)
    for _ in range(2):
        _, loss = trained(idx, torch.roll(idx, -1, 1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    saved = io.BytesIO()
    torch.save({"model": trained.state_dict()}, saved)
    saved.seek(0)
    # compiled → eager
    eager = gpt(seed=4)
    eager.load_state_dict(torch.load(saved)["model"])
    trained.eval(), eager.eval()
    with torch.no_grad():
        torch.testing.assert_close(trained(idx)[0], eager(idx)[0])
    # eager → compiled
    saved = io.BytesIO()
    torch.save({"model": eager.state_dict()}, saved)
    saved.seek(0)
    fresh = build(gpt(seed=5)).eval()
    fresh.load_state_dict(torch.load(saved)["model"])
    with torch.no_grad():
        torch.testing.assert_close(fresh(idx)[0], eager(idx)[0])


def test_a_checkpoint_missing_keys_is_refused_as_by_the_model():
    compiled = build(gpt())
    state = compiled.state_dict()
    del state["lm_head.weight"], state["transformer.h.1.attn.bias"]
    with pytest.raises(RuntimeError, match="Missing key"):
        compiled.load_state_dict(state)
    result = compiled.load_state_dict(state, strict=False)
    assert "transformer.h.1.attn.bias" in result.missing_keys
