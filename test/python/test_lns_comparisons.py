"""lamina.lns comparisons (isclose, allclose, any, all, isin, sort,
argsort, kthvalue and the element-wise predicates) against the xlnstorch
reference's golden vectors, plus semantics against float torch and
errors."""

import pathlib

import numpy as np
import pytest
import torch

from lamina import lns
from lamina.lns import comparisons  # noqa: F401 - registers the functions

GOLDEN = (pathlib.Path(__file__).resolve().parents[1] / "data"
          / "lns-golden-ops" / "comparisons")
FILES = sorted(GOLDEN.glob("comparisons_*.npz"))
TIES = sorted(GOLDEN.glob("ties_*.npz"))


def base_of(d):
    return {"f": int(d["f"])} if int(d["f"]) >= 0 else {"b": float(d["b"])}


def from_codes(c, kw):
    return lns.lnstensor(torch.from_numpy(np.asarray(c, np.int64)).double(),
                         from_lns=True, **kw)


def codes(t):
    return t.codes.numpy()


def check(got, expected):
    got = got.numpy() if torch.is_tensor(got) else np.asarray(got)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert np.array_equal(got, expected)


def test_golden_files_exist():
    assert len(FILES) == 3 and len(TIES) == 2


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_closeness_and_predicates(path):
    d = np.load(path)
    kw = base_of(d)
    x, y = from_codes(d["x"], kw), from_codes(d["y"], kw)
    check(torch.isclose(x, y), d["isclose"])
    check(torch.isclose(x, y, rtol=0.01, atol=1e-3), d["isclose_tol"])
    check(x.isclose(y, rtol=0.0, atol=0.0), d["isclose_zero_tol"])
    check(torch.isclose(x, from_codes(d["y_row"], kw), rtol=0.05, atol=0.5),
          d["isclose_broadcast"])
    check(torch.allclose(x, y), d["allclose"])
    check(x.allclose(x), d["allclose_self"])
    for op in ("eq", "ne", "lt", "le", "gt", "ge"):
        check(getattr(torch, op)(x, y), d[op])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_any_all_isin(path):
    d = np.load(path)
    kw = base_of(d)
    x, y = from_codes(d["x"], kw), from_codes(d["y"], kw)
    for op in ("any", "all"):
        for dim in (0, 1):
            check(getattr(torch, op)(x, dim=dim), d[f"{op}_dim{dim}"])
            check(getattr(x, op)(dim=dim, keepdim=True),
                  d[f"{op}_dim{dim}_keep"])
    check(torch.isin(x, y), d["isin"])
    check(torch.isin(x, y, invert=True), d["isin_invert"])
    check(x.isin(y, invert=True), d["isin_invert"])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_sort_argsort_kthvalue(path):
    d = np.load(path)
    kw = base_of(d)
    x = from_codes(d["x"], kw)
    for dim in (0, 1, -1):
        for desc in (0, 1):
            values, indices = torch.sort(x, dim=dim, descending=bool(desc),
                                         stable=True)
            assert isinstance(values, lns.LNSTensor)
            check(codes(values), d[f"sort_dim{dim}_desc{desc}_values"])
            check(indices, d[f"sort_dim{dim}_desc{desc}_indices"])
            check(x.argsort(dim=dim, descending=bool(desc), stable=True),
                  d[f"argsort_dim{dim}_desc{desc}"])
    for k in (1, 2, 4):
        values, indices = torch.kthvalue(x, k, dim=0)
        check(codes(values), d[f"kthvalue_k{k}_dim0_values"])
        check(indices, d[f"kthvalue_k{k}_dim0_indices"])
        values, indices = x.kthvalue(k, dim=1, keepdim=True)
        check(codes(values), d[f"kthvalue_k{k}_dim1_keep_values"])
        check(indices, d[f"kthvalue_k{k}_dim1_keep_indices"])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_kthvalue_gradient(path):
    d = np.load(path)
    kw = base_of(d)
    x = from_codes(d["x"], kw).requires_grad_()
    values, _ = torch.kthvalue(x, 3, dim=1)
    values.backward(from_codes(d["kthvalue_k3_dim1_upstream"], kw))
    check(codes(x.grad), d["kthvalue_k3_dim1_grad"])


@pytest.mark.parametrize("path", TIES, ids=lambda p: p.stem)
def test_ties_come_out_as_in_the_reference(path):
    """Equal values (and the two zero codes): stable and unstable sorts
    and kthvalue pick the reference's indices."""
    d = np.load(path)
    x = from_codes(d["x"], {"f": int(d["f"])})
    for stable in (0, 1):
        for desc in (0, 1):
            values, indices = torch.sort(x, dim=1, descending=bool(desc),
                                         stable=bool(stable))
            name = f"stable{stable}_desc{desc}"
            check(codes(values), d[f"sort_{name}_values"])
            check(indices, d[f"sort_{name}_indices"])
            check(torch.argsort(x, dim=1, descending=bool(desc),
                                stable=bool(stable)), d[f"argsort_{name}"])
    for k in (1, 2, 3, 4):
        values, indices = torch.kthvalue(x, k, dim=1)
        check(codes(values), d[f"kthvalue_k{k}_values"])
        check(indices, d[f"kthvalue_k{k}_indices"])


# -- semantics against float torch ------------------------------------------

VALUES = torch.tensor([[3.0, -1.5, 0.0, 2.25], [-4.0, 0.5, 7.0, -0.125]],
                      dtype=torch.float64)


def test_orderings_agree_with_float_torch():
    x = lns.lnstensor(VALUES, f=16)
    for dim in (0, 1):
        values, indices = torch.sort(x, dim=dim, descending=True)
        expected = torch.sort(VALUES, dim=dim, descending=True)
        assert torch.equal(indices, expected.indices)
        torch.testing.assert_close(values.value, expected.values, rtol=1e-4,
                                   atol=0)
        assert torch.equal(torch.argsort(x, dim=dim),
                           torch.argsort(VALUES, dim=dim))
    values, indices = torch.kthvalue(x, 2, dim=1)
    expected = torch.kthvalue(VALUES, 2, dim=1)
    assert torch.equal(indices, expected.indices)
    assert isinstance(torch.kthvalue(x, 1), torch.return_types.kthvalue)
    assert isinstance(torch.sort(x), torch.return_types.sort)


def test_any_all_over_every_form_of_dim():
    x = lns.lnstensor([[0.0, 1.0], [0.0, 0.0]], f=10)
    nonzero = x.value != 0
    assert torch.any(x).item() and not torch.all(x).item()
    assert torch.any(x, dim=None, keepdim=True).shape == (1, 1)
    # torch 1.13 parses no tuple dim: call the implementation itself.
    assert torch.equal(comparisons.any(x, dim=(0, 1)), torch.tensor(True))
    assert torch.equal(torch.all(x, dim=-1), torch.all(nonzero, dim=-1))
    assert torch.equal(x.any(1, keepdim=True), nonzero.any(1, keepdim=True))
    # Both zero codes are zero.
    neg_zero = lns.lnstensor(torch.tensor([-(2.0 ** 53)]), from_lns=True,
                             f=10)
    assert not torch.any(neg_zero).item()


def test_isclose_in_lns_arithmetic():
    a = torch.tensor([1.0, 100.0, -3.0, 0.0], dtype=torch.float64)
    b = torch.tensor([1.0 + 1e-9, 101.0, 3.0, 1e-9], dtype=torch.float64)
    x = lns.lnstensor(a, f=23)
    assert torch.equal(torch.isclose(x, b), torch.isclose(a, b))
    assert torch.equal(torch.isclose(x, b, rtol=0.02, atol=0.0),
                       torch.isclose(a, b, rtol=0.02, atol=0.0))
    result = torch.allclose(x, x)
    assert torch.is_tensor(result) and result.item() is True


def test_sort_gradient_is_permuted_back():
    x = lns.lnstensor([3.0, -1.0, 2.0], f=10, requires_grad=True)
    values, indices = torch.sort(x)
    upstream = lns.lnstensor([10.0, 20.0, 30.0], f=10)
    values.backward(upstream)
    expected = torch.empty(3, dtype=torch.int64)
    expected[indices] = upstream.codes
    assert torch.equal(x.grad.codes, expected)


def test_out_arguments():
    x = lns.lnstensor([1.0, 0.0, 2.0], f=10)
    out = torch.empty(3, dtype=torch.bool)
    assert torch.lt(x, 1.5, out=out) is out
    assert out.tolist() == [True, True, False]
    indices = torch.empty(3, dtype=torch.int64)
    comparisons.argsort(x, out=indices)
    assert indices.tolist() == [1, 0, 2]
    with pytest.raises(TypeError, match="no out= tensors"):
        torch.sort(x, out=(x, indices))


def test_errors():
    x = lns.lnstensor([[1.0, 2.0]], f=10)
    with pytest.raises(IndexError, match="out of range"):
        torch.kthvalue(x, 1, dim=3)
    with pytest.raises(RuntimeError):
        torch.kthvalue(x, 5, dim=1)
    with pytest.raises(TypeError, match="LNS any takes an LNS tensor"):
        comparisons.any(torch.ones(2))
