"""Table-mode linear layers run on i32 lanes when every code is small and on
the packed i64 codes otherwise: both give the codes of the ideal formula,
and zero codes come back bit for bit."""

import numpy as np

from lamina import lns
from lamina.lns_numpy import ZERO


def test_large_codes_take_the_wide_kernel():
    rng = np.random.default_rng(7)
    f = 10
    x = lns.encode(rng.standard_normal((16, 40)), f=f)
    w = lns.encode(rng.standard_normal((32, 40)), f=f)
    b = lns.encode(rng.standard_normal(32), f=f)
    narrow = lns.linear(x, w, b, f=f, sbdb="table")
    np.testing.assert_array_equal(narrow, lns.linear(x, w, b, f=f))
    # Exponents beyond 2^27 (|code| ≥ 2^28): values near 2^(±2^17).
    huge = x + (1 << 29)
    tiny = w - (1 << 29)
    wide = lns.linear(huge, tiny, b, f=f, sbdb="table")
    np.testing.assert_array_equal(wide, lns.linear(huge, tiny, b, f=f))
    assert np.abs(huge).max() >= 1 << 28


def test_zero_codes_come_back_bit_for_bit():
    f = 10
    x = np.full((4, 16), ZERO, np.int64)
    w = lns.encode(np.ones((16, 16)), f=f)
    # The other zero code, −2^53: returned as given (x + 0 gives the bias).
    b = np.full(16, ZERO - 1, np.int64)
    for mode in ("table", "ideal"):
        out = lns.linear(x, w, b, f=f, sbdb=mode)
        assert (out == ZERO - 1).all(), mode
    b = lns.encode(np.arange(16) - 8.0, f=f)
    out = lns.linear(x, w, b, f=f, sbdb="table")
    np.testing.assert_array_equal(out, b[None, :].repeat(4, axis=0))


def _spec_linear(x, w, b, f):
    # The spec in NumPy: an independent oracle for the compiled kernels.
    from lamina import lns_numpy
    return lns_numpy.linear(x, w, b, f=f)


def test_zeros_and_cancellations_keep_the_rules():
    # Zero factors (a ReLU's zeros), exact cancellations (x·w then x·(−w)
    # over the first half of K: partial sums return to zero) and a row of
    # zeros, on shapes that fill no whole tile (M = 6, N = 19): the
    # kernel's zero region and padding against the spec, bit for bit.
    rng = np.random.default_rng(11)
    f = 10
    x = np.maximum(rng.standard_normal((6, 24)), 0.0)
    w = rng.standard_normal((19, 24))
    w[:, 1:12:2] = -w[:, 0:12:2]
    x[:, 1:12:2] = x[:, 0:12:2]
    x[4] = 0.0
    b = rng.standard_normal(19)
    b[3] = 0.0
    codes = [lns.encode(a, f=f) for a in (x, w, b)]
    table = lns.linear(*codes, f=f, sbdb="table")
    np.testing.assert_array_equal(table, _spec_linear(*codes, f))
    np.testing.assert_array_equal(table, lns.linear(*codes, f=f))
    np.testing.assert_array_equal(table[4], codes[2])  # 0 + b = b
    assert table[4, 3] == ZERO


def test_long_sums_at_f16_take_the_exact_narrow_kernel():
    # At f = 16 the zero region holds only for short sums (each addition
    # may raise a zero sum by 2^17): K = 300 runs on i32 lanes with the
    # zero rules spelled out, and gives the ideal codes.
    rng = np.random.default_rng(12)
    f = 16
    x = lns.encode(np.maximum(rng.standard_normal((5, 300)), 0.0), f=f)
    w = lns.encode(rng.standard_normal((9, 300)), f=f)
    b = lns.encode(rng.standard_normal(9), f=f)
    np.testing.assert_array_equal(lns.linear(x, w, b, f=f, sbdb="table"),
                                  lns.linear(x, w, b, f=f))


def test_codes_between_the_narrow_bounds():
    # |code| in [2^26, 2^28): i32 lanes without the zero region.
    rng = np.random.default_rng(13)
    f = 10
    x = lns.encode(rng.standard_normal((4, 16)), f=f) + (1 << 27)
    w = lns.encode(rng.standard_normal((8, 16)), f=f) - (1 << 26)
    x[0, 3] = ZERO
    np.testing.assert_array_equal(lns.linear(x, w, None, f=f, sbdb="table"),
                                  lns.linear(x, w, None, f=f))
