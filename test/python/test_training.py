"""Gradients through lamina.build: every layer op and lamina.op class, the
schedule variants (decompose, fuse, replace, checkpoint), a GPT-2 block,
dropout in train mode, against eager PyTorch autograd (fp32, rtol = atol =
1e-5)."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lamina

TOL = dict(rtol=1e-5, atol=1e-5)


def inputs(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def as_list(outputs):
    return [outputs] if isinstance(outputs, torch.Tensor) else list(outputs)


def backward(module, xs, seed):
    """`module`'s outputs on `xs` (fresh leaves requiring gradients) and
    the gradient of Σ outputs · random cotangents: (outputs, input
    gradients)."""
    xs = [x.clone().requires_grad_() for x in xs]
    outputs = as_list(module(*xs))
    generator = torch.Generator().manual_seed(seed)
    loss = sum((o * torch.randn(o.shape, generator=generator)).sum()
               for o in outputs)
    loss.backward()
    return [o.detach() for o in outputs], [x.grad for x in xs]


def check_gradients(model, xs, schedule=None, seed=100):
    """lamina.build(model) and eager `model` on the same initial weights:
    equal outputs, parameter gradients (by name) and input gradients."""
    eager = copy.deepcopy(model)
    sch = lamina.create_schedule(model, example_inputs=xs)
    if schedule is not None:
        schedule(sch)
    compiled = lamina.build(sch, xs)
    got, got_dx = backward(compiled, xs, seed)
    want, want_dx = backward(eager, xs, seed)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, **TOL)
    names = [name for name, _ in compiled.named_parameters()]
    assert names == [name for name, _ in eager.named_parameters()]
    for (name, p), (_, q) in zip(compiled.named_parameters(),
                                 eager.named_parameters()):
        assert p.grad is not None, f"no gradient for {name}"
        torch.testing.assert_close(p.grad, q.grad, **TOL,
                                   msg=lambda m: f"{name}: {m}")
    for g, w in zip(got_dx, want_dx):
        torch.testing.assert_close(g, w, **TOL)
    return compiled


class One(nn.Module):
    """One layer, its result scaled: the layer's cotangent is not the
    loss's own."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x) * 2.0


LAYERS = {
    "linear": lambda: nn.Linear(24, 40),
    "linear-no-bias": lambda: nn.Linear(24, 40, bias=False),
    "separate-bias": lambda: lamina.op.LinearWithSeparateBias(24, 40),
    "sync-func": lambda: lamina.op.LinearWithSyncFunc(24, 40),
    "sync-func-no-bias": lambda: lamina.op.LinearWithSyncFunc(24, 40,
                                                              bias=False),
    "act-gelu": lambda: lamina.op.LinearWithAct(24, 40, act_fn="gelu"),
    "act-gelu-new": lambda: lamina.op.LinearWithAct(24, 40,
                                                    act_fn="gelu_new"),
    "dropout-eval": lambda: lamina.op.LinearWithDropout(24, 40, p=0.3).eval(),
}


@pytest.mark.parametrize("name", LAYERS)
def test_layer_gradients(name):
    torch.manual_seed(1)
    model = One(LAYERS[name]())
    if name.endswith("eval"):
        model.eval()
    check_gradients(model, (inputs(3, 5, 24, seed=2),))


class Activations(nn.Module):
    """nn.Linear with GELU (erf and tanh) and ReLU, scaled residuals."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(32, 48)
        self.b = nn.Linear(48, 48)
        self.c = nn.Linear(48, 32)

    def forward(self, x):
        h = F.gelu(self.a(x))
        h = h + F.relu(self.b(h)) * 0.5
        return x + F.gelu(self.c(h), approximate="tanh")


def test_activations_and_residuals():
    torch.manual_seed(3)
    check_gradients(Activations(), (inputs(4, 32, seed=4),))


def test_fused_qkv_gradients_of_three_results():
    torch.manual_seed(5)
    model = lamina.op.FusedQKV(32, 4, 1)
    check_gradients(model, (inputs(2, 6, 32, seed=6),))


class Functions(nn.Module):
    """What else the importer takes: LayerNorm without affine parameters,
    torch.relu, a matmul of two inputs, division, softmax over dim 0 and
    nn.Softmax, view / transpose / contiguous / reshape, a batched matmul;
    two inputs and two results."""

    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(32, elementwise_affine=False, eps=1e-3)
        self.fc = nn.Linear(32, 32)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x, y):
        h = torch.relu(self.fc(self.ln(x)))
        scores = F.softmax(torch.matmul(h, y) / 4.0, dim=0)
        t = h.view(6, 4, 8).transpose(0, 1).contiguous()
        mixed = self.softmax(t @ t.transpose(1, 2))
        return scores, mixed.reshape(4, 36)


def test_importer_functions_and_two_inputs():
    torch.manual_seed(21)
    check_gradients(Functions(), (inputs(6, 32, seed=22),
                                  inputs(32, 5, seed=23)))


class MLP(nn.Module):
    """GPT-2's MLP with its residual: fc1, GELU (tanh), fc2."""

    def __init__(self, hidden=32, inter=64):
        super().__init__()
        self.fc1 = nn.Linear(hidden, inter)
        self.act = nn.GELU(approximate="tanh")
        self.fc2 = nn.Linear(inter, hidden)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(x)))


def decompose(sch):
    sch["fc1"].decompose()
    sch["fc2"].decompose()


def decompose_and_fuse(sch):
    sch["fc1"].decompose()
    sch["fc1"].fuse()
    sch["fc2"].fuse()


def replace_fused(sch):
    sch["fc1"].replace("fused_linear")
    sch["fc2"].replace(lamina.op.LinearWithSyncFunc)


def checkpoint_fc1(sch):
    sch["fc1"].checkpoint()


def checkpoint_both(sch):
    sch["fc1"].decompose()
    sch["fc1"].fuse()
    sch["fc1"].checkpoint()
    sch["fc2"].checkpoint()


SCHEDULES = {"none": None, "decompose": decompose,
             "decompose-fuse": decompose_and_fuse,
             "replace-fused-linear": replace_fused,
             "checkpoint": checkpoint_fc1,
             "fuse-checkpoint-both": checkpoint_both}


@pytest.mark.parametrize("name", SCHEDULES)
def test_schedule_variants_give_eager_gradients(name):
    torch.manual_seed(7)
    check_gradients(MLP(), (inputs(2, 8, 32, seed=8),), SCHEDULES[name])


def test_checkpoint_saves_less_and_gives_the_same_gradients():
    torch.manual_seed(9)
    model = MLP()
    x = (inputs(2, 8, 32, seed=10),)
    plain = check_gradients(copy.deepcopy(model), x)
    kept = check_gradients(model, x, checkpoint_fc1)
    for compiled in (plain, kept):
        compiled(*x).sum().backward()
    saved = [c._last.call.pair().saved for c in (plain, kept)]
    assert saved[1] < saved[0], saved
    # fc1's forward is recomputed in the backward, from the input.
    recompute = 'lamina.matmul "fc1" %arg0, %arg1'
    assert recompute in backward_function(kept.ir("training"))
    assert recompute not in backward_function(plain.ir("training"))


def backward_function(module):
    return module[module.index("func.func @forward_backward"):]


def assert_eager_gradients(compiled, eager, skip=()):
    """Each parameter's gradient equals eager's, but those named in `skip`,
    which have none."""
    for (name, p), (_, q) in zip(compiled.named_parameters(),
                                 eager.named_parameters()):
        if name in skip:
            assert p.grad is None, name
        else:
            torch.testing.assert_close(p.grad, q.grad, **TOL,
                                       msg=lambda m: f"{name}: {m}")


def matmuls_of_backward(call, constants):
    """The lamina.matmul ops of the backward the call compiled for the
    arguments held `constants`."""
    return backward_function(str(call.pair(constants).module)).count(
        "lamina.matmul")


def test_no_gradient_is_computed_for_what_does_not_require_one():
    """An input without requires_grad, a frozen parameter: the backward
    leaves them out (no dX = dY·W for the input), and what does require a
    gradient still gets eager's."""
    torch.manual_seed(12)
    model = MLP()
    eager = copy.deepcopy(model)
    x = inputs(2, 8, 32, seed=13)
    compiled = lamina.build(lamina.create_schedule(model, example_inputs=(x,)),
                            (x,))
    compiled(x).square().sum().backward()
    eager(x).square().sum().backward()
    assert_eager_gradients(compiled, eager)
    call = compiled._last.call
    # x is argument 0: dW2, dH = dY·W2, dW1, and no dX = dH·W1.
    assert matmuls_of_backward(call, (0,)) == 3
    assert matmuls_of_backward(call, ()) == 4

    # The same module with x requiring a gradient: a second pair, and x's.
    x_grad = x.clone().requires_grad_()
    x_eager = x.clone().requires_grad_()
    compiled(x_grad).square().sum().backward()
    eager(x_eager).square().sum().backward()
    torch.testing.assert_close(x_grad.grad, x_eager.grad, **TOL)

    # fc1 frozen: its parameters get no gradient, fc2's still eager's.
    for module in (compiled, eager):
        module.zero_grad(set_to_none=True)
        for name, p in module.named_parameters():
            p.requires_grad_(not name.startswith("fc1."))
    compiled(x).square().sum().backward()
    eager(x).square().sum().backward()
    assert_eager_gradients(compiled, eager, skip=("fc1.weight", "fc1.bias"))
    # x (0), fc1.weight (1) and fc1.bias (2) held constant: dW2 only (dH =
    # dY·W2 feeds only fc1's and x's gradients).
    assert matmuls_of_backward(call, (0, 1, 2)) == 1


class GPT2Block(nn.Module):
    """LayerNorm, FusedQKV, q·kᵀ scaled + softmax, ·v, the output
    projection, a residual; LayerNorm, the MLP with GELU, a residual."""

    def __init__(self, hidden=32, heads=4):
        super().__init__()
        self.hidden = hidden
        self.ln_1 = nn.LayerNorm(hidden)
        self.qkv = lamina.op.FusedQKV(hidden, heads, 1)
        self.proj = nn.Linear(hidden, hidden)
        self.scale = (hidden // heads) ** -0.5
        self.ln_2 = nn.LayerNorm(hidden)
        self.mlp = MLP(hidden, 4 * hidden)

    def forward(self, x):
        q, k, v = self.qkv(self.ln_1(x))
        q = q.permute(0, 2, 1, 3)
        k = k.permute(0, 2, 3, 1)
        v = v.permute(0, 2, 1, 3)
        probs = (torch.matmul(q, k) * self.scale).softmax(dim=-1)
        heads = torch.matmul(probs, v).permute(0, 2, 1, 3)
        merged = heads.reshape(x.shape[0], x.shape[1], self.hidden)
        h = x + self.proj(merged)
        return self.mlp(self.ln_2(h))


def test_gpt2_block():
    torch.manual_seed(11)
    model = GPT2Block()
    with torch.no_grad():  # LayerNorms with non-trivial affine parameters
        for ln in (model.ln_1, model.ln_2):
            ln.weight.uniform_(0.5, 1.5)
            ln.bias.uniform_(-0.5, 0.5)
    check_gradients(model, (inputs(2, 8, 32, seed=12),))


def test_gpt2_block_with_schedule():
    torch.manual_seed(13)

    def schedule(sch):
        sch["mlp.fc1"].decompose()
        sch["mlp.fc1"].fuse()
        sch["mlp.fc1"].checkpoint()
        sch["proj"].fuse()

    check_gradients(GPT2Block(), (inputs(2, 8, 32, seed=14),), schedule)


# -- dropout ------------------------------------------------------------------


class Dropout(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return self.drop(x)


def test_dropout_gradient_follows_the_forward_mask():
    p = 0.25
    x = inputs(8, 64, seed=15) + 3.0  # no element is zero
    compiled = lamina.build(lamina.create_schedule(Dropout(p).train()),
                            (x,))
    lamina.manual_seed(5)
    try:
        leaf = x.clone().requires_grad_()
        y = compiled(leaf)
        lamina.manual_seed(6)  # the backward uses the forward's seed
        y.sum().backward()
    finally:
        lamina.manual_seed(0)
    kept = y.detach() != 0
    assert 0.15 < 1 - kept.float().mean() < 0.35
    assert torch.equal(leaf.grad == 0, ~kept)
    torch.testing.assert_close(leaf.grad[kept],
                               torch.full_like(leaf.grad[kept], 1 / (1 - p)),
                               rtol=1e-6, atol=0)


def test_linear_dropout_in_train_mode_equals_eager_with_its_mask():
    torch.manual_seed(16)
    p = 0.3
    layer = lamina.op.LinearWithDropout(24, 40, p=p).train()
    model = One(layer)
    eager = copy.deepcopy(layer)
    x = inputs(3, 5, 24, seed=17)
    compiled = lamina.build(lamina.create_schedule(model), (x,))
    lamina.manual_seed(3)
    try:
        y, (dx,) = backward(compiled, (x,), seed=18)
    finally:
        lamina.manual_seed(0)
    mask = (y[0] != 0).float()
    assert 0.2 < 1 - mask.mean() < 0.4
    leaf = x.clone().requires_grad_()
    want = (F.linear(leaf, eager.weight, eager.bias) * mask / (1 - p)) * 2.0
    generator = torch.Generator().manual_seed(18)
    (want * torch.randn(want.shape, generator=generator)).sum().backward()
    torch.testing.assert_close(y[0], want.detach(), **TOL)
    torch.testing.assert_close(dx, leaf.grad, **TOL)
    torch.testing.assert_close(layer.weight.grad, eager.weight.grad, **TOL)
    torch.testing.assert_close(layer.bias.grad, eager.bias.grad, **TOL)


def test_train_and_eval_switch_dropout_by_compiling_each_mode_once():
    torch.manual_seed(19)
    model = nn.Sequential(nn.Linear(16, 32), nn.Dropout(0.5),
                          nn.Linear(32, 16)).train()
    eager = copy.deepcopy(model).eval()
    x = inputs(4, 16, seed=20)
    compiled = lamina.build(lamina.create_schedule(model), (x,))
    assert compiled.training
    with torch.no_grad():
        lamina.manual_seed(23)
        dropped = compiled(x)
        assert not torch.allclose(dropped, eager(x), **TOL)
        compiled.eval()
        torch.testing.assert_close(compiled(x), eager(x), **TOL)
        assert "training" not in compiled.ir("imported")
        compiled.train()
        lamina.manual_seed(23)  # the same masks again
        torch.testing.assert_close(compiled(x), dropped, rtol=0, atol=0)
    assert model.training and model[1].training  # the model is left alone
    assert len(compiled._state["programs"]) == 2
    compiled.eval()
    compiled(x).sum().backward()  # eval: gradients without dropout
    eager(x).sum().backward()
    for p, q in zip(compiled.parameters(), eager.parameters()):
        torch.testing.assert_close(p.grad, q.grad, **TOL)


def test_gradients_with_create_graph_are_first_order_only():
    torch.manual_seed(21)
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))
    eager = copy.deepcopy(model)
    x = inputs(4, 16, seed=22)
    compiled = lamina.build(lamina.create_schedule(model), (x,))
    leaf, eager_leaf = (x.clone().requires_grad_() for _ in range(2))
    (dx,) = torch.autograd.grad(compiled(leaf).square().sum(), leaf,
                                create_graph=True)
    (want,) = torch.autograd.grad(eager(eager_leaf).square().sum(),
                                  eager_leaf)
    torch.testing.assert_close(dx.detach(), want, **TOL)
    assert dx.requires_grad  # on the graph, as create_graph asks
    with pytest.raises(lamina.UnsupportedOperationError,
                       match="derivative of its gradients"):
        dx.square().sum().backward()


def test_conversions_that_would_change_a_parameter_are_refused():
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))
    x = inputs(4, 16, seed=23)
    compiled = lamina.build(lamina.create_schedule(model), (x,))
    before = compiled(x).detach()
    for convert in (lambda m: m.double(), lambda m: m.half(),
                    lambda m: m.to(torch.bfloat16)):
        with pytest.raises(lamina.ScheduleError,
                           match=r"'0\.weight' is compiled as torch\.float32 "
                                 r"on cpu; to run it as torch\.\w+ on cpu"):
            convert(compiled)
    assert all(p.dtype == torch.float32 for p in model.parameters())
    compiled.float().to("cpu")  # no change: allowed, as on any module
    torch.testing.assert_close(compiled(x).detach(), before, rtol=0, atol=0)


def test_a_parameter_replaced_by_another_layout_is_named():
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))
    x = inputs(4, 16, seed=24)
    compiled = lamina.build(lamina.create_schedule(model), (x,))
    model[2].weight.data = model[2].weight.data.double()
    with pytest.raises(lamina.ScheduleError,
                       match=r"parameter '2\.weight' is now float64 "
                             r"\[16, 32\], compiled as float32 \[16, 32\]"):
        compiled(x)
    model[2].weight.data = torch.zeros(16, 8)
    with pytest.raises(lamina.ScheduleError, match=r"now float32 \[16, 8\]"):
        compiled(x.numpy())


@pytest.mark.parametrize("shape", [(1, 16), (1, 1, 16), (4, 1, 16)])
def test_batches_of_one_row_or_one_token(shape):
    """Summed dims of one in the bias and LayerNorm gradients (a batch of
    one token, sequences of one)."""
    torch.manual_seed(25)
    model = nn.Sequential(nn.Linear(16, 32), nn.LayerNorm(32), nn.GELU(),
                          nn.Linear(32, 16))
    check_gradients(model, (inputs(*shape, seed=26),))


def test_the_compiled_tree_prints_its_parameters():
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
    compiled = lamina.build(lamina.create_schedule(model),
                            (inputs(4, 16, seed=27),))
    text = repr(compiled)
    assert "(0): Parameters(weight: float32 [32, 16], bias: float32 [32])" \
        in text, text
    assert "(2): Parameters(weight: float32 [8, 32], bias: float32 [8])" \
        in text, text
