"""The certified fast path of ideal sbdb (LNS linear layers) against the
exact formula: every z of the tables' range for f ≤ 12, both signs, the
spec's hardest tie at f = 23, random z at f = 23 on both lane widths, and
the edges of the piecewise cubics' segments.

An element the bound does not flag is never recomputed, so a wrong bound
shows up as a code that differs from the exact formula's."""

import numpy as np
import pytest

from lamina import Program, lns, lns_numpy
from lamina.lns_numpy import ZERO
from lamina.tools import run_ir


def bias_adds(f, exponents, mode=""):
    """add(±b^e, 1) for each e through a compiled linear layer: K = 1 (the
    product is the accumulator, no sbdb), then the bias add, which takes
    the fast path with z = −|e| (same signs in column 0, opposite in 1)."""
    m = len(exponents)
    t = lambda *s: "tensor<" + "x".join(map(str, s)) + f"x!lns.num<f = {f}>>"
    source = f"""func.func @main(%x: {t(m, 1)}, %w: {t(2, 1)}, %b: {t(2)}) -> {t(m, 2)} {{
  %0 = lns.linear %x, %w bias %b {mode}: {t(m, 1)}, {t(2, 1)}, {t(2)} -> {t(m, 2)}
  return %0 : {t(m, 2)}
}}"""
    x = (np.asarray(exponents, np.int64) * 2).reshape(m, 1)
    w = np.array([[0], [1]], np.int64)        # +1 and −1
    b = np.array([0, 0], np.int64)            # +1
    program = Program(source)
    return program.run(program.prepare([x, w, b]))[0]


@pytest.mark.parametrize("f", [8, 10, 12])
def test_every_z_against_the_exact_table(f):
    # The table holds the exact formula for every z until sbdb is 0.
    base = 2.0 ** (2.0 ** -f)
    last = int(-2 * round(np.log(base - 1.0) / np.log(base)))
    exponents = -np.arange(1, last + 64)      # z = 0 is the cancellation
    fast = bias_adds(f, exponents)
    exact = bias_adds(f, exponents, "sbdb table ")
    np.testing.assert_array_equal(fast, exact)


def exact_adds(f, exponents):
    """The same additions through lns.add, which always evaluates the
    exact formula."""
    x = np.asarray(exponents, np.int64) * 2
    same = lns.add(x, np.zeros_like(x), f=f)
    opposite = lns.add(x | 1, np.zeros_like(x), f=f)
    return np.stack([same, opposite], axis=1)


def test_hardest_known_tie_at_f23():
    # The spec: s = 0, z = −43645691 must give sbdb 2·324178.
    result = bias_adds(23, [-43645691])
    assert result[0, 0] == 648356
    np.testing.assert_array_equal(result, exact_adds(23, [-43645691]))


def test_random_z_at_f23():
    rng = np.random.default_rng(23)
    # z spread over the whole range where sbdb is not 0, denser near 0.
    exponents = -np.unique(np.concatenate([
        rng.integers(1, 2 ** 12, 4000), rng.integers(1, 2 ** 20, 4000),
        rng.integers(1, 2 ** 28, 8000)]))
    np.testing.assert_array_equal(bias_adds(23, exponents),
                                  exact_adds(23, exponents))


def test_random_z_at_f23_on_i64_lanes():
    # One code of 2^30 (at or above 2^29) sends the whole layer to the i64
    # kernel; every other row is the same addition as on i32 lanes.
    rng = np.random.default_rng(64)
    exponents = np.concatenate([
        -rng.integers(1, 2 ** 28, 4000), [2 ** 29]])
    np.testing.assert_array_equal(bias_adds(23, exponents),
                                  exact_adds(23, exponents))


@pytest.mark.parametrize("f", [0, 4, 10, 23, 25])
def test_segment_edges(f):
    # v = −z at and around every octave's and every 16th segment's start
    # (the segment and its midpoint come from the bits of float(v + 1),
    # which rounds up across segment edges from 2^24 on), v = 0 (1 + 1 and
    # the cancellation −1 + 1) and past the last octave.
    starts = [(2 ** j * (256 + i)) // 256 for j in range(31)
              for i in range(0, 256, 16)]
    v = np.unique([s + d for s in starts for d in (-1, 0, 1)] + [0])
    np.testing.assert_array_equal(bias_adds(f, -v), exact_adds(f, -v))


# At f = 23 these v = −z put the cubic's value on the wrong side of a .5
# tie (found by comparing a build without the bound with the exact formula
# over 50 M random v); only the bound's recomputation gets them right.
CUBIC_WRONG_SAME_SIGN = [39795802, 62892078, 72660526, 73092402, 76666592,
                         76735710, 103507969]
CUBIC_WRONG_OPPOSITE_SIGNS = [686813, 6538741, 12133016, 12585125, 13363168,
                              17081978, 17992627, 35152493, 35648806,
                              39957185, 40481724, 47887657, 50361378,
                              50709745, 63455374, 63625277, 72633802,
                              72659629, 72813307, 73079302, 74577692,
                              74998324, 75974183, 76289770, 76596461,
                              76976228, 77165403, 102718157]


@pytest.mark.parametrize("lanes", ["i32", "i64"])
def test_near_ties_the_cubics_alone_would_miss(lanes):
    exponents = [-v for v in CUBIC_WRONG_SAME_SIGN + CUBIC_WRONG_OPPOSITE_SIGNS]
    if lanes == "i64":
        exponents.append(2 ** 29)   # a code of 2^30: the i64 kernel
    np.testing.assert_array_equal(bias_adds(23, exponents),
                                  exact_adds(23, exponents))


def test_extreme_codes_against_the_spec(tmp_path):
    # Codes far outside the i32 range (the i64 kernel), both zero codes and
    # N = 11 (padded to whole vectors), against the spec in NumPy.
    f, m, k, n = 23, 6, 9, 11
    rng = np.random.default_rng(11)
    x = lns_numpy.encode(rng.standard_normal((m, k)), f)
    w = lns_numpy.encode(rng.standard_normal((n, k)), f)
    b = lns_numpy.encode(rng.standard_normal(n), f)
    x[0, 0], x[1, 1], x[2, 2], x[3, 3] = 2 ** 40, -(2 ** 62), ZERO, ZERO ^ 1
    w[4, 4], w[5, 5] = 2 ** 61 + 1, ZERO
    t = lambda *s: "tensor<" + "x".join(map(str, s)) + f"x!lns.num<f = {f}>>"
    ir = f"""func.func @main(%x: {t(m, k)}, %w: {t(n, k)}, %b: {t(n)}) -> {t(m, n)} {{
  %0 = lns.linear %x, %w bias %b : {t(m, k)}, {t(n, k)}, {t(n)} -> {t(m, n)}
  return %0 : {t(m, n)}
}}"""
    [result] = run_ir(ir, [x, w, b], tmp_path)
    np.testing.assert_array_equal(result, lns_numpy.linear(x, w, b, f))


def test_zero_operands_skip_the_fast_path():
    result = bias_adds(23, [ZERO >> 1])
    # 0 + 1 = 1 and (−0) + 1 = 1: the bias's code, no sbdb.
    assert list(result[0]) == [0, 0]
