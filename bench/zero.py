#!/usr/bin/env python3
"""ZeRO on 2 data replicas against plain data parallelism: optimizer-state
bytes per rank and step time.

The GPT-2 MLP of bench/data_parallel.py (hidden 1024, inter 4096, fp32,
8.4 M parameters; 512 tokens per rank), `grid={"dp": 2}`, AdamW: plain
(every replica holds the whole optimizer state), ZeRO stage 1 (each holds
its share, parameters broadcast from their owners after the step) and ZeRO
stage 2 (each gradient reduced to its owner only, too). Each rank is one
single-threaded process pinned to its own core; each round runs the three
once, and the table reports medians over rounds of rank 0's per-process
median step time (forward, loss, backward, optimizer step) and the bytes
of the tensors in rank 0's optimizer state.

usage: bench/zero.py [--rounds 3] [--steps 5] [--warmup 3] [--output FILE]
"""

import argparse
import datetime
import pathlib
import statistics

from ranks import GPT2_MLP, run_pinned

HIDDEN, INTER, TOKENS = 1024, 4096, 512

STEP = r"""
import statistics, sys, time
import torch
from torch import nn
import lamina
torch.set_num_threads(1)
stage, steps, warmup = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

%(mlp)s
torch.manual_seed(0)
model = MLP()
x = torch.randn(%(tokens)d, %(hidden)d,
                generator=torch.Generator().manual_seed(lamina.rank()))
sch = lamina.create_schedule(model, world_size=1, example_inputs=(x,))
compiled = lamina.build(sch, (x,), grid={"dp": lamina.world_size()})
if stage:
    optimizer = lamina.optim.ZeroRedundancyOptimizer(
        compiled.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-4,
        stage=stage)
    state = lambda: optimizer.optim.state
else:
    optimizer = torch.optim.AdamW(compiled.parameters(), lr=1e-4)
    state = lambda: optimizer.state

def step():
    optimizer.zero_grad()
    compiled(x).square().mean().backward()
    optimizer.step()

for _ in range(warmup):
    step()
times = []
for _ in range(steps):
    start = time.perf_counter()
    step()
    times.append(time.perf_counter() - start)
nbytes = sum(t.numel() * t.element_size() for s in state().values()
             for t in s.values() if isinstance(t, torch.Tensor))
if lamina.rank() == 0:
    print(statistics.median(times), nbytes)
""" % {"mlp": GPT2_MLP % {"hidden": HIDDEN, "inter": INTER},
       "hidden": HIDDEN, "tokens": TOKENS}


def run(stage, steps, warmup):
    seconds, nbytes = run_pinned(STEP, (stage, steps, warmup), 2)
    return float(seconds), int(nbytes)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--output", type=pathlib.Path)
    args = parser.parse_args()

    runs = {0: [], 1: [], 2: []}
    for _ in range(args.rounds):
        for stage in runs:
            runs[stage].append(run(stage, args.steps, args.warmup))
        print({s: r[-1] for s, r in runs.items()}, flush=True)
    names = {0: "plain data parallelism (AdamW)", 1: "ZeRO stage 1",
             2: "ZeRO stage 2"}
    plain = statistics.median(t for t, _ in runs[0])
    rows = []
    for stage, results in runs.items():
        step = statistics.median(t for t, _ in results)
        nbytes = results[-1][1]
        rows.append(f"| {names[stage]} | {nbytes / 2**20:.1f} | "
                    f"{step * 1e3:.1f} | {plain / step:.2f}× |")
    command = "/usr/bin/python3 bench/zero.py " + " ".join(
        f"--{k} {v}" for k, v in (("rounds", args.rounds),
                                  ("steps", args.steps),
                                  ("warmup", args.warmup)))
    table = "\n".join([
        "# ZeRO vs plain data parallelism: GPT-2 MLP on 2 replicas (fp32, "
        "one thread per rank)",
        "",
        f"Command: `{command}` ({datetime.date.today()}; each rank a process "
        "pinned to its own core).",
        "",
        f"Hidden {HIDDEN}, inter {INTER}, {TOKENS} tokens per replica, "
        "AdamW (8.4 M parameters: 64.1 MiB of moments unsharded). Optimizer "
        "state: bytes of the tensors rank 0 holds; step: forward, loss, "
        "backward, optimizer step, medians over rounds of rank 0's "
        "per-process medians.",
        "",
        "| run | optimizer state MiB (rank 0) | step ms | speed vs plain |",
        "|---|---|---|---|",
        *rows, ""])
    print(table)
    if args.output:
        args.output.write_text(table)


if __name__ == "__main__":
    main()
