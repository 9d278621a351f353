"""SiLU and sigmoid activations, and the gated MLP of LLaMA-style models
(RMSNorm, SwiGLU) built from them: imported, fused, differentiated and
trained as eager PyTorch computes them."""

import copy
import re

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lamina
from lamina import _lamina
from test_training import TOL, backward, check_gradients, inputs


class Gates(nn.Module):
    """Every spelling of SiLU and the sigmoid the importer takes."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.silu = nn.SiLU()
        self.sigmoid = nn.Sigmoid()

    def forward(self, x):
        h = self.silu(self.fc(x)) + F.silu(x) * torch.sigmoid(x)
        return self.sigmoid(h) + h.sigmoid()


def test_every_spelling_imports_as_an_activation():
    x = inputs(4, 16, seed=1)
    compiled = lamina.build(lamina.create_schedule(Gates()), (x,))
    imported = compiled.ir("imported")
    kinds = re.findall(r'lamina\.activation (?:"\w+" )?(\w+) %', imported)
    assert sorted(kinds) == ["sigmoid"] * 3 + ["silu"] * 2
    assert "math.exp" not in imported


def test_extreme_inputs_give_eager_values_and_gradients():
    """exp(-x) overflows below about -88: σ and SiLU are then 0 and so are
    their derivatives, never NaN."""
    x = torch.tensor([[-1000.0, -100.0, -88.0, -20.0, -1.0, 0.0, 1.0, 20.0,
                       88.0, 100.0, 1000.0, -3.5, 2.5, -0.5, 0.25, 7.0]])
    check_gradients(Gates(), (x,))


def test_saturated_gradients_as_accurate_as_eager():
    """Pre-activations of tens (x·30): the weight gradient sums terms up to
    ~25 whose sum can be far smaller, so both float32 results are judged
    against float64 autograd: Lamina's error at most twice eager's."""
    torch.manual_seed(10)
    model = Gates()
    compiled = lamina.build(lamina.create_schedule(copy.deepcopy(model)),
                            (inputs(3, 5, 16),))
    x = inputs(3, 5, 16, seed=2) * 30
    reference = copy.deepcopy(model).double()
    backward(compiled, (x,), seed=11)
    backward(model, (x,), seed=11)
    cotangent = torch.randn(3, 5, 16, generator=torch.Generator()
                            .manual_seed(11)).double()
    (reference(x.double()) * cotangent).sum().backward()
    for (name, ours), theirs, exact in zip(compiled.named_parameters(),
                                           model.parameters(),
                                           reference.parameters()):
        assert torch.isfinite(ours.grad).all()
        error = (ours.grad.double() - exact.grad).abs().max()
        eager_error = (theirs.grad.double() - exact.grad).abs().max()
        assert error <= 2 * eager_error + 1e-7, (name, error, eager_error)


class RMSNorm(nn.Module):
    """LLaMA's RMSNorm, as its implementations write it."""

    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


class LlamaMLP(nn.Module):
    """x + down(SiLU(gate(RMSNorm(x))) · up(RMSNorm(x))), without biases."""

    def __init__(self, hidden=32, inter=88):
        super().__init__()
        self.norm = RMSNorm(hidden)
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        h = self.norm(x)
        return x + self.down_proj(self.act_fn(self.gate_proj(h)) *
                                  self.up_proj(h))


def fuse_gate(sch):
    sch["gate_proj"].fuse()


def test_llama_mlp_gradients():
    torch.manual_seed(3)
    with torch.no_grad():
        model = LlamaMLP()
        model.norm.weight.uniform_(0.5, 1.5)
    check_gradients(model, (inputs(2, 6, 32, seed=4),))


def test_silu_fused_into_the_gate_projection():
    torch.manual_seed(5)
    compiled = check_gradients(LlamaMLP(), (inputs(2, 6, 32, seed=6),),
                               schedule=fuse_gate)
    # The CPU pipeline's first steps: SiLU in the gate projection's epilogue.
    fused = _lamina.transform_ir(compiled.ir("scheduled"), "",
                                 "lamina-decompose,lamina-fuse-epilogues")
    assert re.search(r'lamina\.fused_linear "gate_proj" .* activation silu',
                     fused)


def test_llama_mlp_trains_like_eager_with_adamw():
    torch.manual_seed(7)
    model = LlamaMLP()
    eager = copy.deepcopy(model)
    x = inputs(4, 8, 32, seed=8)
    sch = lamina.create_schedule(model, example_inputs=(x,))
    fuse_gate(sch)
    compiled = lamina.build(sch, (x,))
    ours = torch.optim.AdamW(compiled.parameters(), lr=1e-2)
    theirs = torch.optim.AdamW(eager.parameters(), lr=1e-2)
    for step in range(10):
        batch = inputs(4, 8, 32, seed=100 + step)
        target = torch.tanh(batch)
        losses = []
        for module, optimizer in ((compiled, ours), (eager, theirs)):
            optimizer.zero_grad()
            loss = F.mse_loss(module(batch), target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        assert losses[0] == pytest.approx(losses[1], rel=1e-4), step
    for (name, p), q in zip(compiled.named_parameters(), eager.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5,
                                   msg=lambda m: f"{name}: {m}")


class InPlace(nn.Module):
    def __init__(self, reuse):
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.reuse = reuse

    def forward(self, x):
        h = self.fc(x)
        a = F.silu(h, inplace=True)
        return a + h if self.reuse else a


def test_an_in_place_activation_whose_input_is_read_again_is_rejected():
    x = inputs(4, 16, seed=9)
    with pytest.raises(lamina.UnsupportedOperationError,
                       match="in-place silu whose input is also read"):
        lamina.build(lamina.create_schedule(InPlace(reuse=True)), (x,))
    model = InPlace(reuse=False)
    compiled = lamina.build(lamina.create_schedule(model), (x,))
    with torch.no_grad():
        np.testing.assert_allclose(compiled(x.numpy()), model(x).numpy(),
                                   **TOL)


class TwoBlocks(nn.Module):
    def __init__(self):
        super().__init__()
        self.b0 = LlamaMLP(32, 64)
        self.b1 = LlamaMLP(32, 64)

    def forward(self, x):
        return self.b1(self.b0(x))


def saved_bytes(model, x, checkpoint=()):
    """The bytes the compiled forward keeps for the backward."""
    sch = lamina.create_schedule(model, example_inputs=(x,))
    for path in checkpoint:
        sch[path].checkpoint()
    imported = sch.trace((x,))
    ir = _lamina.transform_ir(
        sch.scheduled_ir(), "",
        f"lamina-generate-backward{{function={imported.entry}}}")
    forward = _lamina.Program(ir, imported.entry + "_forward",
                              "lamina-cpu-pipeline")
    return sum(4 * int(np.prod(shape)) for _, shape, _ in
               forward.results[imported.num_results:])


def test_a_checkpointed_block_saves_only_what_enters_it():
    """sch["b0"].checkpoint() on a block (RMSNorm, three layers, SiLU, the
    product, the residual): b0 is recomputed from x in the backward, so
    the forward saves what one block alone saves (b1's values; b1's input
    is b0's output, recomputed too). Without it: both blocks' values and
    b1's input, [2, 8, 32] floats."""
    torch.manual_seed(11)
    model = TwoBlocks()
    x = inputs(2, 8, 32, seed=12)
    one = saved_bytes(LlamaMLP(32, 64), x)
    assert one > 0
    assert saved_bytes(model, x) == 2 * one + 2 * 8 * 32 * 4
    assert saved_bytes(model, x, ["b0"]) == one
    assert saved_bytes(model, x, ["b0", "b1"]) == 0
    compiled = check_gradients(model, (x,),
                               schedule=lambda s: s["b0"].checkpoint())
    assert 'lamina.checkpoint_modules = ["b0"]' in compiled.ir("scheduled")


def test_a_checkpointed_module_between_layers():
    """A norm module (no layer in it) checkpointed alone: recomputed from
    its input, the same gradients."""
    torch.manual_seed(13)
    check_gradients(LlamaMLP(32, 64), (inputs(2, 8, 32, seed=14),),
                    schedule=lambda s: s["norm"].checkpoint())
