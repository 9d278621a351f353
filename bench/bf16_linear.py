#!/usr/bin/env python3
"""bf16 matmuls: Lamina on AVX512-BF16 against Lamina fp32 and PyTorch bf16.

One thread, each contender in its own process pinned to one core, the same
run for all (bench/cpu_linear.py's runner): a linear layer without bias,
Y = X·Wᵀ with f32 results,

- Lamina bf16: lamina-cpu-pipeline{bf16=dot} (vdpbf16ps on operands packed
  in pairs of k, f32 accumulation);
- Lamina fp32: lamina-cpu-pipeline on the same shapes in f32;
- PyTorch bf16: F.linear on bf16 tensors (its oneDNN kernels), and PyTorch
  fp32 (OpenBLAS, as cpu_linear.py runs it);

plus the backward's dX and dW in bf16 (operands packed again every call),
against the peak of vdpbf16ps measured by bench/probes/bf16_dot_peak.c.

usage: bench/bf16_linear.py [--rounds 3] [--output bench/results/bf16_linear.md]
"""

import argparse
import datetime
import os
import pathlib
import statistics
import sys
import tempfile

import cpu_linear as runner
from machine import cpu_model, openblas_env

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHAPES = [(16, 4096, 4096), (512, 1024, 4096), (512, 4096, 1024),
          (2048, 1024, 4096), (2048, 4096, 4096)]
BACKWARD = [(512, 1024, 4096), (2048, 1024, 4096)]
THREADED = [(512, 1024, 4096), (2048, 1024, 4096)]

TORCH_SNIPPET = """
import statistics, sys, time, torch, torch.nn.functional as F
m, k, n, repeats, dtype = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), getattr(torch, sys.argv[5])
torch.set_num_threads(int(sys.argv[6]) if len(sys.argv) > 6 else 1)
x, w = (torch.rand(m, k) * 2 - 1).to(dtype), (torch.rand(n, k) * 2 - 1).to(dtype)
times = []
with torch.no_grad():
    F.linear(x, w)
    for _ in range(repeats):
        t = time.perf_counter(); F.linear(x, w); times.append(time.perf_counter() - t)
print(statistics.median(times))
"""


def program(work, name, m, k, n, element):
    x, w, y = (f"tensor<{m}x{k}x{element}>", f"tensor<{n}x{k}x{element}>",
               f"tensor<{m}x{n}xf32>")
    return runner.matmul_program(
        work, f"{name}_{element}_{m}_{k}_{n}", [("x", x), ("w", w)],
        f'  %y = lamina.matmul "fc" %x, %w : ({x}, {w}) -> {y}', y)


def measure(work, rounds, blas_env):
    for m, k, n in SHAPES:
        flops = 2.0 * m * k * n
        repeats = runner.repeats_for(flops)
        f32, bf16 = (program(work, "mm", m, k, n, e) for e in ("f32", "bf16"))
        samples = {key: [] for key in ("bf16", "f32", "torch_bf16",
                                       "torch_f32")}
        for _ in range(rounds):
            samples["bf16"].append(runner.lamina_time(
                bf16, repeats, "lamina-cpu-pipeline{bf16=dot}")[0])
            samples["f32"].append(runner.lamina_time(
                f32, repeats, "lamina-cpu-pipeline")[0])
            for key, dtype in (("torch_bf16", "bfloat16"),
                               ("torch_f32", "float32")):
                samples[key].append(float(runner.run(
                    [sys.executable, "-c", TORCH_SNIPPET, str(m), str(k),
                     str(n), str(repeats), dtype], env=blas_env)))
        yield dict(label=f"{m}×{k}×{n}", flops=flops,
                   **{key: statistics.median(v) for key, v in samples.items()})


def measure_backward(work, rounds):
    for t, k, n in BACKWARD:
        for kind, label, flops in (
                ("dx", f"dX {t}×{k} = dY {t}×{n} · W", 2.0 * t * k * n),
                ("dw", f"dW {n}×{k} = dYᵀ · X ({t} tokens)",
                 2.0 * t * k * n)):
            repeats = runner.repeats_for(flops)
            build = runner.backward_dx if kind == "dx" else runner.backward_dw
            f32, bf16 = build(work, t, k, n), build(work, t, k, n, "bf16")
            times = {"bf16": [], "f32": []}
            for _ in range(rounds):
                times["bf16"].append(runner.lamina_time(
                    bf16, repeats, "lamina-cpu-pipeline{bf16=dot}",
                    repack=True)[0])
                times["f32"].append(runner.lamina_time(
                    f32, repeats, "lamina-cpu-pipeline", repack=True)[0])
            yield dict(label=label, flops=flops,
                       **{key: statistics.median(v)
                          for key, v in times.items()})


def measure_threads(work, rounds, blas_env):
    """Lamina bf16 and PyTorch bf16 on one and on two threads (two cores,
    `taskset -c 0-1`)."""
    two = dict(blas_env, OMP_NUM_THREADS="2")
    for m, k, n in THREADED:
        flops = 2.0 * m * k * n
        repeats = runner.repeats_for(flops)
        path = program(work, "mm", m, k, n, "bf16")
        samples = {key: [] for key in ("one", "two", "torch1", "torch2")}
        for _ in range(rounds):
            samples["one"].append(runner.lamina_time(
                path, repeats, "lamina-cpu-pipeline{bf16=dot}")[0])
            samples["two"].append(runner.lamina_time(
                path, repeats, "lamina-cpu-pipeline{bf16=dot threads=2}",
                threads=2)[0])
            for key, env, threads in (("torch1", blas_env, 1),
                                      ("torch2", two, 2)):
                samples[key].append(float(runner.run(
                    [sys.executable, "-c", TORCH_SNIPPET, str(m), str(k),
                     str(n), str(repeats), "bfloat16", str(threads)],
                    env=env, threads=threads)))
        yield dict(label=f"{m}×{k}×{n}", flops=flops,
                   **{key: statistics.median(v) for key, v in samples.items()})


def thread_row(r):
    cells = [r["label"], f"{r['one'] * 1e3:.3f}", f"{r['two'] * 1e3:.3f}",
             f"{r['one'] / r['two']:.2f}×",
             f"{r['flops'] / r['two'] / 1e9:.1f}",
             f"{r['torch1'] * 1e3:.3f}", f"{r['torch2'] * 1e3:.3f}",
             f"{r['torch1'] / r['torch2']:.2f}×",
             f"{r['torch2'] / r['two']:.2f}×"]
    return "| " + " | ".join(cells) + " |"


def sections(work, rounds, blas_env):
    """The measurements, printed as they come, and their markdown sections
    (peaks, forward, backward, two threads)."""
    peak = float(runner.run(
        [str(runner.compile_probe(work, "bf16_dot_peak"))]).split()[0])
    fp32_peak = float(runner.run(
        [str(runner.compile_probe(work, "fma_peak"))]).split()[0])
    forward, backward, threaded = [], [], []
    for r in measure(work, rounds, blas_env):
        forward.append(r)
        print(row(r, peak), flush=True)
    for r in measure_backward(work, rounds):
        backward.append(r)
        print(row(r, peak), flush=True)
    for r in measure_threads(work, rounds, blas_env):
        threaded.append(r)
        print(thread_row(r), flush=True)
    head = ("| M×K×N | Lamina bf16 ms | GFLOP/s | of bf16 peak | Lamina fp32 ms "
            "| vs Lamina fp32 | PyTorch bf16 ms | vs PyTorch bf16 "
            "| PyTorch fp32 ms |\n|---|---|---|---|---|---|---|---|---|\n")
    back_head = ("| product | Lamina bf16 ms | GFLOP/s | of bf16 peak "
                 "| Lamina fp32 ms | vs Lamina fp32 |\n"
                 "|---|---|---|---|---|---|\n")
    thread_head = ("| M×K×N | Lamina bf16 1 thread ms | 2 threads ms | speed-up "
                   "| GFLOP/s | PyTorch bf16 1 thread ms | 2 threads ms "
                   "| PyTorch speed-up | vs PyTorch 2 threads |\n"
                   "|---|---|---|---|---|---|---|---|---|\n")
    return f"""Measured in the same run: the peak of `vdpbf16ps`
**{peak:.1f} GFLOP/s** per core (`bench/probes/bf16_dot_peak.c`), the fp32 FMA
peak **{fp32_peak:.1f} GFLOP/s** (`bench/probes/fma_peak.c`). PyTorch {_torch()}
runs bf16 `F.linear` through oneDNN and fp32 through OpenBLAS. Times are
medians over {rounds} rounds of per-process medians; "vs" columns are
baseline time / Lamina bf16 time.

## bf16: Y = X·Wᵀ, f32 results, one thread

{head}{chr(10).join(row(r, peak) for r in forward)}

## bf16: the backward's matmuls, one thread (operands packed again every call)

{back_head}{chr(10).join(row(r, peak) for r in backward)}

## bf16: two threads

`lamina-cpu-pipeline{{bf16=dot threads=2}}` and PyTorch bf16 with two threads,
each process pinned to both cores (`taskset -c 0-1`).

{thread_head}{chr(10).join(thread_row(r) for r in threaded)}
"""


def row(r, peak):
    gflops = r["flops"] / r["bf16"] / 1e9
    cells = [r["label"], f"{r['bf16'] * 1e3:.3f}", f"{gflops:.1f}",
             f"{gflops / peak:.0%}" if peak else "–",
             f"{r['f32'] * 1e3:.3f}", f"{r['f32'] / r['bf16']:.2f}×"]
    if "torch_bf16" in r:
        cells += [f"{r['torch_bf16'] * 1e3:.3f}",
                  f"{r['torch_bf16'] / r['bf16']:.2f}×",
                  f"{r['torch_f32'] * 1e3:.3f}"]
    return "| " + " | ".join(cells) + " |"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", default=str(ROOT / "bench" / "results" /
                                                "bf16_linear.md"))
    args = parser.parse_args()
    blas_env = openblas_env(os.environ)
    with tempfile.TemporaryDirectory() as work:
        body = sections(pathlib.Path(work), args.rounds, blas_env)
    report = f"""# bf16 matmuls: Lamina on AVX512-BF16 vs Lamina fp32 and PyTorch bf16

Command: `/usr/bin/python3 bench/bf16_linear.py --rounds {args.rounds}`
({datetime.date.today()}, {cpu_model()}, every one-thread process pinned with
`taskset -c 1`). `bench/cpu_linear.py --bf16` runs the same sections after
its fp32 ones.

{body}"""
    pathlib.Path(args.output).write_text(report)
    print(f"\nwrote {args.output}")


def _torch():
    import torch
    return torch.__version__


if __name__ == "__main__":
    main()
