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
