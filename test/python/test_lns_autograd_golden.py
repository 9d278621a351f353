"""LNS backward rules against the xlnstorch reference: every op-level file
of test/data/lns-golden-train (element-wise ops, sum, matmul, linear, relu,
mse_loss), run through LNSTensor autograd and compared code for code."""

import pathlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lamina import lns

GOLDEN = (pathlib.Path(__file__).resolve().parents[1] / "data"
          / "lns-golden-train")


def load(name):
    return np.load(GOLDEN / name, allow_pickle=False)


def files(pattern):
    return sorted(p.name for p in GOLDEN.glob(pattern))


def leaf(codes, f):
    return lns.lnstensor(torch.from_numpy(codes.astype(np.float64)),
                         from_lns=True, f=f).requires_grad_()


def cotangent(codes, f):
    return lns.lnstensor(torch.from_numpy(codes.astype(np.float64)),
                         from_lns=True, f=f)


def grad_codes(tensor):
    return tensor.grad.codes.numpy()


def assert_codes(actual, expected, what):
    actual = np.asarray(actual, dtype=np.int64)
    differing = np.flatnonzero(actual.reshape(-1) != expected.reshape(-1))
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    assert differing.size == 0, (
        f"{what}: {differing.size} of {actual.size} codes differ, first at "
        f"{differing[0]}: {actual.reshape(-1)[differing[0]]} vs "
        f"{expected.reshape(-1)[differing[0]]}")


BINARY = {"add": torch.add, "sub": torch.sub, "mul": torch.mul,
          "div": torch.div}


@pytest.mark.parametrize("name", [f"{op}_backward_f{f}.npz"
                                  for op in list(BINARY) + ["neg"]
                                  for f in (10, 16, 23)])
def test_elementwise_backward(name):
    op = name.split("_")[0]
    d = load(name)
    f = int(d["f"])
    x = leaf(d["x"], f)
    if op == "neg":
        out = torch.neg(x)
    else:
        y = leaf(d["y"], f)
        out = BINARY[op](x, y)
    assert_codes(out.codes, d["out"], f"{name}: out")
    out.backward(cotangent(d["grad_out"], f))
    assert_codes(grad_codes(x), d["grad_x"], f"{name}: grad_x")
    if op != "neg":
        assert_codes(grad_codes(y), d["grad_y"], f"{name}: grad_y")


def _sum_cases():
    return [(name, tag) for name in files("sum_backward_*.npz")
            for tag in ("all", "dim1", "dim0", "dim1_keepdim")]


@pytest.mark.parametrize("name,tag", _sum_cases())
def test_sum_backward_broadcasts_the_cotangent(name, tag):
    """Forward codes are the reference's; the gradient is the spec's fix (g
    broadcast back), and equals the reference's c1 exactly where g is c1."""
    d = load(name)
    f = int(d["f"])
    x = leaf(d["x"], f)
    kwargs = {"all": {}, "dim1": {"dim": 1}, "dim0": {"dim": 0},
              "dim1_keepdim": {"dim": 1, "keepdim": True}}[tag]
    s = torch.sum(x, **kwargs)
    assert_codes(s.codes, d[f"out_{tag}"], f"{name}: out_{tag}")
    g = d[f"grad_out_{tag}"]
    s.backward(cotangent(g, f))
    assert_codes(grad_codes(x), d[f"grad_x_{tag}_if_fixed"], f"{name}: {tag}")
    reference = d[f"grad_x_{tag}"]
    agree = np.broadcast_to(
        (g == 0).reshape(g.shape + (1,) * 0) if tag == "all"
        else (np.expand_dims(g, kwargs["dim"]) == 0 if tag != "dim1_keepdim"
              else g == 0), reference.shape)
    assert_codes(grad_codes(x)[agree], reference[agree], f"{name}: where g = c1")


@pytest.mark.parametrize("name", files("matmul_backward_*.npz"))
def test_matmul_backward(name):
    d = load(name)
    f = int(d["f"])
    a, b = leaf(d["a"], f), leaf(d["b"], f)
    assert tuple(a.shape) == tuple(d["a_shape"])
    assert tuple(b.shape) == tuple(d["b_shape"])
    out = torch.matmul(a, b)
    assert_codes(out.codes, d["out"], f"{name}: out")
    out.backward(cotangent(d["grad_out"], f))
    assert_codes(grad_codes(a), d["grad_a"], f"{name}: grad_a")
    assert_codes(grad_codes(b), d["grad_b"], f"{name}: grad_b")


@pytest.mark.parametrize("name", files("linear_backward_*.npz"))
def test_linear_backward(name):
    d = load(name)
    f = int(d["f"])
    x = leaf(d["x"], f)
    if name.endswith("_module.npz"):
        layer = lns.LNSLinear(int(d["K"]), int(d["N"]), weight_f=f)
        layer.weight = cotangent(d["w"], f)
        layer.bias = cotangent(d["b"], f)
        out = layer(x)
        w, b = layer.weight, layer.bias
    else:
        w, b = leaf(d["w"], f), leaf(d["b"], f)
        out = F.linear(x, w, b)
    assert_codes(out.codes, d["out"], f"{name}: out")
    out.backward(cotangent(d["grad_out"], f))
    assert_codes(grad_codes(x), d["grad_x"], f"{name}: grad_x")
    assert_codes(grad_codes(w), d["grad_w"], f"{name}: grad_w")
    assert_codes(grad_codes(b), d["grad_b"], f"{name}: grad_b")


@pytest.mark.parametrize("name", files("relu_mse_backward_*.npz"))
def test_relu_backward(name):
    d = load(name)
    f = int(d["f"])
    x = leaf(d["x"], f)
    r = F.relu(x)
    assert_codes(r.codes, d["relu_out"], f"{name}: relu_out")
    r.backward(cotangent(d["relu_grad_out"], f))
    assert_codes(grad_codes(x), d["relu_grad_x"], f"{name}: relu_grad_x")


@pytest.mark.parametrize("name", files("relu_mse_backward_*.npz"))
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_mse_loss_backward(name, reduction):
    d = load(name)
    f = int(d["f"])
    p, t = leaf(d["pred"], f), leaf(d["target"], f)
    loss = F.mse_loss(p, t, reduction=reduction)
    assert_codes(loss.codes, d[f"mse_{reduction}_loss"], f"{name}: loss")
    loss.backward()
    assert_codes(grad_codes(p), d[f"mse_{reduction}_grad_pred"],
                 f"{name}: grad_pred")
    assert_codes(grad_codes(t), d[f"mse_{reduction}_grad_target"],
                 f"{name}: grad_target")
