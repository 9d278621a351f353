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

TORCH_SNIPPET = """
import statistics, sys, time, torch, torch.nn.functional as F
m, k, n, repeats, dtype = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), getattr(torch, sys.argv[5])
torch.set_num_threads(1)
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
        work = pathlib.Path(work)
        peak = float(runner.run(
            [str(runner.compile_probe(work, "bf16_dot_peak"))]).split()[0])
        fp32_peak = float(runner.run(
            [str(runner.compile_probe(work, "fma_peak"))]).split()[0])
        forward = []
        for r in measure(work, args.rounds, blas_env):
            forward.append(r)
            print(row(r, peak), flush=True)
        backward = []
        for r in measure_backward(work, args.rounds):
            backward.append(r)
            print(row(r, peak), flush=True)
    head = ("| M×K×N | Lamina bf16 ms | GFLOP/s | of bf16 peak | Lamina fp32 ms "
            "| vs Lamina fp32 | PyTorch bf16 ms | vs PyTorch bf16 "
            "| PyTorch fp32 ms |\n|---|---|---|---|---|---|---|---|---|\n")
    back_head = ("| product | Lamina bf16 ms | GFLOP/s | of bf16 peak "
                 "| Lamina fp32 ms | vs Lamina fp32 |\n"
                 "|---|---|---|---|---|---|\n")
    report = f"""# bf16 matmuls: Lamina on AVX512-BF16 vs Lamina fp32 and PyTorch bf16

Command: `/usr/bin/python3 bench/bf16_linear.py --rounds {args.rounds}`
({datetime.date.today()}, {cpu_model()}, one thread, every process pinned with
`taskset -c 1`). Measured in the same run: the peak of `vdpbf16ps`
**{peak:.1f} GFLOP/s** (`bench/probes/bf16_dot_peak.c`), the fp32 FMA peak
**{fp32_peak:.1f} GFLOP/s** (`bench/probes/fma_peak.c`). PyTorch {_torch()}
runs bf16 `F.linear` through oneDNN and fp32 through OpenBLAS. Times are
medians over {args.rounds} rounds of per-process medians; "vs" columns are
baseline time / Lamina bf16 time.

## Y = X·Wᵀ, f32 results

{head}{chr(10).join(row(r, peak) for r in forward)}

## The backward's matmuls (operands packed again every call)

{back_head}{chr(10).join(row(r, peak) for r in backward)}
"""
    pathlib.Path(args.output).write_text(report)
    print(f"\nwrote {args.output}")


def _torch():
    import torch
    return torch.__version__


if __name__ == "__main__":
    main()
