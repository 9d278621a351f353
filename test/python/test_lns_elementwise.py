"""lamina.lns sign, exp, log, positive and pow with float / tensor / LNS
exponents against the xlnstorch reference's golden vectors (forward codes
and input gradients), plus semantics against float torch and errors."""

import pathlib

import numpy as np
import pytest
import torch

from lamina import lns
from lamina.lns import elementwise  # noqa: F401 - registers the functions

GOLDEN = (pathlib.Path(__file__).resolve().parents[1] / "data"
          / "lns-golden-ops" / "elementwise")
FILES = sorted(GOLDEN.glob("elementwise_*.npz"))
ZERO = -(2**53) | 1


def base_of(d):
    return {"f": int(d["f"])} if int(d["f"]) >= 0 else {"b": float(d["b"])}


def from_codes(c, kw, requires_grad=False):
    return lns.lnstensor(torch.from_numpy(np.asarray(c, np.int64)).double(),
                         from_lns=True, requires_grad=requires_grad, **kw)


def is_zero(c):
    return (np.asarray(c) | 1) == ZERO


def test_golden_files_exist():
    assert len(FILES) == 3


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_sign(path):
    d = np.load(path)
    x = from_codes(d["x"], base_of(d))
    assert np.array_equal(torch.sign(x).codes.numpy(), d["sign"])
    assert np.array_equal(x.sign().codes.numpy(), d["sign"])


@pytest.mark.parametrize("op", ["exp", "log"])
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_exp_and_log_forward_and_gradient(path, op):
    d = np.load(path)
    kw = base_of(d)
    x = from_codes(d[f"{op}_x"], kw, requires_grad=True)
    out = getattr(torch, op)(x)
    assert np.array_equal(out.codes.numpy(), d[op])
    out.backward(from_codes(d[f"{op}_upstream"], kw))
    assert np.array_equal(x.grad.codes.numpy(), d[f"{op}_grad"])


EXPONENTS = {"half": 0.5, "m1_5": -1.5, "third": 1 / 3, "two": 2,
             "three": 3, "m1": -1, "two_float": 2.0}


@pytest.mark.parametrize("name", [*EXPONENTS, "tfloat", "tint"])
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_pow(path, name):
    """Codes and gradients equal the reference's except at zero operands,
    where the spec's fix keeps zero (the reference's powi has no zero
    case; §5.7)."""
    d = np.load(path)
    kw = base_of(d)
    exponent = EXPONENTS.get(name)
    if exponent is None:
        exponent = torch.from_numpy(d["pow_nfloat" if name == "tfloat"
                                      else "pow_nint"])
    x = from_codes(d["pow_x"], kw, requires_grad=True)
    out = torch.pow(x, exponent)
    out.backward(from_codes(d[f"pow_{name}_upstream"], kw))
    keep = ~is_zero(d["pow_x"])
    assert np.array_equal(out.codes.numpy()[keep], d[f"pow_{name}"][keep])
    assert np.array_equal(x.grad.codes.numpy()[keep],
                          d[f"pow_{name}_grad"][keep])
    assert (out.codes.numpy()[~keep] == ZERO).all()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_pow_with_an_lns_exponent(path):
    d = np.load(path)
    kw = base_of(d)
    x, n = from_codes(d["pow_x"], kw), from_codes(d["pow_nlns"], kw)
    keep = ~is_zero(d["pow_x"])
    assert np.array_equal((x ** n).codes.numpy()[keep], d["pow_tlns"][keep])


# -- semantics against float torch ------------------------------------------

def test_values_agree_with_float_torch():
    v = torch.tensor([0.5, 1.25, 2.0, 3.0, 7.5], dtype=torch.float64)
    x = lns.lnstensor(v, f=30)
    for op in (torch.log, torch.sign):
        torch.testing.assert_close(op(x).value, op(v), rtol=1e-7, atol=0)
    # The reference's e is torch's in the default dtype (float32 here):
    # e ** v with that e, not float64's.
    e = torch.exp(torch.tensor(1.0)).to(torch.float64)
    torch.testing.assert_close(torch.exp(x).value, e ** v, rtol=1e-7, atol=0)
    torch.testing.assert_close((x ** 0.5).value, v ** 0.5, rtol=1e-7, atol=0)
    n = torch.tensor([0.5, 1.0, 2.0, -1.0, 1.5], dtype=torch.float64)
    torch.testing.assert_close(torch.pow(x, n).value, v ** n, rtol=1e-7,
                               atol=0)
    assert torch.positive(x).lns is x.lns
    torch.testing.assert_close(torch.sign(lns.lnstensor([-2.0, 0.0], f=10))
                               .value, torch.tensor([-1.0, 0.0],
                                                    dtype=torch.float64))


@pytest.mark.parametrize("op", [torch.exp, torch.log,
                                lambda t: t ** 0.5, lambda t: t ** 2.5])
def test_gradients_agree_with_float_autograd(op):
    v = torch.tensor([0.5, 1.25, 2.0, 0.75, 3.0], dtype=torch.float64)
    x = lns.lnstensor(v, f=30, requires_grad=True)
    op(x).sum().backward()
    reference = v.clone().requires_grad_()
    op(reference).sum().backward()
    torch.testing.assert_close(x.grad.value, reference.grad, rtol=1e-7,
                               atol=0)


def test_float_exponents_drop_the_sign_as_the_reference():
    """A float exponent scales the exponent only: (-4) ** 0.5 is +2, and
    so is (-2) ** 1.0 through a float tensor exponent (the reference's
    rule); a Python integer keeps powi's sign."""
    x = lns.lnstensor([-4.0, -2.0], f=20)
    torch.testing.assert_close((x ** 0.5).value[0].item(), 2.0, rtol=1e-6,
                               atol=0)
    assert (x ** torch.tensor([1.0, 1.0])).value[1].item() > 0
    assert (x ** 3).value[1].item() < 0


def test_sign_has_a_zero_gradient():
    x = lns.lnstensor([-2.0, 3.0], f=10, requires_grad=True)
    torch.sign(x).backward()
    assert (x.grad.codes == ZERO).all()


def test_in_place_methods_and_alpha():
    x = lns.lnstensor([1.0, 2.0], f=16)
    y = lns.lnstensor([4.0, 8.0], f=16)
    expected = torch.add(x, torch.mul(y, 2.0))
    assert torch.equal(torch.add(x, y, alpha=2.0).codes, expected.codes)
    z = x.clone()
    assert z.add_(y, alpha=2.0) is z and torch.equal(z.codes, expected.codes)
    assert torch.equal(x.sub(y, alpha=0.5).codes,
                       torch.sub(x, torch.mul(y, 0.5)).codes)
    z = x.clone().mul_(y).div_(y)
    torch.testing.assert_close(z.value, x.value, rtol=1e-4, atol=0)
    assert torch.equal(x.clone().sign_().codes, torch.sign(x).codes)


def test_errors():
    x = lns.lnstensor([1.0, -2.0, 0.0], f=10)
    with pytest.raises(ValueError,
                       match=r"log of -2\.0\d* \(at index \(1,\)\)"):
        torch.log(x)
    with pytest.raises(TypeError, match="real exponent"):
        x ** torch.tensor([True, False, True])
    with pytest.raises(TypeError, match="no out= tensor"):
        torch.exp(x, out=x)
    with pytest.raises(TypeError, match="LNS exp takes an LNS tensor"):
        elementwise.exp(torch.ones(2))
