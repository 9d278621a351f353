"""slapo.build and delayed initialisation (Slapo's build.py and
initialization.py): (model, optimizer) as Slapo returns them, compiled at
the first call or for example inputs and again per input shape, weights
initialised as init_weights says, models created on the meta device."""

import copy
import importlib
import subprocess
import sys

import pytest
import torch
from torch import nn

import lamina.slapo as slapo
from lamina import ScheduleError


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(32, 16)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_build_returns_a_module_and_no_optimizer():
    model = MLP()
    sch = slapo.create_schedule(model)
    built, optimizer = slapo.build(sch, init_weights=False)
    assert optimizer is None
    assert isinstance(built, nn.Module)
    # The parameters exist at once: the model's own Parameters.
    assert dict(built.named_parameters())["fc1.weight"] is model.fc1.weight
    for shape in ((4, 16), (2, 3, 16)):  # compiled per shape at first call
        x = torch.randn(*shape)
        with torch.no_grad():
            torch.testing.assert_close(built(x), model(x))


def test_example_inputs_compile_at_build():
    model = MLP()
    x = torch.randn(4, 16)
    sch = slapo.create_schedule(model, example_inputs=(x,))
    built, _ = slapo.build(sch, init_weights=False)
    assert "lamina.linear" in built.ir("scheduled")
    x.requires_grad_()
    built(x).sum().backward()
    reference = x.detach().clone().requires_grad_()
    model.zero_grad()
    model(reference).sum().backward()
    torch.testing.assert_close(x.grad, reference.grad)


def test_not_compiled_before_a_call():
    built, _ = slapo.build(slapo.create_schedule(MLP()), init_weights=False)
    with pytest.raises(ScheduleError, match="not been compiled yet"):
        built.ir()


def test_init_weights_true_reinitialises_each_module():
    model = MLP()
    before = model.fc1.weight.detach().clone()
    built, _ = slapo.build(slapo.create_schedule(model))
    assert not torch.equal(model.fc1.weight, before)
    # Seeded by lamina's seed and the module path: the same on every rank
    # and in every run.
    again = MLP()
    slapo.build(slapo.create_schedule(again))
    torch.testing.assert_close(again.fc1.weight, model.fc1.weight)


def test_init_weights_callable_per_module():
    seen = []

    def init(module, path):
        seen.append(path)
        for param in module.parameters(recurse=False):
            param.data.fill_(0.5)

    model = MLP()
    slapo.build(slapo.create_schedule(model), init_weights=init)
    assert seen == ["fc1", "fc2"]
    assert torch.all(model.fc2.bias == 0.5)


def test_init_empty_weights_materialised_at_build():
    with slapo.init_empty_weights():
        model = MLP()
    assert all(p.device.type == "meta" for p in model.parameters())
    with slapo.init_empty_weights(enable=False):
        real = MLP()
    assert real.fc1.weight.device.type == "cpu"
    built, _ = slapo.build(slapo.create_schedule(model))
    assert all(p.device.type == "cpu" for p in built.parameters())
    assert model.fc1.weight.abs().sum() > 0  # reset_parameters ran
    x = torch.randn(2, 16)
    with torch.no_grad():
        torch.testing.assert_close(built(x), model(x))


def test_meta_weights_without_initialiser_are_rejected():
    class NoInit(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(4, 4))

        def forward(self, x):
            return x

    with slapo.init_empty_weights():
        model = nn.Sequential(NoInit())
    with pytest.raises(ScheduleError, match="reset_parameters"):
        slapo.build(slapo.create_schedule(model))


def test_build_rejections():
    sch = slapo.create_schedule(MLP())
    with pytest.raises(ScheduleError, match="Megatron's engine"):
        slapo.build(sch, target="megatron")
    with pytest.raises(ScheduleError, match="DeepSpeed's configuration"):
        slapo.build(sch, target="deepspeed")
    with pytest.raises(ScheduleError, match="unknown target"):
        slapo.build(sch, target="tpu")
    with pytest.raises(ScheduleError, match="init_weights"):
        slapo.build(sch, init_weights="yes")
    with pytest.raises(ScheduleError, match="top schedule"):
        slapo.build(sch["fc1"])
    with pytest.raises(ScheduleError, match="unknown arguments"):
        slapo.build(sch, topology=None)


def test_set_random_seed_seeds_dropout_masks():
    class Dropping(nn.Module):
        def forward(self, x):
            return nn.functional.dropout(x, p=0.5)

    x = torch.ones(8, 64)
    runs = []
    for seed in (7, 7, 8):
        assert slapo.set_random_seed(seed) == seed
        built, _ = slapo.build(slapo.create_schedule(Dropping()))
        with torch.no_grad():
            runs.append(built(x))
    assert slapo.is_random_seed_set()
    torch.testing.assert_close(runs[0], runs[1])
    assert not torch.equal(runs[0], runs[2])
    # The tracker names states of the generator compiled dropout draws from.
    assert isinstance(slapo.get_cuda_rng_tracker(),
                      slapo.random.CudaRNGStatesTracker)


# -- each rank initialises only its block --------------------------------------

build_module = importlib.import_module("lamina.slapo.build")


class Embedded(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(48, 16, padding_idx=0)
        self.qkv = nn.Linear(16, 48)
        self.out = nn.Linear(48, 16)

    def forward(self, idx):
        return self.out(self.qkv(self.wte(idx)))


def hf_style(module):
    """HuggingFace's _init_weights: normal_ through .data, zero_ biases."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        module.weight.data.normal_(mean=0.0, std=0.02)
    if isinstance(module, nn.Linear):
        module.bias.data.zero_()


# (name, axis, groups) sharded; the embedding's padding row is zeroed
# through a view, which needs the whole tensor.
PLAN = [("wte.weight", 0, 1), ("qkv.weight", 0, 3), ("qkv.bias", 0, 3),
        ("out.weight", 1, 1)]


@pytest.mark.parametrize("init_weights", [True, hf_style])
@pytest.mark.parametrize("rank", [0, 1])
def test_a_block_is_initialised_as_the_whole_would_be(init_weights, rank):
    with slapo.init_empty_weights():
        model = Embedded()
    whole = copy.deepcopy(model)
    build_module.materialise_meta(whole, init_weights)
    params = dict(model.named_parameters())
    plan = {id(params[name]): (axis, groups) for name, axis, groups in PLAN}
    blocks = build_module._materialise(model, init_weights, plan, rank, 2)
    placeholders = dict(model.named_parameters())
    reference = dict(whole.named_parameters())
    for name, axis, groups in PLAN:
        placeholder = placeholders[name]
        assert placeholder.shape == reference[name].shape
        assert placeholder.storage().nbytes() == 4  # one element
        want = reference[name].detach().chunk(groups, axis)
        size = want[0].shape[axis] // 2
        want = torch.cat([w.narrow(axis, rank * size, size) for w in want],
                         axis)
        assert torch.equal(blocks[id(placeholder)].detach(), want), name
    # Replicated parameters are whole, as initialised unsharded.
    assert torch.equal(placeholders["out.bias"], reference["out.bias"])


MEMORY_PROBE = """
import resource, sys, torch
from torch import nn
import importlib
import lamina.slapo as slapo
build = importlib.import_module("lamina.slapo.build")
with slapo.init_empty_weights():
    model = nn.Linear(2048, 16384, bias=False)  # 128 MiB of float32
plan = {id(model.weight): (int(sys.argv[1]), 1)}
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
blocks = build._materialise(model, True, plan, 1, 2)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
(block,) = blocks.values()
print((after - before) / 1024, block.numel() * 4 / 2**20)
"""


@pytest.mark.parametrize("axis", [0, 1])
def test_a_rank_allocates_only_its_block(axis):
    completed = subprocess.run([sys.executable, "-c", MEMORY_PROBE,
                                str(axis)], capture_output=True, text=True,
                               timeout=300, check=True)
    grown, block = (float(v) for v in completed.stdout.split())
    assert block == 64
    # The block and a chunk of the random stream, not the 128 MiB whole.
    assert grown < 1.25 * block, completed.stdout
