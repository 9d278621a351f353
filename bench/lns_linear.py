#!/usr/bin/env python3
"""LNS linear layers: Lamina's compiled kernels against NumPy, in LNS MAC/s.

y = x·Wᵀ + b on LNS codes (identical codes in every mode, checked here
against the NumPy spec implementation on the rows it timed), one thread:
Lamina `ideal` and `table` modes vs a straightforward vectorized NumPy
implementation of the same spec (python/lamina/lns_numpy.py, about the
xlnstorch reference's speed), and Lamina's own fp32 linear on the same shape.

usage: bench/lns_linear.py [--output bench/results/lns_linear.md]
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
import time

import numpy as np

from machine import cpu_model

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The lamina package lives in the build tree, next to its extension.
sys.path.insert(0, str(pathlib.Path(os.environ.get("LAMINA_BUILD_DIR",
                                                   ROOT / "build")) / "python"))
from lamina import lns_numpy  # noqa: E402
from lamina.tools import tool  # noqa: E402

SHAPES = [(64, 256, 256), (512, 1024, 1024)]
NUMPY_ROWS = 64  # NumPy is timed on at most this many rows (its rate is per MAC)


def pinned(args):
    taskset = shutil.which("taskset")
    return ([taskset, "-c", "1"] if taskset and os.cpu_count() > 1 else []) + args


def lamina_run(work, ir, inputs, repeats):
    path = work / "program.mlir"
    path.write_text(ir)
    args = [tool("lamina-run"), str(path), f"--repeat={repeats}",
            f"--output-dir={work / 'out'}"]
    for i, value in enumerate(inputs):
        np.save(work / f"in{i}.npy", value)
        args.append(f"--input={work / f'in{i}.npy'}")
    out = subprocess.run(pinned(args), capture_output=True, text=True,
                         check=True).stdout
    seconds = float(re.search(r"median ([0-9.]+) ms", out).group(1)) / 1e3
    return seconds, np.load(work / "out" / "result0.npy")


def lns_ir(m, k, n, f, mode):
    t = lambda *s: "tensor<" + "x".join(map(str, s)) + f"x!lns.num<f = {f}>>"
    return f"""func.func @main(%x: {t(m, k)}, %w: {t(n, k)}, %b: {t(n)}) -> {t(m, n)} {{
  %0 = lns.linear %x, %w bias %b {mode}: {t(m, k)}, {t(n, k)}, {t(n)} -> {t(m, n)}
  return %0 : {t(m, n)}
}}"""


def f32_ir(m, k, n):
    return f"""func.func @main(%x: tensor<{m}x{k}xf32>, %w: tensor<{n}x{k}xf32>, %b: tensor<{n}xf32>) -> tensor<{m}x{n}xf32> {{
  %0 = lamina.linear "fc" %x, %w bias %b : (tensor<{m}x{k}xf32>, tensor<{n}x{k}xf32>, tensor<{n}xf32>) -> tensor<{m}x{n}xf32>
  return %0 : tensor<{m}x{n}xf32>
}}"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=str(ROOT / "bench" / "results" /
                                                "lns_linear.md"))
    parser.add_argument("--rounds", type=int, default=3,
                        help="medians over this many runs of each contender")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        for (m, k, n) in SHAPES:
            macs = m * k * n
            rng = np.random.default_rng(m + k + n)
            xf = rng.standard_normal((m, k))
            wf = rng.standard_normal((n, k)) / np.sqrt(k)
            bf = rng.standard_normal(n)
            repeats = 10 if macs < 1e8 else 1
            f32_time, _ = lamina_run(work, f32_ir(m, k, n),
                                     [xf.astype(np.float32),
                                      wf.astype(np.float32),
                                      bf.astype(np.float32)], 10)
            for f in (10, 23):
                x, w, b = (lns_numpy.encode(v, f) for v in (xf, wf, bf))
                timed_rows = min(m, NUMPY_ROWS)
                modes = ["ideal"] + (["table"] if f <= 16 else [])
                # Each round times every contender once, side by side, so
                # that a slow spell of the machine hits them alike.
                numpy_rates, seconds, outputs = [], {mode: [] for mode in modes}, {}
                for _ in range(args.rounds):
                    start = time.perf_counter()
                    reference = lns_numpy.linear(x[:timed_rows], w, b, f)
                    numpy_rates.append(timed_rows * k * n /
                                       (time.perf_counter() - start))
                    for mode in modes:
                        sbdb = "sbdb table " if mode == "table" else ""
                        time_s, outputs[mode] = lamina_run(
                            work, lns_ir(m, k, n, f, sbdb), [x, w, b], repeats)
                        seconds[mode].append(time_s)
                numpy_rate = statistics.median(numpy_rates)
                for mode in modes:
                    median = statistics.median(seconds[mode])
                    identical = np.array_equal(outputs[mode][:timed_rows],
                                               reference)
                    rate = macs / median
                    rows.append(
                        f"| {m}×{k}×{n} | {f} | {mode} | {median * 1e3:.1f} | "
                        f"{rate / 1e6:.1f} | {numpy_rate / 1e6:.1f} | "
                        f"{rate / numpy_rate:.1f}× | {median / f32_time:.0f}× | "
                        f"{'yes' if identical else 'NO'} |")
                    print(rows[-1], flush=True)
    table = "\n".join(rows)
    report = f"""# LNS linear layers: Lamina vs NumPy (one thread)

Command: `/usr/bin/python3 bench/lns_linear.py --rounds {args.rounds}`
({datetime.date.today()}, {cpu_model()}, every process pinned with `taskset -c 1`; each round
times NumPy and every Lamina mode once, side by side; times and NumPy rates are
medians over the rounds, a Lamina time in a round being the median of 10
calls for the small shape, one call for the large). Inputs: normal x, W/√K, b encoded
in base 2^(2^-f). NumPy (python/lamina/lns_numpy.py, the spec vectorized over
outputs, sequential over K) is timed on the first min(M, {NUMPY_ROWS}) rows, and
its codes are compared with Lamina's on those rows. The fp32 column is Lamina's own fp32
linear on the same shape (time ratio, LNS / fp32).

| M×K×N | f | Lamina mode | ms per call | Lamina M MAC/s | NumPy M MAC/s | vs NumPy | LNS / fp32 time | identical codes |
|---|---|---|---|---|---|---|---|---|
{table}
"""
    pathlib.Path(args.output).write_text(report)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
