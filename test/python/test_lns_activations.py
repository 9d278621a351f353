"""LNS activations (lamina.lns.activations): forward and gradient codes
bit-exact with the xlnstorch reference's golden vectors
(test/data/lns-golden-ops/activations, README there), torch.nn modules on
LNS tensors, in-place variants, rrelu's random slopes, values against
float PyTorch, and argument errors."""

import ast
import pathlib

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from lamina import lns
from lamina.lns import activations  # noqa: F401 - registers the functions
from lamina.lns.base import Base

GOLDEN = (pathlib.Path(__file__).resolve().parents[1] / "data" /
          "lns-golden-ops" / "activations")
FILES = sorted(GOLDEN.glob("*.npz"))
assert len(FILES) == 74, f"expected the 74 activation golden files in {GOLDEN}"

FUNCTIONS = {"tanh": torch.tanh, "sigmoid": torch.sigmoid}
Z = -(2**53) | 1


def function(name):
    return FUNCTIONS.get(name) or getattr(F, name)


def cases():
    for path in FILES:
        with np.load(path) as d:
            for key in sorted(k[len("out_"):] for k in d.files
                              if k.startswith("out_")
                              and not k.startswith("out_ref_")):
                yield pytest.param(path, key, id=f"{path.stem}-{key}")


def leaf(codes, base):
    data = torch.from_numpy(np.asarray(codes, np.int64).astype(np.float64))
    return lns.LNSTensor(data, base, requires_grad=True)


def assert_codes(got, expected, what):
    got = np.asarray(got.codes if isinstance(got, lns.LNSTensor) else got)
    assert got.shape == expected.shape, (what, got.shape, expected.shape)
    bad = np.flatnonzero(got != expected)
    assert bad.size == 0, (
        f"{what}: {bad.size} of {expected.size} codes differ, first at "
        f"{bad[:5]}: got {got.ravel()[bad[:5]]}, expected "
        f"{expected.ravel()[bad[:5]]}")


@pytest.mark.parametrize("path,key", list(cases()))
def test_golden(path, key):
    d = np.load(path)
    op = path.stem.rsplit("_", 1)[0]
    base = Base.of(**ast.literal_eval(str(d["base"])))
    args = ast.literal_eval(str(d[f"args_{key}"]))
    which = key.split("_")[0]
    x = leaf(d[f"x_{which}"], base)
    operands = [x]
    weight = None
    if op == "prelu":
        weight = leaf(d[f"w_{key}"], base)
        operands.append(weight)
    if f"seed_{key}" in d.files:
        torch.manual_seed(int(d[f"seed_{key}"]))
    dtype = torch.get_default_dtype()
    if f"default_dtype_{key}" in d.files:  # the reference's e follows it
        torch.set_default_dtype(getattr(torch, str(d[f"default_dtype_{key}"])))
    try:
        y = function(op)(*operands, **args)
        g = d[f"g_{which}"][tuple(slice(0, n) for n in y.shape)]
        y.backward(lns.LNSTensor(torch.from_numpy(g.astype(np.float64)), base))
    finally:
        torch.set_default_dtype(dtype)
    assert_codes(y, d[f"out_{key}"], "forward")
    assert_codes(x.grad, d[f"gx_{key}"], "input gradient")
    if weight is not None:
        assert_codes(weight.grad, d[f"gw_{key}"], "weight gradient")


def test_golden_fixes_are_the_documented_ones():
    """Where the golden files hold a fixed rule, the reference's codes
    differ from it only as the README says."""
    d = np.load(GOLDEN / "softmin_f23.npz")
    assert np.array_equal(d["gx_s2_dim1"], d["gx_ref_s2_dim1"] ^ 1)
    d = np.load(GOLDEN / "softplus_f10.npz")
    assert np.array_equal(d["out_s1"], d["out_ref_s1"])  # beta = 1
    changed = d["gx_s1"] != d["gx_ref_s1"]
    assert np.array_equal(d["gx_ref_s1"][changed], np.zeros(changed.sum()))
    d = np.load(GOLDEN / "prelu_f10.npz")
    base = Base(f=10)
    assert np.array_equal(lns.add(d["gw_s2_w6"], 0, **base.kw()),
                          d["gw_ref_s2_w6"])


# -- values against float PyTorch --------------------------------------------

MODULES = [nn.LeakyReLU(0.2), nn.Threshold(0.1, -2.0), nn.Tanh(), nn.Sigmoid(),
           nn.LogSigmoid(), nn.Softmin(1), nn.Softmax(1), nn.LogSoftmax(0),
           nn.Hardtanh(-0.5, 2.0), nn.Hardswish(), nn.ReLU6(), nn.ELU(0.7),
           nn.SELU(), nn.CELU(1.5), nn.PReLU(3, 0.3).double(), nn.RReLU().eval(),
           nn.GLU(2), nn.Hardshrink(0.7), nn.Tanhshrink(), nn.Softsign(),
           nn.Softplus(2.0, 3.0), nn.Softshrink(0.3), nn.Hardsigmoid(),
           nn.SiLU(), nn.Softmax2d()]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: type(m).__name__)
def test_modules_match_float_torch(module):
    values = torch.linspace(-4.0, 4.0, 2 * 3 * 4 * 2, dtype=torch.float64)
    values = values.reshape(2, 3, 4, 2)
    x = lns.lnstensor(values, f=23)
    y = module(x)
    assert isinstance(y, lns.LNSTensor)
    expected = module(x.value).detach()
    assert y.shape == expected.shape
    assert torch.allclose(y.value, expected, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("name,args", [
    ("leaky_relu", {"negative_slope": 0.1}), ("threshold", {"threshold": 0.5, "value": 3.0}),
    ("tanh", {}), ("sigmoid", {}), ("logsigmoid", {}), ("softmin", {"dim": 0}),
    ("softmax", {"dim": -1}), ("log_softmax", {"dim": 1}), ("hardtanh", {}),
    ("hardswish", {}), ("relu6", {}), ("elu", {"alpha": 0.5}), ("selu", {}),
    ("celu", {"alpha": 2.0}), ("hardshrink", {}), ("tanhshrink", {}),
    ("softsign", {}), ("softplus", {"beta": 1.5, "threshold": 4.0}),
    ("softshrink", {}), ("hardsigmoid", {}), ("silu", {}), ("glu", {"dim": 0})])
def test_gradients_match_float_torch(name, args):
    """Away from the kinks, gradient codes decode to torch's gradients
    within the precision of f = 23."""
    torch.manual_seed(0)
    values = torch.randn(4, 5, dtype=torch.float64) * 2.5
    values = torch.where(values.abs().sub(3.0).abs() < 0.05, values + 0.2, values)
    x = lns.lnstensor(values, f=23, requires_grad=True)
    y = function(name)(x, **args)
    g = torch.randn(y.shape, dtype=torch.float64)
    y.backward(lns.lnstensor(g, f=23))
    reference = x.value.clone().requires_grad_()
    function(name)(reference, **args).backward(g)
    assert torch.allclose(x.grad.value, reference.grad, rtol=1e-5, atol=1e-6)


def test_prelu_weight_gradient_matches_float_torch():
    torch.manual_seed(1)
    values = torch.randn(2, 3, 4, dtype=torch.float64)
    weight = torch.tensor([0.1, -0.2, 0.3], dtype=torch.float64)
    x = lns.lnstensor(values, f=23, requires_grad=True)
    w = lns.lnstensor(weight, f=23, requires_grad=True)
    F.prelu(x, w).backward(lns.ones(2, 3, 4, f=23))
    xf, wf = x.value.requires_grad_(), w.value.requires_grad_()
    F.prelu(xf, wf).backward(torch.ones(2, 3, 4, dtype=torch.float64))
    assert torch.allclose(w.grad.value, wf.grad, rtol=1e-5)
    assert torch.allclose(x.grad.value, xf.grad, rtol=1e-5)


def test_softmin_gradient_has_torchs_sign():
    x = lns.lnstensor([1.0, 2.0, 3.0], f=23, requires_grad=True)
    F.softmin(x, dim=0).backward(lns.lnstensor([1.0, 0.0, 0.0], f=23))
    xf = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    F.softmin(xf, dim=0).backward(torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64))
    assert torch.allclose(x.grad.value, xf.grad, rtol=1e-5)


def test_leaky_relu_negative_slope_gradient_uses_the_input_sign():
    x = lns.lnstensor([-2.0, 3.0], f=23, requires_grad=True)
    F.leaky_relu(x, -0.5).backward(lns.lnstensor([1.0, 1.0], f=23))
    assert torch.allclose(x.grad.value, torch.tensor([-0.5, 1.0], dtype=torch.float64),
                          rtol=1e-6)


def test_threshold_keeps_gradient_of_inputs_equal_to_value():
    x = lns.lnstensor([2.0, -1.0], f=23, requires_grad=True)
    F.threshold(x, 0.0, 2.0).backward(lns.lnstensor([1.0, 1.0], f=23))
    assert x.grad.value.tolist() == [1.0, 0.0]


def test_softsign_gradient_at_zero_is_one():
    x = lns.lnstensor([0.0], f=10, requires_grad=True)
    g = lns.lnstensor([3.0], f=10)
    F.softsign(x).backward(g)
    assert torch.equal(x.grad.codes, g.codes)


def test_softplus_large_inputs_do_not_decode_to_infinity():
    y = F.softplus(lns.lnstensor([1000.0, 1.0], f=23))
    assert torch.allclose(y.value, torch.tensor([1000.0, 1.3132616875], dtype=torch.float64),
                          rtol=1e-6)


def test_tensor_methods_and_deprecated_functional_forms():
    x = lns.lnstensor([-1.0, 0.5], f=10)
    assert torch.equal(x.tanh(), torch.tanh(x))
    assert torch.equal(x.sigmoid(), torch.sigmoid(x))
    with pytest.warns(UserWarning):
        assert torch.equal(F.tanh(x), torch.tanh(x))


# -- in-place variants, rrelu, dims ---------------------------------------------

@pytest.mark.parametrize("call,inplace_call", [
    (lambda x: F.leaky_relu(x, 0.3), lambda x: F.leaky_relu_(x, 0.3)),
    (lambda x: F.leaky_relu(x, 0.3), lambda x: F.leaky_relu(x, 0.3, inplace=True)),
    (lambda x: F.threshold(x, 0.2, 5.0), lambda x: F.threshold_(x, 0.2, 5.0)),
    (lambda x: F.hardtanh(x, -0.4, 0.4), lambda x: F.hardtanh_(x, -0.4, 0.4)),
    (lambda x: F.elu(x, 0.5), lambda x: F.elu_(x, 0.5)),
    (torch.relu, F.relu_),
    (torch.relu, lambda x: F.relu(x, inplace=True)),
    (torch.relu, lambda x: nn.ReLU(inplace=True)(x)),
    (lambda x: F.rrelu(x), F.rrelu_),
    (F.relu6, lambda x: F.relu6(x, inplace=True)),
    (F.selu, lambda x: F.selu(x, inplace=True)),
    (F.celu, lambda x: F.celu(x, inplace=True)),
    (F.hardswish, lambda x: F.hardswish(x, inplace=True)),
    (F.hardsigmoid, lambda x: F.hardsigmoid(x, inplace=True)),
    (F.silu, lambda x: F.silu(x, inplace=True))])
def test_in_place_variants_update_their_input(call, inplace_call):
    values = [-2.0, -0.25, 0.0, 0.3, 4.0]
    expected = call(lns.lnstensor(values, f=16))
    x = lns.lnstensor(values, f=16)
    result = inplace_call(x)
    assert result is x
    assert torch.equal(x.codes, expected.codes)


def test_relu_in_place_keeps_the_autograd_history():
    a = lns.lnstensor([-2.0, 0.5, 3.0], f=12, requires_grad=True)
    h = a * 2.0
    out = F.relu(h, inplace=True)
    assert out is h
    torch.sum(out).backward()
    assert torch.equal(a.grad.codes,
                       lns.lnstensor([0.0, 2.0, 2.0], f=12).codes)


def test_rrelu_training_draws_slopes_within_bounds_from_torch():
    x = lns.lnstensor(-torch.linspace(0.5, 4.0, 200, dtype=torch.float64), f=23)
    torch.manual_seed(3)
    first = F.rrelu(x, 0.1, 0.4, training=True)
    torch.manual_seed(3)
    again = nn.RReLU(0.1, 0.4).train()(x)
    assert torch.equal(first.codes, again.codes)
    slopes = first.value / x.value
    assert slopes.min() >= 0.1 * (1 - 1e-6) and slopes.max() <= 0.4 * (1 + 1e-6)
    assert slopes.std() > 0.05  # one slope per element
    evaluated = F.rrelu(x, 0.1, 0.4, training=False).value / x.value
    assert torch.allclose(evaluated, torch.full_like(evaluated, 0.25), rtol=1e-6)


def test_softmax_without_dim_follows_torchs_implicit_dim():
    x = lns.lnstensor(torch.arange(6, dtype=torch.float64).reshape(2, 3), f=23)
    with pytest.warns(UserWarning, match="Implicit dimension"):
        y = F.softmax(x)
    assert torch.equal(y.codes, F.softmax(x, dim=1).codes)


def test_mixed_bases_follow_the_input():
    x = lns.lnstensor([-1.0, 2.0], f=10)
    slope = lns.lnstensor(0.25, f=23)
    y = F.leaky_relu(x, slope)
    assert y.f == 10
    assert torch.equal(y.codes, F.leaky_relu(x, 0.25).codes)


def test_activations_do_not_compile():
    net = nn.Sequential(lns.LNSLinear(4, 2, weight_f=10))
    sgd = lns.LNSSGD(net[0].lns_parameters(), lr=0.1)
    inputs = (lns.lnstensor(torch.randn(3, 4), f=10),
              lns.lnstensor(torch.randn(3, 2), f=10))
    with pytest.raises(lns.CompileError, match="hardtanh does not compile"):
        lns.compile_step(net, lambda y, t: F.mse_loss(F.hardtanh(y), t),
                         sgd, inputs)


# -- errors ---------------------------------------------------------------------

def test_argument_errors():
    x = lns.lnstensor([[1.0, 2.0, 3.0]], f=10)
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(x, dim=1)
    with pytest.raises(RuntimeError, match="glu does not support scalars"):
        F.glu(lns.lnstensor(1.0, f=10))
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.softmax(x, dim=2)
    with pytest.raises(TypeError, match="dtype= is not taken"):
        F.softmax(x, dim=1, dtype=torch.float32)
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers"):
        F.prelu(x, lns.lnstensor([0.1, 0.2], f=10))
    with pytest.raises(RuntimeError, match="Lower bound should be less"):
        F.rrelu(x, 0.5, 0.1)
    with pytest.raises(TypeError, match="no out= tensor"):
        torch.tanh(x, out=torch.empty(1, 3))
    with pytest.raises(TypeError, match="cannot make an LNS tensor from str"):
        F.leaky_relu(x, "0.1")
    with pytest.raises(ZeroDivisionError):
        F.celu(lns.lnstensor([-1.0], f=10), alpha=0.0)
    with pytest.raises(TypeError, match="gelu is not an operation Lamina implements"):
        F.gelu(x)
