"""lamina.lns.dispatch: the registry of LNS implementations (keys,
defaults, overrides, code-level operations) and of sbdb functions."""

import numpy as np
import pytest
import torch

from lamina import lns
from lamina.lns import dispatch


@pytest.fixture
def restore_add():
    """Keeps the registry of torch.add as it was."""
    entries = dict(dispatch._IMPLEMENTATIONS[torch.add])
    default = dispatch.get_default_implementation_key(torch.add)
    yield
    dispatch._IMPLEMENTATIONS[torch.add] = entries
    dispatch.set_default_implementation(torch.add, default)


def test_lamina_implementations_are_the_default_key():
    for func in (torch.add, torch.matmul, torch.sum, torch.eq, torch.pow):
        assert dispatch.get_default_implementation_key(func) == "default"
    implementation, operation = dispatch.get_implementation(torch.add,
                                                            "default")
    assert callable(implementation) and callable(operation)


def test_a_registered_implementation_serves_inside_an_override(restore_add):
    calls = []

    @dispatch.implements(torch.add, None, key="float")
    def float_add(x, y, *, alpha=1, out=None):
        calls.append((x, y))
        return lns.lnstensor(x.value + alpha * y.value, b=x.lns_base)

    assert dispatch.get_implementation(torch.add, "float")[0] is float_add
    x = lns.lnstensor([1.0, 2.0], f=10)
    with dispatch.override_implementation(torch.add, "float"):
        assert dispatch.get_default_implementation_key(torch.add) == "float"
        x + x
    assert len(calls) == 1
    assert dispatch.get_default_implementation_key(torch.add) == "default"
    x + x
    assert len(calls) == 1


def test_default_true_and_replacing_a_key(restore_add):
    def first(x, y, **kw):
        return "first"

    def second(x, y, **kw):
        return "second"

    dispatch.implements(torch.add, None, key="mine", default=True)(first)
    x = lns.lnstensor([1.0], f=10)
    assert torch.add(x, x) == "first"
    dispatch.implements(torch.add, None, key="mine")(second)
    assert torch.add(x, x) == "second"
    dispatch.set_default_implementation(torch.add, "default")
    assert isinstance(torch.add(x, x), lns.LNSTensor)


def test_key_defaults_to_the_function_name(restore_add):
    @dispatch.implements(torch.add, None)
    def my_add(x, y, **kw):
        return None

    assert dispatch.get_implementation(torch.add, "my_add")[0] is my_add


def test_apply_lns_op_runs_code_level_operations():
    x = lns.lnstensor([1.0, -2.0, 3.0], f=23)
    y = lns.lnstensor([4.0, 5.0, 0.0], f=23)
    for func, args in [
            (torch.add, (x.lns, y.lns, x.base)),
            (torch.sub, (x.lns, y.lns, x.base)),
            (torch.mul, (x.lns, y.lns)),
            (torch.neg, (x.lns,)),
            (torch.abs, (x.lns,)),
            (torch.maximum, (x.lns, y.lns, x.base))]:
        got = dispatch.apply_lns_op(func, *args)
        assert torch.equal(got, func(x, y).lns if len(args) > 1
                           and func is not torch.neg else func(x).lns)
    total = dispatch.apply_lns_op(torch.sum, x.lns, x.base, dim=0,
                                  keepdim=True)
    assert torch.equal(total, torch.sum(x, dim=0, keepdim=True).lns)
    assert torch.equal(dispatch.apply_lns_op(torch.pow, x.lns, 3, x.base),
                       (x ** 3).lns)
    assert torch.equal(dispatch.apply_lns_op(torch.lt, x.lns, y.lns),
                       torch.lt(x, y))


def test_override_restores_a_missing_default():
    func = torch.special.expit

    @dispatch.implements(func, None, key="only")
    def only(x):
        return x

    try:
        with dispatch.override_implementation(func, "only"):
            assert dispatch.get_default_implementation_key(func) == "only"
        with pytest.raises(ValueError, match="no default"):
            dispatch.get_default_implementation_key(func)
    finally:
        del dispatch._IMPLEMENTATIONS[func]


def test_errors():
    with pytest.raises(ValueError, match="under the key 'nonexistent'"):
        dispatch.get_implementation(torch.add, "nonexistent")
    with pytest.raises(ValueError, match="under the key 'nonexistent'"):
        dispatch.set_default_implementation(torch.add, "nonexistent")
    with pytest.raises(ValueError, match="no LNS implementation is "
                       "registered for lgamma"):
        dispatch.get_default_implementation_key(torch.lgamma)
    with pytest.raises(TypeError, match="lgamma is not an operation Lamina "
                       "implements"):
        torch.lgamma(lns.lnstensor([1.0], f=10))
    with pytest.raises(TypeError, match="no code-level operation"):
        with dispatch.override_implementation(torch.add, "default"):
            dispatch.implements(torch.add, None, key="bare")(lambda *a: a)
            with dispatch.override_implementation(torch.add, "bare"):
                dispatch.apply_lns_op(torch.add, 1, 2, 3)
    del dispatch._IMPLEMENTATIONS[torch.add]["bare"]


def test_sbdb_registry():
    z = torch.tensor([0.0, -2.0, -1000.0, -20.0], dtype=torch.float64)
    s = torch.tensor([0.0, 0.0, 1.0, 1.0], dtype=torch.float64)
    base = torch.tensor(2.0 ** (2.0 ** -10), dtype=torch.float64)
    got = dispatch.sbdb(z, s, base)
    # sbdb is the even increment add(x, y) - max(x, y) on codes.
    x = np.array([0, 0, 1000, 21], np.int64) * 2
    y = x - np.array([0, 2, 1000, 20], np.int64) * 2 + s.numpy().astype(
        np.int64)
    sums = lns.add(x, y, f=10)
    assert np.array_equal(got.numpy().astype(np.int64)[1:],
                          (sums - np.maximum(x, y))[1:])
    with pytest.raises(ValueError, match="already registered"):
        dispatch.implement_sbdb("ideal")(lambda z, s, b: z)
    with pytest.raises(NotImplementedError, match="compiled kernels"):
        dispatch.implement_sbdb("mine", default=True)(lambda z, s, b: z)
    dispatch.implement_sbdb("sketch")(lambda z, s, b: z)
    try:
        assert torch.equal(dispatch.sbdb(z, s, base), got)
    finally:
        del dispatch._SBDB_FUNCTIONS["sketch"]
