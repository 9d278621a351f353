#!/usr/bin/env python3
"""Lamina's CPU linear layers against PyTorch and OpenBLAS.

fp32. Each round runs every contender once (separate processes pinned to one
core, or to two for the two-thread table), and the tables report medians over
rounds of per-process medians:

1. linear + bias + GELU(tanh) and linear + bias + dropout (training), one
   thread: Lamina fused (lamina-cpu-pipeline: the epilogue on the register
   tile), Lamina unfused (lamina-cpu-pipeline{fuse-epilogues=false}),
   PyTorch eager with OpenBLAS (LD_LIBRARY_PATH=.../openblas-pthread) and
   bare OpenBLAS sgemm (X·Wᵀ only), the strongest baseline, both on the
   fastest of OpenBLAS's kernel families this CPU runs;
2. the matmul alone (a linear layer without bias), one thread, against
   sgemm;
3. the backward's matmuls as lamina-generate-backward writes them, one
   thread: dX = dY·W (a matmul on W's transpose, packed from W) and
   dW = dYᵀ·X (on the transposes of dY and X, packed from dY and X), every
   call packing its operands again (lamina-run --repack: in training they
   all change every step), against sgemm with the same operand layouts
   (cblas NoTrans/NoTrans and Trans/NoTrans);
4. the fused GELU layer on two threads (lamina-cpu-pipeline{threads=2}),
   at M >= 512 and decoding (M = 16), against one thread and against
   PyTorch on two threads;

plus this machine's measured fp32 FMA peak, streaming read bandwidth and
the ceiling of the generated register tile on L1-resident operands.

usage: bench/cpu_linear.py [--rounds 3] [--output bench/results/cpu_linear.md]
"""

import argparse
import datetime
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

from machine import OPENBLAS_DIR, cpu_model, openblas_env, openblas_kernels

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The lamina package lives in the build tree, next to its extension.
sys.path.insert(0, str(pathlib.Path(os.environ.get("LAMINA_BUILD_DIR",
                                                   ROOT / "build")) / "python"))
from lamina.tools import tool  # noqa: E402

SHAPES = [(1, 4096, 4096), (8, 4096, 4096), (16, 4096, 4096), (512, 1024, 4096),
          (2048, 1024, 4096), (2048, 4096, 1024)]
P_DROP = 0.1
# The matmul alone: M × (K, N), the CPU issue's grid.
MATMUL_SHAPES = [(m, k, n) for m in (64, 512, 2048)
                 for k, n in ((1024, 4096), (4096, 1024), (4096, 4096))]
# The backward of the GPT-2 MLP's layers: (tokens, K, N) of y = x·Wᵀ.
BACKWARD_SHAPES = [(t, k, n) for t in (512, 2048)
                   for k, n in ((1024, 4096), (4096, 1024))]
# The two-thread table: the fused GELU layer at M >= 512, and decoding.
THREADED_SHAPES = [(16, 4096, 4096), (512, 1024, 4096), (2048, 1024, 4096),
                   (2048, 4096, 1024)]

LAYER = {
    "gelu": ('lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh', ""),
    "dropout": ('lamina.linear_dropout "fc" %x, %w bias %b dropout '
                f'<p = {P_DROP}, training> seed %s', ", %s: i64"),
}

TORCH_SNIPPET = """
import statistics, sys, time, torch, torch.nn.functional as F
m, k, n, repeats, kind = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
torch.set_num_threads(int(sys.argv[6]))
x, w, b = torch.rand(m, k) * 2 - 1, torch.rand(n, k) * 2 - 1, torch.rand(n) * 2 - 1
def step():
    y = F.linear(x, w, b)
    return F.gelu(y, approximate="tanh") if kind == "gelu" else F.dropout(y, %r, True)
step()
times = []
with torch.no_grad():
    for _ in range(repeats):
        t = time.perf_counter(); step(); times.append(time.perf_counter() - t)
print(statistics.median(times))
""" % P_DROP


def pinned(args, threads=1):
    taskset = shutil.which("taskset")
    if not taskset or os.cpu_count() <= 1:
        return args
    cores = "1" if threads == 1 else f"0-{threads - 1}"
    return [taskset, "-c", cores] + args


def run(args, env=None, threads=1):
    completed = subprocess.run(pinned(args, threads), capture_output=True,
                               text=True, env=env)
    if completed.returncode != 0:
        sys.exit(f"failed: {' '.join(args)}\n{completed.stdout}{completed.stderr}")
    return completed.stdout


def compile_probe(work, name, extra=()):
    binary = work / name
    subprocess.run(["clang-22", "-O3", "-march=native", "-o", str(binary),
                    str(ROOT / "bench" / "probes" / f"{name}.c"), *extra],
                   check=True)
    return binary


def program(work, kind, m, k, n):
    op, seed_arg = LAYER[kind]
    seed_type = ", i64" if seed_arg else ""
    text = f"""
func.func @main(%x: tensor<{m}x{k}xf32>, %w: tensor<{n}x{k}xf32>, %b: tensor<{n}xf32>{seed_arg}) -> tensor<{m}x{n}xf32> {{
  %y = {op} : (tensor<{m}x{k}xf32>, tensor<{n}x{k}xf32>, tensor<{n}xf32>{seed_type}) -> tensor<{m}x{n}xf32>
  return %y : tensor<{m}x{n}xf32>
}}
"""
    path = work / f"{kind}_{m}_{k}_{n}.mlir"
    path.write_text(text)
    return path


def matmul_program(work, name, args, body, result):
    """A function of `args` (name → type) returning `result` from `body`."""
    signature = ", ".join(f"%{a}: {t}" for a, t in args)
    path = work / f"{name}.mlir"
    path.write_text(f"""
func.func @main({signature}) -> {result} {{
{body}
  return %y : {result}
}}
""")
    return path


def forward_matmul(work, m, k, n):
    x, w, y = (f"tensor<{m}x{k}xf32>", f"tensor<{n}x{k}xf32>",
               f"tensor<{m}x{n}xf32>")
    return matmul_program(
        work, f"matmul_{m}_{k}_{n}", [("x", x), ("w", w)],
        f'  %y = lamina.linear "fc" %x, %w : ({x}, {w}) -> {y}', y)


def transpose(name, source, rows, cols, element="f32"):
    """`%name` = the [cols, rows] transpose of `%source` [rows, cols]."""
    return (f"  %{name}_init = tensor.empty() : tensor<{cols}x{rows}x{element}>\n"
            f"  %{name} = linalg.transpose ins(%{source} : "
            f"tensor<{rows}x{cols}x{element}>) outs(%{name}_init : "
            f"tensor<{cols}x{rows}x{element}>) permutation = [1, 0]\n")


def backward_dx(work, t, k, n, element="f32"):
    """dX [t, k] = dY [t, n] · W [n, k], as the backward writes it (f32
    products of `element` operands)."""
    dy, w, dx = (f"tensor<{t}x{n}x{element}>", f"tensor<{n}x{k}x{element}>",
                 f"tensor<{t}x{k}xf32>")
    body = transpose("wt", "w", n, k, element) + (
        f'  %y = lamina.matmul "fc" %dy, %wt : ({dy}, '
        f"tensor<{k}x{n}x{element}>) -> {dx}")
    return matmul_program(work, f"dx_{element}_{t}_{k}_{n}",
                          [("dy", dy), ("w", w)], body, dx)


def backward_dw(work, t, k, n, element="f32"):
    """dW [n, k] = dY [t, n]ᵀ · X [t, k], as the backward writes it (f32
    products of `element` operands)."""
    dy, x, dw = (f"tensor<{t}x{n}x{element}>", f"tensor<{t}x{k}x{element}>",
                 f"tensor<{n}x{k}xf32>")
    body = transpose("dyt", "dy", t, n, element) + transpose(
        "xt", "x", t, k, element) + (
        f'  %y = lamina.matmul "fc" %dyt, %xt : (tensor<{n}x{t}x{element}>, '
        f"tensor<{k}x{t}x{element}>) -> {dw}")
    return matmul_program(work, f"dw_{element}_{t}_{k}_{n}",
                          [("dy", dy), ("x", x)], body, dw)


def repeats_for(flops):
    """Timed calls per process: about 1.5 s of work at 50 GFLOP/s, and at
    least 8, so that the median is past the first calls (a process still
    faults in fresh pages for its results during its first few: the
    backward's dW at 2048 tokens ran 180 ms in its first calls, 125 after)."""
    return max(8, min(50, int(1.5 / (flops / 50e9))))


def lamina_time(path, repeats, pipeline, threads=1, repack=False):
    """`repack`: every call packs its packed operands again. The compile
    cache is off: every round compiles (the compile column's time)."""
    out = run([tool("lamina-run"), str(path), "--random-inputs", "--seed=1",
               f"--repeat={repeats}", f"--pipeline={pipeline}"] +
              (["--repack"] if repack else []),
              env=dict(os.environ, LAMINA_CACHE="0"), threads=threads)
    median = float(re.search(r"median ([0-9.]+) ms", out).group(1)) / 1e3
    compile_ms = float(re.search(r"compilation .*: ([0-9.]+) ms", out).group(1))
    return median, compile_ms


def measure_fused(work, shapes, rounds, sgemm, blas_env):
    rows = []
    for (m, k, n) in shapes:
        flops = 2.0 * m * k * n
        repeats = repeats_for(flops)
        for kind in LAYER:
            path = program(work, kind, m, k, n)
            samples = {key: [] for key in
                       ("fused", "unfused", "torch", "sgemm", "compile")}
            for _ in range(rounds):
                t, c = lamina_time(path, repeats, "lamina-cpu-pipeline")
                samples["fused"].append(t)
                samples["compile"].append(c)
                samples["unfused"].append(lamina_time(
                    path, repeats,
                    "lamina-cpu-pipeline{fuse-epilogues=false}")[0])
                samples["torch"].append(float(run(
                    [sys.executable, "-c", TORCH_SNIPPET, str(m), str(k),
                     str(n), str(repeats), kind, "1"], env=blas_env)))
                samples["sgemm"].append(float(run(
                    [str(sgemm), str(m), str(k), str(n), str(repeats)],
                    env=blas_env)))
            med = {key: statistics.median(v) for key, v in samples.items()}
            rows.append(dict(m=m, k=k, n=n, kind=kind, flops=flops, **med))
            yield rows[-1]


def measure_matmuls(cases, rounds, sgemm, blas_env, repack=False):
    """cases: (label, path, gemm m, k, n, sgemm layout) → medians of Lamina
    and of sgemm on the same GEMM; `repack`: Lamina packs its operands in
    every call."""
    for label, path, (m, k, n), layout in cases:
        flops = 2.0 * m * k * n
        repeats = repeats_for(flops)
        lamina, blas, compile_ms = [], [], []
        for _ in range(rounds):
            t, c = lamina_time(path, repeats, "lamina-cpu-pipeline",
                               repack=repack)
            lamina.append(t)
            compile_ms.append(c)
            blas.append(float(run([str(sgemm), str(m), str(k), str(n),
                                   str(repeats), layout], env=blas_env)))
        yield dict(label=label, flops=flops, lamina=statistics.median(lamina),
                   sgemm=statistics.median(blas),
                   compile=statistics.median(compile_ms))


def measure_threads(work, shapes, rounds, blas_env):
    two = dict(blas_env, OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="2")
    for (m, k, n) in shapes:
        flops = 2.0 * m * k * n
        repeats = repeats_for(flops)
        path = program(work, "gelu", m, k, n)
        samples = {key: [] for key in ("one", "two", "torch1", "torch2")}
        for _ in range(rounds):
            samples["one"].append(
                lamina_time(path, repeats, "lamina-cpu-pipeline")[0])
            samples["two"].append(lamina_time(
                path, repeats, "lamina-cpu-pipeline{threads=2}", threads=2)[0])
            for key, env, threads in (("torch1", blas_env, 1),
                                      ("torch2", two, 2)):
                samples[key].append(float(run(
                    [sys.executable, "-c", TORCH_SNIPPET, str(m), str(k),
                     str(n), str(repeats), "gelu", str(threads)], env=env,
                    threads=threads)))
        yield dict(m=m, k=k, n=n, flops=flops,
                   **{key: statistics.median(v) for key, v in samples.items()})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", default=str(ROOT / "bench" / "results" /
                                                "cpu_linear.md"))
    parser.add_argument("--shapes", default="all",
                        help="comma-separated indices into the fused layers' "
                             "shape list")
    parser.add_argument("--bf16", action="store_true",
                        help="also bf16 matmuls (bench/bf16_linear.py's "
                             "sections), in the same run")
    args = parser.parse_args()
    shapes = SHAPES if args.shapes == "all" else [
        SHAPES[int(i)] for i in args.shapes.split(",")]

    blas_env = openblas_env(os.environ)
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        peak_text, vector_bits = run(
            [str(compile_probe(work, "fma_peak"))]).split()[:2]
        peak = float(peak_text)
        bandwidth = float(run([str(compile_probe(work, "stream_read"))]).split()[0])
        tile_ceiling = float(
            run([str(compile_probe(work, "microkernel"))]).split()[0])
        sgemm = compile_probe(work, "sgemm", (f"-L{OPENBLAS_DIR}",
                                              "-l:libopenblas.so.0",
                                              f"-Wl,-rpath,{OPENBLAS_DIR}"))
        fused = []
        for row in measure_fused(work, shapes, args.rounds, sgemm, blas_env):
            fused.append(row)
            print(format_row(row, peak, bandwidth), flush=True)
        matmuls = []
        cases = [(f"{m}×{k}×{n}", forward_matmul(work, m, k, n), (m, k, n),
                  "nt") for m, k, n in MATMUL_SHAPES]
        for row in measure_matmuls(cases, args.rounds, sgemm, blas_env):
            matmuls.append(row)
            print(format_matmul(row, peak), flush=True)
        backward = []
        cases = []
        for t, k, n in BACKWARD_SHAPES:
            cases.append((f"dX {t}×{k} = dY {t}×{n} · W",
                          backward_dx(work, t, k, n), (t, n, k), "nn"))
            cases.append((f"dW {n}×{k} = dYᵀ · X ({t} tokens)",
                          backward_dw(work, t, k, n), (n, t, k), "tn"))
        for row in measure_matmuls(cases, args.rounds, sgemm, blas_env,
                                   repack=True):
            backward.append(row)
            print(format_matmul(row, peak), flush=True)
        threaded = []
        for row in measure_threads(work, THREADED_SHAPES, args.rounds,
                                   blas_env):
            threaded.append(row)
            print(format_threads(row), flush=True)
        bf16 = ""
        if args.bf16:
            import bf16_linear  # its runner is this module
            bf16 = "\n" + bf16_linear.sections(work, args.rounds, blas_env)

    report = render(fused, matmuls, backward, threaded, peak, bandwidth, args,
                    vector_bits, tile_ceiling,
                    openblas_kernels(blas_env)) + bf16
    pathlib.Path(args.output).write_text(report)
    print(f"\nwrote {args.output}")


def format_row(r, peak, bandwidth):
    gflops = r["flops"] / r["fused"] / 1e9
    cells = [f"{r['m']}×{r['k']}×{r['n']}", r["kind"],
             f"{r['fused'] * 1e3:.3f}", f"{gflops:.1f}",
             f"{r['unfused'] * 1e3:.3f}", f"{r['torch'] * 1e3:.3f}",
             f"{r['sgemm'] * 1e3:.3f}",
             f"{r['torch'] / r['fused']:.2f}×", f"{r['sgemm'] / r['fused']:.2f}×",
             f"{r['unfused'] / r['fused']:.2f}×"]
    if r["m"] <= 16:
        weight_gbs = r["n"] * r["k"] * 4 / r["fused"] / 1e9
        cells.append(f"{weight_gbs:.1f} GB/s = {weight_gbs / bandwidth:.0%} of read bw")
    else:
        cells.append(f"{gflops / peak:.0%} of peak")
    cells.append(f"{r['compile']:.0f}")
    return "| " + " | ".join(cells) + " |"


def format_matmul(r, peak):
    gflops = r["flops"] / r["lamina"] / 1e9
    cells = [r["label"], f"{r['lamina'] * 1e3:.3f}", f"{gflops:.1f}",
             f"{gflops / peak:.0%}", f"{r['sgemm'] * 1e3:.3f}",
             f"{r['flops'] / r['sgemm'] / 1e9:.1f}",
             f"{r['sgemm'] / r['lamina']:.2f}×", f"{r['compile']:.0f}"]
    return "| " + " | ".join(cells) + " |"


def format_threads(r):
    cells = [f"{r['m']}×{r['k']}×{r['n']}", f"{r['one'] * 1e3:.3f}",
             f"{r['two'] * 1e3:.3f}", f"{r['one'] / r['two']:.2f}×",
             f"{r['flops'] / r['two'] / 1e9:.1f}",
             f"{r['torch1'] * 1e3:.3f}", f"{r['torch2'] * 1e3:.3f}",
             f"{r['torch1'] / r['torch2']:.2f}×",
             f"{r['torch2'] / r['two']:.2f}×"]
    return "| " + " | ".join(cells) + " |"


def render(fused, matmuls, backward, threaded, peak, bandwidth, args,
           vector_bits, tile_ceiling, kernels):
    head = ("| M×K×N | epilogue | Lamina fused ms | GFLOP/s | Lamina unfused ms "
            "| PyTorch+OpenBLAS ms | OpenBLAS sgemm ms | vs PyTorch | vs sgemm "
            "| unfused/fused | roofline | compile ms |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    body = "\n".join(format_row(r, peak, bandwidth) for r in fused)
    matmul_head = ("| {what} | Lamina ms | GFLOP/s | of peak | OpenBLAS sgemm "
                   "ms | sgemm GFLOP/s | vs sgemm | compile ms |\n"
                   "|---|---|---|---|---|---|---|---|\n")
    matmul_body = "\n".join(format_matmul(r, peak) for r in matmuls)
    backward_body = "\n".join(format_matmul(r, peak) for r in backward)
    thread_head = ("| M×K×N | Lamina 1 thread ms | Lamina 2 threads ms | "
                   "speed-up | GFLOP/s | PyTorch 1 thread ms | PyTorch 2 "
                   "threads ms | PyTorch speed-up | vs PyTorch 2 threads |\n"
                   "|---|---|---|---|---|---|---|---|---|\n")
    thread_body = "\n".join(format_threads(r) for r in threaded)
    shapes = "" if args.shapes == "all" else f" --shapes {args.shapes}"
    tile_text = ""
    if tile_ceiling:
        tile_text = (
            " The register tile Lamina's schedule generates on AVX-512 (8 "
            "rows × 2 vectors:\nper k, 2 loads of W, 8 broadcasts of x, 16 "
            f"FMAs) runs at **{tile_ceiling:.1f} GFLOP/s =\n"
            f"{tile_ceiling / peak:.0%} of that peak** on operands that stay "
            "in L1 (`bench/probes/microkernel.c`):\nthe ceiling of any "
            "matmul built from it.")
    return f"""# CPU linear layers: Lamina vs PyTorch eager and OpenBLAS (fp32)

Command: `/usr/bin/python3 bench/cpu_linear.py --rounds {args.rounds}{shapes}{" --bf16" if args.bf16 else ""}`
({datetime.date.today()}, {os.cpu_count()} vCPUs, every one-thread process pinned with
`taskset -c 1`, every two-thread process with `taskset -c 0-1`).

Measured on this machine ({cpu_model()}) in the same run: fp32 FMA peak
**{peak:.1f} GFLOP/s** per core with {vector_bits}-bit vectors, the widest it has
(`bench/probes/fma_peak.c`), streaming read **{bandwidth:.1f} GB/s**
(`bench/probes/stream_read.c`).{tile_text}
PyTorch and sgemm run {kernels}.

Times are medians over {args.rounds} rounds of per-process medians; "vs" columns
are speed ratios (baseline time / Lamina time; > 1 means Lamina is faster).

## Fused layers, one thread

The sgemm baseline computes X·Wᵀ only (no bias, no epilogue). Dropout is
training mode, p = {P_DROP}. For M ≤ 16 the roofline column is the weight
streaming rate against the measured read bandwidth. Compile time is the
whole lamina-run compilation (pipeline and LLVM JIT).

{head}{body}

## The matmul alone, one thread

A linear layer without bias (Y = X·Wᵀ, W as [N, K]) against the same sgemm.

{matmul_head.format(what="M×K×N")}{matmul_body}

## The backward's matmuls, one thread

As `lamina-generate-backward` writes them for y = x·Wᵀ (x [tokens, K],
W [N, K]): dX = dY·W, a matmul on Wᵀ (packed straight from W in blocks of
16 features), and dW = dYᵀ·X, a matmul on the transposes of dY and X (dY
packed straight from dY in panels of the register tile's rows, X in blocks
of 16; neither transpose materialized). Every Lamina call packs its
operands again (`lamina-run --repack`), as a training step must: weights,
activations and cotangents all change between steps. sgemm gets the same
operands in place (NoTrans·NoTrans and Trans·NoTrans).

{matmul_head.format(what="product")}{backward_body}

## Two threads: fused linear + bias + GELU

`lamina-cpu-pipeline{{threads=2}}` (each thread runs its half of the layer's
blocks of features, through OpenMP) and
PyTorch with `torch.set_num_threads(2)` (OpenBLAS on two threads), each
pinned to both vCPUs.

{thread_head}{thread_body}
"""


if __name__ == "__main__":
    main()
