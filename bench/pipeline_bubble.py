#!/usr/bin/env python3
"""Pipeline bubbles: the GPT-2 MLP cut into two stages on 2 ranks, a batch
of M micro-batches run in the 1F1B order, against the same batch on one
process, for M = 1, 4 and 8.

The model of bench/train_step.py (hidden 1024, inter 4096, fp32; the cut
after fc1, so each stage holds one of the two 1024 × 4096 matmuls), 128
tokens per micro-batch, one training batch: forward, loss (mean squared)
and backward of every micro-batch (CompiledModule.train_batch). Each rank
is one single-threaded process pinned to its own core
(`mpirun.mpich -np 2 -bind-to core`, `grid={"pp": 2}`); the one-process
run computes both stages one after the other. With stages of equal work,
an ideal pipeline's schedule takes T1 / P; the measured bubble is
1 − T1 / (P · schedule), against 1F1B's (P − 1) / (M + P − 1); the batch
time adds the exchange of the stages' gradients. Each round runs both; the table
reports medians over rounds of rank 0's per-process medians.

usage: bench/pipeline_bubble.py [--rounds 3] [--steps 5] [--warmup 3]
                                [--output FILE]
"""

import argparse
import datetime
import pathlib
import statistics

from ranks import GPT2_MLP, run_pinned

HIDDEN, INTER, TOKENS = 1024, 4096, 128
COUNTS = [1, 4, 8]

STEP = r"""
import statistics, sys, time
import torch
import torch.nn.functional as F
from torch import nn
import lamina
torch.set_num_threads(1)
count, steps, warmup = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

%(mlp)s
torch.manual_seed(0)
model = MLP()
x = torch.randn(%(tokens)d * count, %(hidden)d)
y = torch.randn(%(tokens)d * count, %(hidden)d)
ranks = lamina.world_size()
sch = lamina.create_schedule(model, world_size=1,
                             example_inputs=(x[:%(tokens)d],))
sch["fc1"].cut_pipeline_stage()
compiled = lamina.build(sch, (x[:%(tokens)d],),
                        grid={"pp": ranks} if ranks > 1 else None)

def step():
    compiled.zero_grad()
    compiled.train_batch(x, y, F.mse_loss, microbatches=count)

for _ in range(warmup):
    step()
times, schedules = [], []
for _ in range(steps):
    start = time.perf_counter()
    step()
    times.append(time.perf_counter() - start)
    report = compiled._state.get("batch_report")
    schedules.append(report.schedule_seconds if report else times[-1])
if lamina.rank() == 0:
    print(statistics.median(times), statistics.median(schedules))
""" % {"mlp": GPT2_MLP % {"hidden": HIDDEN, "inter": INTER},
       "hidden": HIDDEN, "tokens": TOKENS}


def run(ranks, count, steps, warmup):
    batch, schedule = run_pinned(STEP, (count, steps, warmup), ranks)
    return float(batch), float(schedule)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--output", type=pathlib.Path)
    args = parser.parse_args()

    rows, stages = [], 2
    for count in COUNTS:
        one, two = [], []
        for _ in range(args.rounds):
            one.append(run(1, count, args.steps, args.warmup))
            two.append(run(stages, count, args.steps, args.warmup))
        t1 = statistics.median(b for b, _ in one)
        tp = statistics.median(b for b, _ in two)
        ts = statistics.median(s for _, s in two)
        bubble = 1 - t1 / (stages * ts)
        formula = (stages - 1) / (count + stages - 1)
        rows.append(f"| {count} | {t1 * 1e3:.1f} | {tp * 1e3:.1f} | "
                    f"{ts * 1e3:.1f} | {t1 / tp:.2f}× | {bubble * 100:.0f}% "
                    f"| {formula * 100:.0f}% |")
        print(rows[-1], flush=True)
    command = "/usr/bin/python3 bench/pipeline_bubble.py " + " ".join(
        f"--{k} {v}" for k, v in (("rounds", args.rounds),
                                  ("steps", args.steps),
                                  ("warmup", args.warmup)))
    table = "\n".join([
        "# Pipeline bubbles: GPT-2 MLP in two stages, 1F1B on 2 ranks vs "
        "one process (fp32, one thread per rank)",
        "",
        f"Command: `{command}` ({datetime.date.today()}; each rank a process "
        "pinned to its own core).",
        "",
        f"Hidden {HIDDEN}, inter {INTER}, cut after fc1; {TOKENS} tokens per "
        "micro-batch; one training batch of M micro-batches (forward, loss, "
        "backward). Medians over rounds of rank 0's per-process medians. "
        "On 2 stages, the batch is the 1F1B schedule, then each stage's "
        "gradients sent to the other rank (every rank holds every "
        "gradient). Bubble of the schedule: 1 − T1 / (2 · schedule); "
        "1F1B's: (P − 1) / (M + P − 1).",
        "",
        "| micro-batches M | 1 process ms | 2 stages: batch ms | of which "
        "1F1B schedule ms | speedup | bubble | 1F1B formula |",
        "|---|---|---|---|---|---|---|",
        *rows, ""])
    print(table)
    if args.output:
        args.output.write_text(table)


if __name__ == "__main__":
    main()
