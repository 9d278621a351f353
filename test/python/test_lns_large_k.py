"""Long dot products (K = 1024, 4096): the compiled sequential order against
the spec in NumPy, and a pairwise order shown to give other codes (which
guards against any reassociation of the K loop)."""

import pathlib

import numpy as np
import pytest

from lamina import lns_numpy
from lamina.tools import run_ir


def num(f):
    return f"!lns.num<f = {f}>"


@pytest.mark.parametrize("k", [1024, 4096])
@pytest.mark.parametrize("f", [10, 16, 23])
def test_large_k(tmp_path, k, f):
    rng = np.random.default_rng(1000 + k + f)
    m, n = 3, 5
    x = lns_numpy.encode(rng.standard_normal((m, k)), f)
    w = lns_numpy.encode(rng.standard_normal((n, k)) / np.sqrt(k), f)
    b = lns_numpy.encode(rng.standard_normal(n), f)
    tx, tw = f"tensor<{m}x{k}x{num(f)}>", f"tensor<{n}x{k}x{num(f)}>"
    tb, ty = f"tensor<{n}x{num(f)}>", f"tensor<{m}x{n}x{num(f)}>"
    ir = f"""func.func @main(%x: {tx}, %w: {tw}, %b: {tb}) -> ({ty}, {ty}) {{
  %0 = lns.linear %x, %w bias %b : {tx}, {tw}, {tb} -> {ty}
  %1 = lns.linear %x, %w : {tx}, {tw} -> {ty}
  return %0, %1 : {ty}, {ty}
}}"""
    with_bias, without_bias = run_ir(ir, [x, w, b], tmp_path)
    sequential = lns_numpy.linear(x, w, f=f)
    assert np.array_equal(without_bias, sequential)
    assert np.array_equal(with_bias, lns_numpy.add(sequential, b, f))
    # A pairwise order would give different codes on these very cases.
    pairwise = lns_numpy.linear_pairwise(x, w, f=f)
    assert (pairwise != sequential).mean() > 0.5


GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "data" / "lns-golden"


@pytest.mark.parametrize("name", ["add_f10", "add_f16", "sub_f16",
                                  "linear_f10_m8_k64_n16",
                                  "linear_f16_m16_k64_n12_wide"])
def test_numpy_oracle_matches_golden(name):
    """The oracle itself reproduces the reference's codes."""
    d = np.load(GOLDEN / f"{name}.npz")
    f = int(d["f"])
    if str(d["op"]) == "linear":
        assert np.array_equal(lns_numpy.linear(d["x"], d["w"], d["b"], f), d["out"])
    else:
        y = d["y"] if str(d["op"]) == "add" else d["y"] ^ 1
        keep = ~d["near_tie"]
        assert np.array_equal(lns_numpy.add(d["x"], y, f)[keep], d["out"][keep])
