"""lamina.lns: the Python LNS functions against the golden vectors."""

import pathlib

import numpy as np
import pytest

from lamina import lns, lns_numpy

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "data" / "lns-golden"


def load(name):
    return np.load(GOLDEN / f"{name}.npz")


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_binary(op):
    d = load(f"{op}_f16")
    got = getattr(lns, op)(d["x"], d["y"], f=16)
    keep = ~d["near_tie"] if "near_tie" in d.files else slice(None)
    assert np.array_equal(got[keep], d["out"][keep])


@pytest.mark.parametrize("op", ["neg", "abs", "sqrt"])
def test_unary(op):
    d = load(f"{op}_f10")
    assert np.array_equal(getattr(lns, op)(d["x"], f=10), d["out"])


def test_encode_decode():
    d = load("encode_f23")
    keep = ~d["near_tie"]
    assert np.array_equal(lns.encode(d["x"])[keep], d["out"][keep])
    d = load("decode_f16")
    keep = ~d["near_limit"]
    np.testing.assert_allclose(lns.decode(d["x"], f=16)[keep], d["out"][keep],
                               rtol=1e-14, atol=0)


def test_sum_and_table_mode():
    d = load("sum_f10_16x48")
    assert np.array_equal(lns.sum(d["x"], axis=-1, f=10), d["out_lastdim"])
    assert np.array_equal(lns.sum(d["x"], f=10), d["out_all"])
    assert np.array_equal(lns.sum(d["x"], axis=1, f=10, sbdb="table"),
                          d["out_lastdim"])


def test_linear_and_mixed_bases():
    d = load("linear_f10_b2_m5_k17_n6")
    assert np.array_equal(lns.linear(d["x"], d["w"], d["b"], f=10), d["out"])
    assert np.array_equal(lns.linear(d["x"], d["w"], f=10), d["out_nobias"])
    d = load("linear_mixed_fx16_fw12_fb12_m4_k24_n5")
    assert np.array_equal(
        lns.linear(d["x"], d["w"], d["b"], f=16, weight_f=12, bias_f=12),
        d["out"])


def test_matmul_is_linear_of_transpose():
    d = load("linear_f10_m8_k64_n16")
    assert np.array_equal(lns.matmul(d["x"], d["w"].T.copy(), f=10),
                          d["out_nobias"])


def test_base_errors():
    with pytest.raises(ValueError, match="f= or b=, not both"):
        lns.neg(np.zeros(3, np.int64), f=10, b=1.5)
    with pytest.raises(ValueError, match="greater than 1"):
        lns.neg(np.zeros(3, np.int64), b=0.5)


@pytest.mark.parametrize("name", ["sum_f10_16x48", "sum_f16_8x33",
                                  "sum_f23_12x64"])
def test_pairwise_sum_is_an_explicit_other_order(name):
    d = load(name)
    f = int(d["f"])
    sequential = lns.sum(d["x"], axis=-1, f=f)
    pairwise = lns.sum(d["x"], axis=-1, f=f, order="pairwise")
    # The NumPy pairwise tree (padding odd levels with zero).
    ones = np.zeros((1, d["x"].shape[-1]), np.int64)
    np.testing.assert_array_equal(
        pairwise, lns_numpy.linear_pairwise(d["x"], ones, f=f)[..., 0])
    # It differs from the reference on exactly the rows the golden file
    # names, and the default stays the reference's order.
    assert int((pairwise != sequential).sum()) == \
        int(d["rows_where_pairwise_order_differs"])
    np.testing.assert_array_equal(sequential, d["out_lastdim"])
    with pytest.raises(ValueError, match="order must be"):
        lns.sum(d["x"], f=f, order="tree")


def test_base_f_is_validated():
    """f is a whole number of fractional bits in [0, 52]: 10.5 is not
    truncated, -1 is not wrapped to 4294967295."""
    x = np.zeros(3, np.int64)
    for bad in (10.5, "10", True):
        with pytest.raises(ValueError, match=r"must be an integer, got "
                           + repr(bad).replace(".", r"\.")):
            lns.neg(x, f=bad)
    for bad in (-1, 53):
        with pytest.raises(ValueError, match=rf"must be in \[0, 52\], got "
                           rf"{bad}$"):
            lns.neg(x, f=bad)
    assert np.array_equal(lns.neg(x, f=np.int64(10)), lns.neg(x, f=10))
    with pytest.raises(ValueError, match="finite number greater than 1"):
        lns.neg(x, b=float("inf"))


def test_sum_axis_is_validated_as_numpy_does():
    codes = lns.encode(np.arange(1.0, 7.0).reshape(2, 3), f=10)
    for axis in (5, -3, (0, 2)):
        with pytest.raises(np.AxisError):
            lns.sum(codes, axis=axis, f=10)
        with pytest.raises(np.AxisError):
            np.sum(np.zeros((2, 3)), axis=axis)
    with pytest.raises(ValueError, match="duplicate value in 'axis'"):
        lns.sum(codes, axis=(1, -1), f=10)
    with pytest.raises(TypeError, match="axis must be an integer"):
        lns.sum(codes, axis=1.0, f=10)
    # Negative axes within range are NumPy's.
    assert np.array_equal(lns.sum(codes, axis=-1, f=10),
                          lns.sum(codes, axis=1, f=10))


def test_non_finite_numbers_have_no_code_in_either_path():
    for value in (np.nan, np.inf, -np.inf):
        x = np.array([1.0, value, 2.0])
        with pytest.raises(ValueError, match=r"cannot encode .* \(at index "
                           r"\(1,\)\) in LNS: only finite numbers"):
            lns.encode(x, f=10)
        with pytest.raises(ValueError, match="only finite numbers"):
            lns_numpy.encode(x, 10)


def test_compiled_encode_gives_non_finite_numbers_documented_codes(
        tmp_path):
    # Inside a program nothing raises: NaN → the zero code, ±inf → the
    # largest code of its sign (lns.encode's description, docs/lns.md).
    from lamina.tools import run_ir
    ir = """func.func @main(%x: tensor<4xf64>) -> tensor<4x!lns.num<f = 10>> {
  %0 = lns.encode %x : tensor<4xf64> -> tensor<4x!lns.num<f = 10>>
  return %0 : tensor<4x!lns.num<f = 10>>
}"""
    x = np.array([np.nan, np.inf, -np.inf, 2.0])
    (codes,) = run_ir(ir, [x], tmp_path)
    largest = (1 << 63) - 2
    assert codes.tolist() == [lns_numpy.ZERO, largest, largest | 1,
                              int(lns_numpy.encode(np.array([2.0]), 10)[0])]


def test_division_by_zero_raises():
    x = lns.encode(np.array([[1.0, 2.0], [3.0, 4.0]]), f=10)
    y = lns.encode(np.array([[1.0, 0.0], [2.0, 5.0]]), f=10)
    with pytest.raises(ZeroDivisionError, match=r"divisor is zero at index "
                       r"\(0, 1\)"):
        lns.div(x, y, f=10)
    ones = lns.encode(np.ones((2, 2)), f=10)
    assert np.array_equal(lns.div(x, ones, f=10), x)
