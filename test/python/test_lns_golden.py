"""Every golden LNS file (test/data/lns-golden, produced by the xlnstorch
reference; see its README) through the compiled CPU code: packed int64 codes
must be equal, bit for bit."""

import pathlib

import numpy as np
import pytest

from lamina.tools import run_ir

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "data" / "lns-golden"
FILES = sorted(GOLDEN.glob("*.npz"))
assert len(FILES) == 45, f"expected the 45 golden files in {GOLDEN}"


def num(f):
    return f"!lns.num<f = {f}>"


def tensor(shape, element):
    dims = "".join(f"{s}x" for s in shape)
    return f"tensor<{dims}{element}>"


def check_codes(got, expected, keep=None):
    if keep is None:
        keep = np.ones(expected.shape, bool)
    mismatches = np.flatnonzero((got != expected) & keep)
    assert mismatches.size == 0, (
        f"{mismatches.size} codes differ, first at {mismatches[:5]}: "
        f"got {got.ravel()[mismatches[:5]]}, expected "
        f"{expected.ravel()[mismatches[:5]]}")


def elementwise(tmp_path, d, op, f, mode=""):
    n = d["x"].shape[0]
    t = tensor((n,), num(f))
    if op in ("neg", "abs", "sqrt"):
        ir = f"""func.func @main(%x: {t}) -> {t} {{
  %0 = lns.{op} %x : {t}
  return %0 : {t}
}}"""
        return run_ir(ir, [d["x"]], tmp_path)[0]
    ir = f"""func.func @main(%x: {t}, %y: {t}) -> {t} {{
  %0 = lns.{op} %x, %y {mode}: {t}, {t}
  return %0 : {t}
}}"""
    return run_ir(ir, [d["x"], d["y"]], tmp_path)[0]


def linear_ir(dialect, x_shape, w_shape, fx, fw, fb, bias, mode=""):
    tx = tensor(x_shape, num(fx))
    tw = tensor(w_shape, num(fw))
    tb = tensor(w_shape[:1], num(fb))
    ty = tensor(tuple(x_shape[:-1]) + (w_shape[0],), num(fx))
    args = f"%x: {tx}, %w: {tw}" + (f", %b: {tb}" if bias else "")
    if dialect == "lns":
        body = (f"lns.linear %x, %w{' bias %b' if bias else ''} {mode}: {tx}, {tw}"
                f"{', ' + tb if bias else ''} -> {ty}")
    else:
        body = (f'lamina.linear "fc" %x, %w{" bias %b" if bias else ""} : '
                f"({tx}, {tw}{', ' + tb if bias else ''}) -> {ty}")
    return f"""func.func @main({args}) -> {ty} {{
  %0 = {body}
  return %0 : {ty}
}}"""


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_golden(tmp_path, path):
    d = np.load(path, allow_pickle=False)
    op, f = str(d["op"]), int(d["f"])
    if op == "encode":
        n = d["x"].shape[0]
        ir = f"""func.func @main(%x: tensor<{n}xf64>) -> {tensor((n,), num(f))} {{
  %0 = lns.encode %x : tensor<{n}xf64> -> {tensor((n,), num(f))}
  return %0 : {tensor((n,), num(f))}
}}"""
        got = run_ir(ir, [d["x"]], tmp_path)[0]
        # Elements flagged near_tie depend on the last ulp of log: reported.
        check_codes(got, d["out"], ~d["near_tie"])
        ties = d["near_tie"]
        print(f"{path.stem}: {int((got[ties] != d['out'][ties]).sum())} of "
              f"{int(ties.sum())} near-tie codes differ")
    elif op == "decode":
        n = d["x"].shape[0]
        ir = f"""func.func @main(%x: {tensor((n,), num(f))}) -> tensor<{n}xf64> {{
  %0 = lns.decode %x : {tensor((n,), num(f))} -> tensor<{n}xf64>
  return %0 : tensor<{n}xf64>
}}"""
        got = run_ir(ir, [d["x"]], tmp_path)[0]
        keep = ~d["near_limit"]
        np.testing.assert_allclose(got[keep], d["out"][keep], rtol=1e-14, atol=0)
    elif op in ("add", "sub", "mul", "div", "neg", "abs", "sqrt"):
        got = elementwise(tmp_path, d, op, f)
        keep = ~d["near_tie"] if "near_tie" in d.files else None
        check_codes(got, d["out"], keep)
        if op in ("add", "sub") and f <= 16:
            # table mode gives the very same codes.
            table = elementwise(tmp_path / "table", d, op, f, "sbdb table ")
            check_codes(table, d["out"], keep)
    elif op == "sum":
        rows, cols = d["x"].shape
        t = tensor((rows, cols), num(f))
        ir = f"""func.func @main(%x: {t}) -> ({tensor((rows,), num(f))}, tensor<{num(f)}>) {{
  %0 = lns.sum %x dims [1] : {t} -> {tensor((rows,), num(f))}
  %1 = lns.sum %x dims [0, 1] : {t} -> tensor<{num(f)}>
  return %0, %1 : {tensor((rows,), num(f))}, tensor<{num(f)}>
}}"""
        last, whole = run_ir(ir, [d["x"]], tmp_path)
        check_codes(last, d["out_lastdim"])
        check_codes(whole, d["out_all"])
        if f <= 16:
            table_ir = ir.replace("dims [1] :", "dims [1] sbdb table :").replace(
                "dims [0, 1] :", "dims [0, 1] sbdb table :")
            last, whole = run_ir(table_ir, [d["x"]], tmp_path / "table")
            check_codes(last, d["out_lastdim"])
            check_codes(whole, d["out_all"])
    elif op == "linear":
        fx, fw, fb = int(d["f_x"]), int(d["f_w"]), int(d["f_b"])
        for dialect in ("lns", "lamina"):
            for bias in (True, False):
                ir = linear_ir(dialect, d["x"].shape, d["w"].shape, fx, fw, fb,
                               bias)
                inputs = [d["x"], d["w"]] + ([d["b"]] if bias else [])
                got = run_ir(ir, inputs, tmp_path / f"{dialect}{bias}")[0]
                check_codes(got, d["out"] if bias else d["out_nobias"])
        if fx <= 16:
            # The table kernel on AVX2 and on AVX-512 vectors (8 or 16 i32
            # lanes per gather; the JIT splits 512-bit vectors on AVX2).
            ir = linear_ir("lns", d["x"].shape, d["w"].shape, fx, fw, fb, True,
                           "sbdb table ")
            for bits in (256, 512):
                got = run_ir(ir, [d["x"], d["w"], d["b"]],
                             tmp_path / f"table{bits}",
                             pipeline=f"lamina-cpu-pipeline{{vector-bits={bits}}}")[0]
                check_codes(got, d["out"])
    else:
        pytest.fail(f"unknown golden op {op}")


def first_zero_sbdb_row(f):
    """The first z = −i (i ≥ 1) where the ideal sbdb is 0 for both signs,
    in NumPy: the extent of the table."""
    base = 2.0 ** (2.0 ** -f)
    i = 1
    while True:
        sums = 1.0 + np.array([1.0, -1.0]) * base ** -float(i)
        if not np.rint(np.log(np.abs(sums)) / np.log(base)).any():
            return i
        i += 1


@pytest.mark.parametrize("f", [0, 1, 2, 4, 8, 10, 12])
def test_table_equals_ideal_everywhere(tmp_path, f):
    """table mode against ideal for every z of the table and beyond, both
    signs: x = +1 (code 0), y = ±b^e for e = 0 down to past the table. At
    f = 0 the closed-form bound 2·round(log_b(b − 1)) = 0 would miss z = −1,
    where sbdb is +1 or −1."""
    extent = first_zero_sbdb_row(f)
    exponents = np.arange(0, -(extent + 1000), -1, dtype=np.int64)
    y = np.concatenate([exponents * 2, exponents * 2 + 1])
    x = np.zeros_like(y)
    t = tensor(y.shape, num(f))
    results = []
    for mode in ("", "sbdb table "):
        ir = f"""func.func @main(%x: {t}, %y: {t}) -> {t} {{
  %0 = lns.add %x, %y {mode}: {t}, {t}
  return %0 : {t}
}}"""
        results.append(run_ir(ir, [x, y], tmp_path / (mode or "ideal"))[0])
    ideal, table = results
    check_codes(table, ideal)
    # Past the table, sbdb is 0: the result is the larger operand, x.
    assert np.array_equal(ideal[extent:len(exponents)], x[extent:len(exponents)])
