"""lamina.Program: compile IR from Python and call it on NumPy arrays."""

import pathlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lamina
from layer_ir import linear_layer

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "data" / "lns-golden"


def test_layer_against_eager_pytorch():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((3, 5, 32)).astype(np.float32)
    w = rng.standard_normal((48, 32)).astype(np.float32)
    b = rng.standard_normal(48).astype(np.float32)
    program = lamina.Program(linear_layer("linear_act", x.shape, 48,
                                          attrs="activation gelu_erf"))
    assert program.inputs == [("f32", [3, 5, 32]), ("f32", [48, 32]),
                              ("f32", [48])]
    prepared = program.prepare([x, w, b])  # weights packed once
    for _ in range(2):
        (y,) = program.run(prepared)
        torch.testing.assert_close(
            torch.from_numpy(y),
            F.gelu(F.linear(*(torch.from_numpy(a) for a in (x, w, b)))))


def test_arguments_are_read_in_place_and_results_are_fresh_arrays():
    """Prepared arguments borrow the caller's arrays (a later change to one
    is seen, and the array is never written); each run's results are new
    arrays that own their memory (they outlive the program and the
    prepared arguments, and no later run writes them)."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 32)).astype(np.float32)
    w = rng.standard_normal((48, 32)).astype(np.float32)
    b = rng.standard_normal(48).astype(np.float32)
    program = lamina.Program(linear_layer("linear", x.shape, 48))
    prepared = program.prepare([x, w, b])
    kept = x.copy()
    (first,) = program.run(prepared)
    np.testing.assert_array_equal(x, kept)
    x *= 2.0  # read in place: the next run sees it
    (second,) = program.run(prepared)
    reference = lambda a: F.linear(*(torch.from_numpy(t) for t in (a, w, b)))
    torch.testing.assert_close(torch.from_numpy(second), reference(x))
    torch.testing.assert_close(torch.from_numpy(first), reference(kept))
    assert not np.shares_memory(first, second)
    assert first.flags.owndata is False and first.base is not None
    del program, prepared
    torch.testing.assert_close(torch.from_numpy(first), reference(kept))


def test_lns_codes_are_golden():
    d = np.load(GOLDEN / "add_f23.npz")
    n = d["x"].shape[0]
    t = f"tensor<{n}x!lns.num<f = 23>>"
    program = lamina.Program(f"""func.func @main(%x: {t}, %y: {t}) -> {t} {{
  %0 = lns.add %x, %y : {t}, {t}
  return %0 : {t}
}}""")
    (out,) = program.run(program.prepare([d["x"], d["y"]]))
    keep = ~d["near_tie"]
    assert np.array_equal(out[keep], d["out"][keep])


def test_errors():
    program = lamina.Program(linear_layer("linear", (4, 8), 16))
    x, w = np.zeros((4, 8), np.float32), np.zeros((16, 8), np.float32)
    b = np.zeros(16, np.float32)
    with pytest.raises(ValueError, match="takes 3 arguments, got 2"):
        program.prepare([x, w])
    with pytest.raises(ValueError, match="must have dtype float32"):
        program.prepare([x.astype(np.float64), w, b])
    with pytest.raises(ValueError, match=r"must be tensor<16x8xf32>, got shape \[8, 16\]"):
        program.prepare([x, w.T.copy(), b])
    with pytest.raises(ValueError, match="cannot parse the program"):
        lamina.Program("func.func @f(")
    with pytest.raises(ValueError, match="no function @nope"):
        lamina.Program(linear_layer("linear", (4, 8), 16), entry="nope")
    with pytest.raises(ValueError, match="bad pipeline"):
        lamina.Program(linear_layer("linear", (4, 8), 16), pipeline="no-such")


def test_values_too_large_for_memory_are_errors():
    """A signature or a temporary that cannot be allocated is a
    lamina.AllocationError (a MemoryError) naming it when the program is
    compiled, not a crash when it runs; LNS numbers count as their 8-byte
    codes."""
    huge = "tensor<4611686018427387904x8xf32>"
    with pytest.raises(lamina.AllocationError, match=r"argument 0 of type tensor<4611686"
                       r"018427387904x8xf32>: its size in bytes does not fit"):
        lamina.Program(f"func.func @main(%x: {huge}) -> {huge} {{\n"
                       f"  return %x : {huge}\n}}\n", "main",
                       "lamina-cpu-pipeline")
    big = "tensor<8x1000000x1000000xf32>"
    lns = "tensor<4611686018427387904x!lns.num<f = 10>>"
    with pytest.raises(MemoryError, match=r"argument 0 of type tensor<"
                       r"4611686018427387904x!lns.num<f = 10>>: its size"):
        lamina.Program(f"func.func @main(%x: {lns}) -> {lns} {{\n"
                       f"  %y = lns.neg %x : {lns}\n"
                       f"  return %y : {lns}\n}}\n", "main",
                       "lamina-cpu-pipeline")
    with pytest.raises(lamina.AllocationError, match=r"the result of 'tensor.empty' at "
                       r".* needs 29802.3 GiB, more than this machine's"):
        lamina.Program(
            "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            "  %z = arith.constant 0.0 : f32\n"
            f"  %e = tensor.empty() : {big}\n"
            f"  %f = linalg.fill ins(%z : f32) outs(%e : {big}) -> {big}\n"
            "  return %x : tensor<4xf32>\n}\n", "main", "lamina-cpu-pipeline")



def test_jit_writes_perf_dumps_only_when_asked(tmp_path):
    """LLVM's perf listener writes a file of the JIT's code per program
    (jit-<pid>.dump, by default under /tmp/.debug): only a run with
    JITDUMPDIR set (a profiling run) gets one, never a plain run."""
    import os
    import subprocess
    from lamina.tools import tool
    ir = tmp_path / "layer.mlir"
    ir.write_text(linear_layer("linear", (4, 32), 16))
    env = {k: v for k, v in os.environ.items() if k != "JITDUMPDIR"}
    env["HOME"] = str(tmp_path / "home")

    def dumps_of_a_run(extra_env):
        process = subprocess.Popen(
            [tool("lamina-run"), str(ir), "--random-inputs"], cwd=tmp_path,
            env={**env, **extra_env}, stdout=subprocess.DEVNULL)
        assert process.wait() == 0
        name = f"jit-{process.pid}.dump"
        return [path for root in (tmp_path, pathlib.Path("/tmp/.debug"))
                for path in root.rglob(name)]

    assert dumps_of_a_run({}) == []
    profile = tmp_path / "profile"
    assert [p.is_relative_to(profile)
            for p in dumps_of_a_run({"JITDUMPDIR": str(profile)})] == [True]
