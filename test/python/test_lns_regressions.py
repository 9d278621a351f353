"""Regression tests of lamina.lns against the xlnstorch reference's codes
(test/data/lns-golden-ops/regressions/, README there): matmul with 1-D
operands, division by an LNS zero, float nn.Linear layers fed LNS inputs,
writing an LNS layer's parameters in place, kernels reading code tensors
that require grad, the reference's examples, and torch.optim.SGD stepping
LNS parameters."""

import os

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lamina.lns as lns
from lamina.lns import kernels as K

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "lns-golden-ops",
                    "regressions")
Z = -(2**53) | 1


def load(name):
    with np.load(os.path.join(DATA, name + ".npz"), allow_pickle=False) as d:
        return {k: d[k] for k in d.files}


def from_codes(c, f, requires_grad=False):
    t = lns.lnstensor(torch.from_numpy(np.asarray(c, np.int64))
                      .to(torch.float64), from_lns=True, f=f)
    return t.requires_grad_() if requires_grad else t


def assert_codes(got, want):
    if isinstance(got, lns.LNSTensor):
        got = got.codes
    if torch.is_tensor(got):
        got = got.detach().to(torch.int64).numpy()
    np.testing.assert_array_equal(np.asarray(got, np.int64), want)


# -- 1. matmul with 1-D operands ------------------------------------------

MATMUL_CASES = ("vm", "mv", "vv", "bv", "vb")


@pytest.mark.parametrize("f", [10, 23])
@pytest.mark.parametrize("case", MATMUL_CASES)
def test_matmul_with_1d_operands_forward_and_backward(f, case):
    d = load(f"matmul_1d_f{f}")
    a = from_codes(d[f"{case}_a"], f, requires_grad=True)
    b = from_codes(d[f"{case}_b"], f, requires_grad=True)
    y = torch.matmul(a, b)
    assert tuple(y.shape) == d[f"{case}_y"].shape
    assert_codes(y, d[f"{case}_y"])
    y.backward(from_codes(d[f"{case}_g"], f))
    assert_codes(a.grad, d[f"{case}_ga"])
    assert_codes(b.grad, d[f"{case}_gb"])
    # The kernel itself takes 1-D operands as torch.matmul does.
    assert_codes(lns.matmul(d[f"{case}_a"], d[f"{case}_b"], f=f),
                 d[f"{case}_y"])
    assert_codes(a.detach() @ b.detach(), d[f"{case}_y"])


def test_matmul_with_1d_operands_follows_float_matmul():
    torch.manual_seed(0)
    for sa, sb in (((5,), (5, 3)), ((3, 5), (5,)), ((5,), (5,)),
                   ((2, 3, 5), (5,)), ((5,), (2, 5, 3))):
        a, b = torch.randn(sa, dtype=torch.float64), torch.randn(
            sb, dtype=torch.float64)
        y = torch.matmul(lns.lnstensor(a, f=23), lns.lnstensor(b, f=23))
        torch.testing.assert_close(y.value, torch.matmul(a, b), rtol=1e-5,
                                   atol=1e-5)


def test_matmul_kernel_rejects_mismatched_and_0d_operands():
    with pytest.raises(ValueError, match=r"inner dimensions differ.*\(3,\)"):
        lns.matmul(np.zeros(3, np.int64), np.zeros((4, 2), np.int64), f=10)
    with pytest.raises(ValueError, match="at least one dimension"):
        lns.matmul(np.int64(0), np.zeros(3, np.int64), f=10)


# -- 2. division by an LNS zero -----------------------------------------

@pytest.mark.parametrize("f", [10, 23])
def test_division_by_zero_gives_the_reference_codes(f):
    d = load(f"div_zero_f{f}")
    x, y = from_codes(d["x"], f), from_codes(d["y"], f)
    q = x / y
    assert_codes(q, d["q"])
    np.testing.assert_array_equal(q.value.numpy(), d["q_value"])
    assert np.isinf(d["q_value"][d["x"] | 1 != Z]).all()
    assert_codes(torch.div(x, y), d["q"])
    assert_codes(torch.div(x, 0.0), d["div_float_zero"])
    assert_codes(torch.reciprocal(y), d["reciprocal"])


@pytest.mark.parametrize("f", [10, 23])
def test_the_division_kernel_raises_unless_asked_for_the_formula(f):
    d = load(f"div_zero_f{f}")
    with pytest.raises(ZeroDivisionError, match=r"divisor is zero at index "
                       r"\(0,\)"):
        K.div(d["x"], d["y"], f=f)
    formula = K.div(d["x"], d["y"], f=f, zero_divisor="formula")
    # The reference's codes went through float64 (exact below 2^53).
    np.testing.assert_array_equal(
        formula.astype(np.float64).astype(np.int64), d["q"])
    with pytest.raises(ValueError, match="zero_divisor must be 'raise' or "
                       "'formula', got 'nan'"):
        K.div(d["x"], d["y"], f=f, zero_divisor="nan")


def test_division_by_zero_has_no_gradient():
    # The spec's fix (training spec §5, item 8): the reference's backward
    # returns garbage codes here.
    x = lns.lnstensor([1.0, 2.0], f=10, requires_grad=True)
    y = lns.lnstensor([0.0, 1.0], f=10, requires_grad=True)
    q = torch.sum(x / y)
    with pytest.raises(ZeroDivisionError, match="divisor is zero"):
        q.backward()


# -- 3. a float nn.Linear stack fed LNS inputs -----------------------------

@pytest.mark.parametrize("f", [10, 23])
def test_float32_linear_stack_fed_lns_inputs(f):
    """The float weights are encoded in the input's base from float64 (as
    the reference's F.linear does); the output and the input's gradient
    are LNS codes, the float parameters get no gradient."""
    d = load(f"float_linear_stack_f{f}")
    net = nn.Sequential(nn.Linear(4, 6), nn.Linear(6, 4))
    assert net[0].weight.dtype == torch.float32
    net.load_state_dict({k: torch.from_numpy(d[k.replace(".", "_")])
                         for k in net.state_dict()})
    x = lns.lnstensor(torch.from_numpy(d["x"]), f=f)
    x.requires_grad_()
    h = net[0](x)
    y = net[1](h)
    assert_codes(h, d["h"])
    assert_codes(y, d["y"])
    torch.sum(y).backward()
    assert_codes(x.grad, d["grad_x"])
    assert all(p.grad is None for p in net.parameters())


# -- 4. writing an LNS layer's parameters in place -------------------------

def test_copy_into_lnslinear_parameters_changes_the_next_forward():
    d = load("copy_into_lnslinear")
    x = lns.lnstensor(torch.from_numpy(d["x"]))
    layer = lns.LNSLinear(4, 3)
    with torch.no_grad():
        layer.weight.copy_(torch.from_numpy(d["w"]))  # floats: encoded
        layer.bias.copy_(lns.lnstensor(torch.from_numpy(d["b"])))
    assert_codes(layer(x), d["y"])
    with torch.no_grad():
        layer.weight.fill_(0.5)
        layer.bias.zero_()
    assert_codes(layer(x), d["y_filled"])
    # The reference's own way writes the code Parameter.
    with torch.no_grad():
        layer.weight_lns.data.copy_(lns.lnstensor(
            torch.from_numpy(d["w"]))._lns)
    layer.bias.data = torch.from_numpy(d["b"])
    assert_codes(layer(x), d["y"])


def test_copy_converts_other_bases_and_broadcasts():
    layer = lns.LNSLinear(3, 2, weight_f=10)
    source = lns.lnstensor(torch.tensor([0.5, -0.25, 0.0]), f=23)
    with torch.no_grad():
        layer.weight.copy_(source)  # converted to f = 10, broadcast
    want = lns.change_base(source.codes.numpy(), f=23, to_f=10)
    assert_codes(layer.weight, np.broadcast_to(want, (2, 3)))
    layer.weight.data = lns.lnstensor(torch.ones(2, 3), f=23)
    assert_codes(layer.weight, np.zeros((2, 3), np.int64))
    assert layer.weight.lns is layer.weight_lns  # still the Parameter
    assert isinstance(layer.weight.data, lns.LNSTensor)
    assert not layer.weight.data.requires_grad


def test_copy_into_a_parameter_needs_no_grad_as_in_torch():
    layer = lns.LNSLinear(3, 2)
    with pytest.raises(RuntimeError, match="in-place operation"):
        layer.weight.copy_(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="fill_ takes one value"):
        with torch.no_grad():
            layer.weight.fill_(torch.zeros(2))


# -- 5. kernels on code tensors that require grad; the examples ------------

def test_kernels_read_code_tensors_that_require_grad():
    x = lns.lnstensor([1.0, -2.0, 0.5], f=10, requires_grad=True)
    y = lns.lnstensor([3.0, 0.25, -4.0], f=10, requires_grad=True)
    cx, cy = x.codes.numpy(), y.codes.numpy()
    for op in (K.add, K.sub, K.mul, K.div, K.maximum, K.minimum):
        np.testing.assert_array_equal(op(x.lns, y.lns, f=10),
                                      op(cx, cy, f=10))
    for op in (K.neg, K.abs, K.sqrt, K.relu, K.decode, K.sum):
        np.testing.assert_array_equal(op(x.lns, f=10), op(cx, f=10))
    np.testing.assert_array_equal(K.compare("lt", x.lns, y.lns, f=10),
                                  K.compare("lt", cx, cy, f=10))
    np.testing.assert_array_equal(
        K.encode(torch.tensor([2.0], requires_grad=True), f=10),
        K.encode(np.array([2.0]), f=10))
    listed = lns.lnstensor([torch.tensor(2.0, requires_grad=True), 3.0],
                           f=10)
    np.testing.assert_array_equal(listed.codes.numpy(),
                                  K.encode(np.array([2.0, 3.0]), f=10))


def test_autograd_support_example():
    d = load("examples")
    a = lns.lnstensor([1.0, 2.0, 3.0], requires_grad=True)
    b = lns.lnstensor([4.0, 5.0, 6.0], requires_grad=True)
    c = a * b
    e = c.sum()
    e.backward()
    for got, key in ((a, "a"), (b, "b"), (c, "c"), (e, "d"),
                     (a.grad, "a_grad"), (b.grad, "b_grad")):
        assert_codes(got, d[key])
    assert not c.detach().requires_grad


def test_optimizer_example_with_written_weights():
    """optimizer_example.py: LNSSGD on an LNSLinear fed a 1-D input that
    requires grad, with torch's MSELoss module, twenty steps."""
    d = load("examples")
    model = lns.LNSLinear(3, 3, bias=True)
    with torch.no_grad():
        model.weight.copy_(torch.from_numpy(d["sgd_w"]))
        model.bias.copy_(torch.from_numpy(d["sgd_b"]))
    inp = lns.lnstensor(torch.from_numpy(d["sgd_x"]), requires_grad=True)
    target = lns.lnstensor([1.0, 1.0, 1.0])
    optimizer = lns.LNSSGD(model.parameter_groups(), lr=0.1)
    loss_fn = nn.MSELoss(reduction="mean")
    for step in range(20):
        optimizer.zero_grad()
        loss = loss_fn(model(inp), target)
        loss.backward()
        optimizer.step()
        assert_codes(loss, d["sgd_losses"][step])
        assert_codes(model.weight, d["sgd_weights"][step])
    assert_codes(inp.grad, d["sgd_input_grad"])


# -- 6. torch.optim.SGD stepping LNS parameters ----------------------------

@pytest.mark.parametrize("set_to_none", [True, False])
@pytest.mark.parametrize("momentum", [0.0, 0.9])
@pytest.mark.parametrize("f", [10, 23])
def test_torch_sgd_on_lns_parameters_as_the_reference(f, momentum,
                                                      set_to_none):
    """torch's SGD updates the codes as floats; its zero_grad (None, or
    zeros in place) does not forget earlier LNS gradients, so each `.grad`
    is the LNS sum of every gradient since the parameters were made."""
    d = load(f"torch_sgd_f{f}_momentum{momentum:g}")
    model = lns.LNSLinear(4, 3, weight_f=f)
    with torch.no_grad():
        model.weight.copy_(torch.from_numpy(d["w0"]))
        model.bias.copy_(torch.from_numpy(d["b0"]))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=momentum)
    x = lns.lnstensor(torch.from_numpy(d["x"]), f=f)
    t = lns.lnstensor(torch.from_numpy(d["t"]), f=f)
    for step in range(4):
        opt.zero_grad(set_to_none=set_to_none)
        loss = F.mse_loss(model(x), t)
        loss.backward()
        assert_codes(loss, d["loss"][step])
        assert_codes(model.weight_lns.grad, d["grad_w"][step])
        assert_codes(model.bias_lns.grad, d["grad_b"][step])
        opt.step()
        np.testing.assert_array_equal(model.weight_lns.detach().numpy(),
                                      d["w"][step])
        np.testing.assert_array_equal(model.bias_lns.detach().numpy(),
                                      d["b"][step])


def test_lns_zero_grad_still_forgets_earlier_gradients():
    d = load("torch_sgd_f10_momentum0")
    model = lns.LNSLinear(4, 3, weight_f=10)
    x = lns.lnstensor(torch.from_numpy(d["x"]), f=10)
    t = lns.lnstensor(torch.from_numpy(d["t"]), f=10)
    F.mse_loss(model(x), t).backward()
    first = model.weight.grad.codes.clone()
    for clear in (model.zero_grad,
                  lns.LNSSGD(model.lns_parameters(), lr=0.1).zero_grad):
        clear()
        F.mse_loss(model(x), t).backward()
        assert torch.equal(model.weight.grad.codes, first)
    torch.optim.SGD(model.parameters(), lr=0.1).zero_grad()
    F.mse_loss(model(x), t).backward()
    assert torch.equal(model.weight.grad.codes, torch.from_numpy(
        K.add(first.numpy(), first.numpy(), f=10)))
