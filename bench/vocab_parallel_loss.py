#!/usr/bin/env python3
"""A language-model head and its loss on 2 ranks: vocabulary parallel against
the head's logits gathered first, and against the unsharded program.

The head nn.Linear(256, 32768) on 512 tokens and F.cross_entropy's mean
(GPT's loss); one training step is forward, loss, backward and SGD on the
parameters each rank holds. Sharded runs shard the head's weight and bias by
vocabulary with a bwd_post all-reduce on its input; "gathered" adds a
fwd_post all-gather of the logits (every rank then holds the whole
[512, 32768] logits), "vocabulary parallel" leaves it out (each rank its
block; the loss all-reduces three [512] row statistics). Each rank is a
single-threaded process pinned to its own core; the one-rank run is pinned to
one core. Eager PyTorch (on OpenBLAS) runs the same step in one process with
one and with two threads; ratios are against the faster of the two. Each
round runs every mode once; the table reports medians over rounds of rank
0's per-process median step time and the largest resident set of a rank.

usage: bench/vocab_parallel_loss.py [--rounds 3] [--steps 5]
                                    [--output bench/results/vocab_parallel_loss.md]
"""

import argparse
import datetime
import os
import pathlib
import re
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("LAMINA_BUILD_DIR", ROOT / "build"))
HIDDEN, VOCAB, TOKENS = 256, 32768, 512

STEP = r"""
import resource, statistics, sys, time
import torch
import torch.nn.functional as F
from torch import nn
import lamina
import lamina.slapo as slapo
mode, steps, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)

class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(%(hidden)d, %(vocab)d)
        self.register_buffer("targets", torch.randint(0, %(vocab)d, (%(tokens)d,)))
    def forward(self, x):
        return F.cross_entropy(self.head(x), self.targets)

torch.manual_seed(0)
model = Head()
x = torch.randn(%(tokens)d, %(hidden)d)
sch = slapo.create_schedule(model)
if mode == "eager":
    built = model
elif mode != "whole":
    sch["head"].shard("weight", axis=0)
    sch["head"].shard("bias", axis=0)
    if mode == "gathered":
        sch["head"].sync(mode="fwd_post", sync_op_or_fn="all_gather", axis=1)
    sch["head"].sync(mode="bwd_post", sync_op_or_fn="all_reduce")
if mode != "eager":
    built, _ = slapo.build(sch, init_weights=False)
optimizer = torch.optim.SGD(built.parameters(), lr=1e-3)

def step():
    optimizer.zero_grad()
    built(x).backward()
    optimizer.step()

step()
times = []
for _ in range(steps):
    start = time.perf_counter()
    step()
    times.append(time.perf_counter() - start)
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"step rank {lamina.rank()} {statistics.median(times)} {rss}",
      flush=True)
""" % {"hidden": HIDDEN, "vocab": VOCAB, "tokens": TOKENS}

MODES = [("eager", 1, "eager PyTorch, 1 thread"),
         ("eager", 2, "eager PyTorch, 2 threads"),
         ("whole", 1, "Lamina, 1 rank, unsharded"),
         ("gathered", 2, "Lamina, 2 ranks, logits gathered"),
         ("vocabulary", 2, "Lamina, 2 ranks, vocabulary parallel")]


def run(mode, ranks, steps):
    """(rank 0's median step seconds, the largest rank's peak RSS MiB).
    Eager runs take `ranks` threads in one process."""
    threads = ranks if mode == "eager" else 1
    env = dict(os.environ, OMP_NUM_THREADS=str(threads),
               PYTHONPATH=str(BUILD / "python"))
    script = [sys.executable, "-c", STEP, mode, str(steps), str(threads)]
    if mode == "eager":
        command = ["taskset", "-c", ",".join(map(str, range(threads))),
                   *script]
    elif ranks > 1:
        command = ["mpirun.mpich", "-np", str(ranks), "-bind-to", "core",
                   *script]
    else:
        command = ["taskset", "-c", "0", *script]
    out = subprocess.run(command, env=env, check=True, capture_output=True,
                         text=True).stdout
    # Ranks' lines may interleave: find the records anywhere.
    lines = re.findall(r"step rank (\d+) ([0-9.e-]+) ([0-9.]+)", out)
    rank0 = next(float(t) for r, t, _ in lines if r == "0")
    return rank0, max(float(rss) for _, _, rss in lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--output", type=pathlib.Path)
    args = parser.parse_args()

    times = {label: [] for _, _, label in MODES}
    memory = {label: [] for _, _, label in MODES}
    for _ in range(args.rounds):
        for mode, ranks, label in MODES:
            seconds, rss = run(mode, ranks, args.steps)
            times[label].append(seconds)
            memory[label].append(rss)
    eager = min(statistics.median(t) for label, t in times.items()
                if label.startswith("eager"))
    rows = []
    for _, _, label in MODES:
        t = statistics.median(times[label])
        rows.append(f"| {label} | {t * 1e3:.1f} | {eager / t:.2f}× | "
                    f"{statistics.median(memory[label]):.0f} |")

    command = "/usr/bin/python3 bench/vocab_parallel_loss.py " + " ".join(
        f"--{k} {v}" for k, v in (("rounds", args.rounds),
                                  ("steps", args.steps)))
    table = "\n".join([
        "# A language-model head and its loss: vocabulary parallel vs "
        "gathered logits (fp32, one thread per rank)",
        "",
        f"Command: `{command}` ({datetime.date.today()}; each rank a process "
        "pinned to its own core).",
        "",
        f"nn.Linear({HIDDEN}, {VOCAB}) on {TOKENS} tokens, "
        "F.cross_entropy's mean, backward, SGD on each rank's parameter "
        "blocks. Step times: medians over rounds of rank 0's per-process "
        "median; memory: the largest rank's peak resident set (the whole "
        "process: Python, PyTorch and the compiled program).",
        "",
        "| mode | step ms | vs faster eager | peak RSS MiB |",
        "|---|---|---|---|",
        *rows, ""])
    print(table)
    if args.output:
        args.output.write_text(table)


if __name__ == "__main__":
    main()
