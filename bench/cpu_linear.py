#!/usr/bin/env python3
"""Lamina's fused CPU linear layers against PyTorch and OpenBLAS.

Linear + bias + GELU(tanh) and linear + bias + dropout (training), fp32, one
thread, for the shapes of the CPU issue. Each round runs every contender once
(separate processes pinned to one core), and the table reports medians over
rounds of per-process medians:

- Lamina fused: lamina-cpu-pipeline (epilogue applied on the register tile);
- Lamina unfused: lamina-cpu-pipeline{fuse-epilogues=false};
- PyTorch eager with OpenBLAS (LD_LIBRARY_PATH=.../openblas-pthread, 1 thread);
- bare OpenBLAS sgemm (X·Wᵀ only: no bias, no epilogue), the strongest
  baseline;

plus this machine's measured fp32 FMA peak and streaming read bandwidth.

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

from machine import cpu_model

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The lamina package lives in the build tree, next to its extension.
sys.path.insert(0, str(pathlib.Path(os.environ.get("LAMINA_BUILD_DIR",
                                                   ROOT / "build")) / "python"))
from lamina.tools import tool  # noqa: E402

OPENBLAS_DIR = "/usr/lib/x86_64-linux-gnu/openblas-pthread"
SHAPES = [(1, 4096, 4096), (16, 4096, 4096), (512, 1024, 4096),
          (2048, 1024, 4096), (2048, 4096, 1024)]
P_DROP = 0.1

LAYER = {
    "gelu": ('lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh', ""),
    "dropout": ('lamina.linear_dropout "fc" %x, %w bias %b dropout '
                f'<p = {P_DROP}, training> seed %s', ", %s: i64"),
}

TORCH_SNIPPET = """
import statistics, sys, time, torch, torch.nn.functional as F
torch.set_num_threads(1)
m, k, n, repeats, kind = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
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


def pinned(args):
    taskset = shutil.which("taskset")
    return ([taskset, "-c", "1"] if taskset and os.cpu_count() > 1 else []) + args


def run(args, env=None):
    completed = subprocess.run(pinned(args), capture_output=True, text=True,
                               env=env)
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


def lamina_time(path, repeats, pipeline):
    out = run([tool("lamina-run"), str(path), "--random-inputs", "--seed=1",
               f"--repeat={repeats}", f"--pipeline={pipeline}"])
    median = float(re.search(r"median ([0-9.]+) ms", out).group(1)) / 1e3
    compile_ms = float(re.search(r"compilation .*: ([0-9.]+) ms", out).group(1))
    return median, compile_ms


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", default=str(ROOT / "bench" / "results" /
                                                "cpu_linear.md"))
    parser.add_argument("--shapes", default="all",
                        help="comma-separated indices into the shape list")
    args = parser.parse_args()
    shapes = SHAPES if args.shapes == "all" else [
        SHAPES[int(i)] for i in args.shapes.split(",")]

    blas_env = dict(os.environ, LD_LIBRARY_PATH=OPENBLAS_DIR,
                    OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        peak_text, vector_bits = run(
            [str(compile_probe(work, "fma_peak"))]).split()[:2]
        peak = float(peak_text)
        bandwidth = float(run([str(compile_probe(work, "stream_read"))]).split()[0])
        sgemm = compile_probe(work, "sgemm", (f"-L{OPENBLAS_DIR}",
                                              "-l:libopenblas.so.0",
                                              f"-Wl,-rpath,{OPENBLAS_DIR}"))
        rows = []
        for (m, k, n) in shapes:
            flops = 2.0 * m * k * n
            repeats = max(3, min(50, int(1.5 / (flops / 50e9))))
            for kind in LAYER:
                path = program(work, kind, m, k, n)
                samples = {key: [] for key in
                           ("fused", "unfused", "torch", "sgemm", "compile")}
                for _ in range(args.rounds):
                    t, c = lamina_time(path, repeats, "lamina-cpu-pipeline")
                    samples["fused"].append(t)
                    samples["compile"].append(c)
                    samples["unfused"].append(lamina_time(
                        path, repeats,
                        "lamina-cpu-pipeline{fuse-epilogues=false}")[0])
                    samples["torch"].append(float(run(
                        [sys.executable, "-c", TORCH_SNIPPET, str(m), str(k),
                         str(n), str(repeats), kind], env=blas_env)))
                    samples["sgemm"].append(float(run(
                        [str(sgemm), str(m), str(k), str(n), str(repeats)],
                        env=blas_env)))
                med = {key: statistics.median(v) for key, v in samples.items()}
                row = dict(m=m, k=k, n=n, kind=kind, flops=flops, **med)
                rows.append(row)
                print(format_row(row, peak, bandwidth), flush=True)

    report = render(rows, peak, bandwidth, args, vector_bits)
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


def render(rows, peak, bandwidth, args, vector_bits):
    head = ("| M×K×N | epilogue | Lamina fused ms | GFLOP/s | Lamina unfused ms "
            "| PyTorch+OpenBLAS ms | OpenBLAS sgemm ms | vs PyTorch | vs sgemm "
            "| unfused/fused | roofline | compile ms |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|\n")
    body = "\n".join(format_row(r, peak, bandwidth) for r in rows)
    shapes = "" if args.shapes == "all" else f" --shapes {args.shapes}"
    return f"""# CPU linear layers: Lamina vs PyTorch eager and OpenBLAS (fp32, 1 thread)

Command: `/usr/bin/python3 bench/cpu_linear.py --rounds {args.rounds}{shapes}`
({datetime.date.today()}, {os.cpu_count()} vCPUs, every process pinned with `taskset -c 1`).

Measured on this machine ({cpu_model()}) in the same run: fp32 FMA peak
**{peak:.1f} GFLOP/s** with {vector_bits}-bit vectors, the widest it has
(`bench/probes/fma_peak.c`), streaming read **{bandwidth:.1f} GB/s**
(`bench/probes/stream_read.c`).

Times are medians over {args.rounds} rounds of per-process medians; "vs" columns
are speed ratios (baseline time / Lamina fused time; > 1 means Lamina is
faster). The sgemm baseline computes X·Wᵀ only (no bias, no epilogue).
Dropout is training mode, p = {P_DROP}. For M ≤ 16 the roofline column is the
weight streaming rate against the measured read bandwidth. Compile time is
the whole lamina-run compilation (pipeline and LLVM JIT).

{head}{body}
"""


if __name__ == "__main__":
    main()
