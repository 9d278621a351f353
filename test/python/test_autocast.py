"""Mixed precision as torch.autocast (docs/training.md): a model called in
``torch.autocast("cpu", dtype=torch.bfloat16)`` (or built with
``precision="bf16"``) computes its layer matmuls in bf16 with f32
accumulation, keeps f32 master parameters and gets f32 gradients, against
eager autocast and the f32 model.

Bounds. u = 2^-8 is bf16's unit roundoff. Each value rounded to bf16 on the
way to a result contributes at most u of its magnitude, carried through the
products that use it (|GELU'| < 1.13); f32 accumulation adds far less.
Eager autocast and Lamina round at the same matmul operands and results
(eager also rounds GELU's output, Lamina applies GELU before its one
rounding), so both lie within that first-order bound of the exact f32
computation, and each other within twice it."""

import copy
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lamina

U = 2.0 ** -8
GELU_SLOPE = 1.13


class MLP(nn.Module):
    def __init__(self, width=128, hidden=512):
        super().__init__()
        self.fc1 = nn.Linear(width, hidden)
        self.act = nn.GELU(approximate="tanh")
        self.fc2 = nn.Linear(hidden, width)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def model_and_twin(seed=0):
    torch.manual_seed(seed)
    model = MLP()
    return model, copy.deepcopy(model)


def forward_bound(model, x):
    """First-order bound on |y − y_f32| when x, W1, b1, the hidden layer
    (twice: eager rounds before and after GELU), W2 and y are rounded to
    bf16 (u each)."""
    w1, b1 = model.fc1.weight.abs(), model.fc1.bias.abs()
    w2 = model.fc2.weight.abs()
    z = model.fc1(x)
    h = model.act(z).abs()
    z_error = U * (2 * x.abs() @ w1.T + b1) + U * z.abs()
    h_error = GELU_SLOPE * z_error + 2 * U * h
    y = model(x).abs()
    return (h_error @ w2.T + U * (h @ w2.T) + U * model.fc2.bias.abs()
            + U * y).detach()


def test_forward_matches_eager_autocast_and_f32():
    model, twin = model_and_twin()
    x = torch.randn(64, 128)
    built = lamina.build(lamina.create_schedule(model))
    with torch.no_grad():
        bound = forward_bound(twin, x)
        exact = twin(x)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got = built(x)
            eager = twin(x)
    assert got.dtype == eager.dtype == torch.bfloat16
    got = got.float()
    assert ((got - exact).abs() <= bound).all()
    assert ((got - eager.float()).abs() <= 2 * bound).all()
    # The bound is not vacuous: bf16 really moved the result.
    assert (got != exact).any()


class Outputs(nn.Module):
    """Results of each kind: a layer's, a view of one, a residual add on
    the f32 input, a loss (autocast's fp32 list), and a layer's cast to f32
    by the model (LLaMA's `self.output(h).float()`)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(32, 32)
        self.head = nn.Linear(32, 16)

    def forward(self, x, target):
        y = self.fc(x)
        return (y, y.view(4, 2, 32).transpose(0, 1), x + y,
                F.cross_entropy(x + y, target), self.head(x).float())


def test_results_come_back_in_eager_autocast_dtypes():
    """A result that is a lower-precision op's (moved by views since) comes
    back in bf16 as eager's, an exact cast of the value computed; results
    computed on in f32 after it stay f32, as eager's residual add and loss
    are. Gradients pass back through the cast to the f32 parameters."""
    torch.manual_seed(4)
    model = Outputs()
    twin = copy.deepcopy(model)
    x, target = torch.randn(8, 32), torch.randint(0, 32, (8,))
    built = lamina.build(lamina.create_schedule(model,
                                                example_inputs=(x, target)))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ours = built(x, target)
        eager = twin(x, target)
    assert [r.dtype for r in ours] == [r.dtype for r in eager] == \
        [torch.bfloat16, torch.bfloat16, torch.float32, torch.float32,
         torch.float32]
    always = lamina.build(lamina.create_schedule(copy.deepcopy(twin),
                                                 example_inputs=(x, target)),
                          precision="bf16")
    widened = always(x, target)
    assert all(r.dtype == torch.float32 for r in widened)
    for got, values in zip(ours, widened):
        assert torch.equal(got.float(), values)
    (ours[0].float().sum() + ours[3]).backward()
    assert model.fc.weight.grad.dtype == torch.float32
    assert model.fc.weight.grad.abs().sum() > 0


def test_precision_bf16_is_the_autocast_program_and_f32_opts_out():
    model, twin = model_and_twin(1)
    x = torch.randn(16, 128)
    with torch.no_grad():
        always = lamina.build(lamina.create_schedule(model), precision="bf16")
        plain = lamina.build(lamina.create_schedule(twin))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            inside = plain(x)
        # The same program; outside an autocast region its bf16 values come
        # back widened (a loss against f32 targets computes as written).
        outside = always(x)
        assert outside.dtype == torch.float32
        assert inside.dtype == torch.bfloat16
        assert torch.equal(outside, inside.float())
        never = lamina.build(lamina.create_schedule(copy.deepcopy(twin)),
                             precision="f32")
        with torch.autocast("cpu", dtype=torch.bfloat16):
            opted_out = never(x)
        torch.testing.assert_close(opted_out, twin(x), rtol=1e-5, atol=1e-5)
        # Outside the region the autocast-following module is f32 again.
        torch.testing.assert_close(plain(x), twin(x), rtol=1e-5, atol=1e-5)


def gradient_bounds(model, x):
    """First-order bounds on the gradients of mean(y²): each factor of a
    gradient's products carries the roundings on its way (dy: y's and the
    loss's; h: as in forward_bound; dz: dy's, W2's, dh's, and GELU's
    derivative at a rounded z), the result one more; `c` counts them."""
    z = model.fc1(x)
    h = model.act(z)
    y = model.fc2(h)
    dy = (2 * y / y.numel()).abs()
    dh = dy @ model.fc2.weight.abs()
    dz = GELU_SLOPE * dh
    c2, c1 = 8, 16
    return {
        "fc2.weight": c2 * U * (dy.T @ h.abs()),
        "fc2.bias": c2 * U * dy.sum(0),
        "fc1.weight": c1 * U * (dz.T @ x.abs()),
        "fc1.bias": c1 * U * dz.sum(0),
    }


def test_gradients_reach_the_f32_parameters_within_bf16_bounds():
    model, twin = model_and_twin(2)
    x = torch.randn(64, 128)
    built = lamina.build(lamina.create_schedule(model))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        built(x).float().pow(2).mean().backward()
        twin(x).float().pow(2).mean().backward()
    bounds = {name: b.detach() for name, b in
              gradient_bounds(copy.deepcopy(model), x).items()}
    for name, parameter in built.named_parameters():
        assert parameter.dtype == torch.float32
        assert parameter.grad.dtype == torch.float32
        eager = dict(twin.named_parameters())[name].grad
        assert ((parameter.grad - eager).abs() <= 2 * bounds[name]).all(), \
            name


def test_adamw_steps_under_autocast_follow_eager_autocast():
    """Five AdamW steps on f32 master weights: the losses stay within the
    forward bound's relative size of eager autocast's (AdamW's steps are
    lr-sized whatever the gradient's rounding)."""
    model, twin = model_and_twin(3)
    x, target = torch.randn(32, 128), torch.randn(32, 128)
    built = lamina.build(lamina.create_schedule(model))
    runs = []
    for module in (built, twin):
        optimizer = torch.optim.AdamW(module.parameters(), lr=1e-3)
        losses = []
        for _ in range(5):
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = (module(x).float() - target).pow(2).mean()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        runs.append(losses)
    assert runs[0][-1] < runs[0][0]
    for ours, eager in zip(*runs):
        assert abs(ours - eager) <= 16 * U * eager
    assert all(p.dtype == torch.float32 for p in built.parameters())


class AttentionCore(nn.Module):
    """nanoGPT's attention between its projections."""

    def forward(self, q, k, v):
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        return F.softmax(att, dim=-1) @ v


def autocast_by_hand(q, k, v):
    """The attention core with autocast's roundings written out: bf16
    operands, f32 sums, bf16 results, at both matmuls; softmax in f32. Its
    autograd rounds each matmul's cotangents the same way (through the
    casts' backward)."""
    def rounded(t):
        return t.bfloat16().float()
    att = rounded(rounded(q) @ rounded(k).transpose(-2, -1))
    att = att * (1.0 / math.sqrt(k.size(-1)))
    return rounded(rounded(F.softmax(att, dim=-1)) @ rounded(v))


def test_attention_matmuls_round_as_autocast():
    """Under autocast, attention's matmuls (`torch.matmul`) compute in bf16
    as well: the compiled core equals autocast's roundings written out by
    hand, forward and gradients. Only a value whose f32 sums differ in their
    last bits (their order) may round to a neighbouring bf16: at most one
    unit in the last place of the largest value, and a small fraction of
    bf16's own error overall."""
    torch.manual_seed(0)
    inputs = [torch.randn(2, 4, 16, 16, requires_grad=True)
              for _ in range(3)]
    twins = [x.detach().clone().requires_grad_() for x in inputs]
    built = lamina.build(lamina.create_schedule(AttentionCore(),
                                                example_inputs=inputs))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ours = built(*inputs)
    assert ours.dtype == torch.bfloat16  # a matmul's result, as eager's
    ours = ours.float()
    by_hand = autocast_by_hand(*twins)
    exact = AttentionCore()(*[x.detach() for x in inputs])
    bf16_error = (by_hand - exact).norm()
    assert bf16_error > U * exact.norm() / 8  # bf16 really moved it
    pairs = [(ours, by_hand)]
    ours.pow(2).sum().backward()
    by_hand.pow(2).sum().backward()
    pairs += [(x.grad, twin.grad) for x, twin in zip(inputs, twins)]
    for got, want in pairs:
        assert got.dtype == torch.float32
        assert (got - want).abs().max() <= 2 * U * want.abs().max()
        assert (got - want).norm() <= 0.05 * bf16_error / exact.norm() * \
            want.norm()


@pytest.mark.parametrize("kwargs,message", [
    ({"precision": "fp8"}, "precision must be None, 'bf16' or 'f32'"),
    ({"precision": "bf16", "target": "cuda"}, "precision='bf16' is for "
                                              "target='cpu'"),
])
def test_bad_precisions_are_named(kwargs, message):
    model, _ = model_and_twin()
    with pytest.raises(ValueError, match=message):
        lamina.build(lamina.create_schedule(model), **kwargs)
