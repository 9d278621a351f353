#!/usr/bin/env python3
"""Tensor-parallel MLP on MPI ranks against the unsharded compiled program.

The GPT-2 MLP (fc1 1024 → 4096 with GELU, fc2 4096 → 1024, fp32) for 512 and
2048 tokens. Each round runs, one after the other:

- the unsharded program compiled by lamina-cpu-pipeline, one process, one
  thread (the "1 rank" column, and the base of the speedups);
- the same program with threads=2 (the strongest one-process baseline on
  this 2-core machine);
- the Megatron schedule (examples/megatron_mlp.schedule.mlir) on 2 and 4
  ranks under mpirun.mpich, one thread per rank.

A step is one call after a warm-up; each process reports the median over
--repeat calls, and a multi-rank step is the slowest rank's median. The
table reports medians over rounds, and the share of a step that ranks spend
in collectives (all-reduce, including waiting for the other ranks).

usage: bench/tp_mlp.py [--rounds 3] [--repeat 10]
                       [--output bench/results/tp_mlp.md]
"""

import argparse
import datetime
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(pathlib.Path(os.environ.get("LAMINA_BUILD_DIR",
                                                   ROOT / "build")) / "python"))
from lamina.tools import MPI_LAUNCHER, tool  # noqa: E402

HIDDEN, INTER = 1024, 4096
TOKENS = [512, 2048]
SCHEDULE = ROOT / "examples" / "megatron_mlp.schedule.mlir"

MLP = """module attributes {{lamina.world_size = {ranks} : i64}} {{
  func.func @mlp(%x: tensor<{t}x{h}xf32>, %w_in: tensor<{i}x{h}xf32>, %b_in: tensor<{i}xf32>,
                 %w_out: tensor<{h}x{i}xf32>, %b_out: tensor<{h}xf32>) -> tensor<{t}x{h}xf32> {{
    %y = lamina.linear_act "h.0.mlp.fc_in" %x, %w_in bias %b_in activation gelu_tanh
        : (tensor<{t}x{h}xf32>, tensor<{i}x{h}xf32>, tensor<{i}xf32>) -> tensor<{t}x{i}xf32>
    %z = lamina.linear "h.0.mlp.fc_out" %y, %w_out bias %b_out
        : (tensor<{t}x{i}xf32>, tensor<{h}x{i}xf32>, tensor<{h}xf32>) -> tensor<{t}x{h}xf32>
    return %z : tensor<{t}x{h}xf32>
  }}
}}
"""


def run(command):
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{completed.stdout}\n"
                 f"{completed.stderr}")
    return completed.stdout


def step_time(output):
    """(slowest rank's median ms, mean share in collectives %)."""
    medians = [float(m) for m in
               re.findall(r"median ([0-9.]+) ms", output)]
    shares = [float(s) for s in
              re.findall(r"time in collectives: [0-9.]+ ms per call, "
                         r"([0-9.]+)%", output)]
    return max(medians), (statistics.mean(shares) if shares else 0.0)


def measure(tokens, workdir, repeat):
    times = {}
    for ranks in (1, 2, 4):
        path = workdir / f"mlp_{tokens}_{ranks}.mlir"
        path.write_text(MLP.format(ranks=ranks, t=tokens, h=HIDDEN, i=INTER))
    common = ["--entry=mlp", "--random-inputs", f"--repeat={repeat}"]
    one = str(workdir / f"mlp_{tokens}_1.mlir")
    times["1"] = step_time(run([tool("lamina-run"), one] + common))
    times["1x2t"] = step_time(run(
        [tool("lamina-run"), one, "--pipeline=lamina-cpu-pipeline{threads=2}"]
        + common))
    for ranks in (2, 4):
        times[str(ranks)] = step_time(run(
            [MPI_LAUNCHER, "-np", str(ranks), tool("lamina-run"),
             str(workdir / f"mlp_{tokens}_{ranks}.mlir"),
             f"--schedule={SCHEDULE}"] + common))
    return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--output", default=str(ROOT / "bench" / "results" /
                                                "tp_mlp.md"))
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = pathlib.Path(tmp)
        for tokens in TOKENS:
            rounds = [measure(tokens, workdir, args.repeat)
                      for _ in range(args.rounds)]
            median = {key: (statistics.median(r[key][0] for r in rounds),
                            statistics.median(r[key][1] for r in rounds))
                      for key in rounds[0]}
            rows.append((tokens, median))
            print(tokens, median, flush=True)

    lines = [
        "# Tensor-parallel MLP on MPI ranks (fp32, one thread per rank)",
        "",
        f"Command: `/usr/bin/python3 bench/tp_mlp.py --rounds {args.rounds} "
        f"--repeat {args.repeat}`",
        f"({datetime.date.today()}, {os.cpu_count()} vCPUs, MPICH "
        "`mpirun.mpich`).",
        "",
        f"GPT-2 MLP, hidden {HIDDEN}, inter {INTER}: fc1 + GELU, fc2 + bias; "
        "Megatron schedule (fc1 column parallel, fc2 row parallel with its "
        "all-reduce before the bias). Step times are medians over rounds of "
        "the slowest rank's median; speedups are over the unsharded "
        "program on one rank (one thread); \"collectives\" is the share of "
        "a step ranks spend in the all-reduce, waiting included. The "
        "unsharded program with threads=2 is the strongest one-process "
        "baseline on this machine.",
        "",
        "| tokens | 1 rank ms | 1 rank, 2 threads ms | 2 ranks ms | speedup | "
        "collectives | 4 ranks ms | speedup | collectives | 2 ranks vs 2 "
        "threads |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for tokens, m in rows:
        base = m["1"][0]
        lines.append(
            f"| {tokens} | {base:.2f} | {m['1x2t'][0]:.2f} | "
            f"{m['2'][0]:.2f} | {base / m['2'][0]:.2f}× | {m['2'][1]:.1f}% | "
            f"{m['4'][0]:.2f} | {base / m['4'][0]:.2f}× | {m['4'][1]:.1f}% | "
            f"{m['1x2t'][0] / m['2'][0]:.2f}× |")
    lines += ["", "4 ranks on 2 cores oversubscribe the machine: reported for "
              "correctness, not speed.", ""]
    pathlib.Path(args.output).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
