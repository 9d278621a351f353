#!/usr/bin/env python3
"""Data parallelism: weak scaling of the GPT-2 MLP's training step on a
device grid of 2 data replicas against 1 rank, and the share of the
gradient reduction the backward hides.

The model and step of bench/train_step_ranks.py (hidden 1024, inter 4096,
fp32: forward, loss, backward, SGD with momentum 0.9), `--tokens` tokens
per rank. Each rank is one single-threaded process pinned to its own core
(`mpirun.mpich -np 2 -bind-to core`, `grid={"dp": 2}`); the one-rank run
is pinned to one core, and two one-rank processes side by side, each
on its own core without a grid (no communication), give the cores' own
ceiling. On 2 ranks the step runs twice: with each gradient's reduction
started as soon as the gradient is final (the default), and with every
reduction started at the end of the backward (LAMINA_OVERLAP=0), where
none is hidden. The time the backward waits for
the reductions, per step, gives the share hidden: 1 − wait(overlapped) /
wait(at the end), and the step time saved against the time waited at the
end. Each round runs all four once; the table reports
medians over rounds of rank 0's per-process medians.

usage: bench/data_parallel.py [--rounds 3] [--steps 5] [--warmup 5]
                              [--tokens 512] [--output FILE]
"""

import argparse
import datetime
import pathlib
import statistics

from ranks import GPT2_MLP, run_pinned

HIDDEN, INTER = 1024, 4096

STEP = r"""
import os, statistics, sys, time
import torch
from torch import nn
import lamina
from lamina import _lamina
torch.set_num_threads(1)
tokens, steps, warmup = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

%(mlp)s
torch.manual_seed(0)
model = MLP()
ranks = lamina.world_size()
x = torch.randn(tokens, %(hidden)d, generator=torch.Generator().manual_seed(
    lamina.rank()))
independent = os.environ.get("BENCH_INDEPENDENT") == "1"
sch = lamina.create_schedule(model, world_size=1, example_inputs=(x,))
compiled = lamina.build(
    sch, (x,), grid={"dp": ranks} if ranks > 1 and not independent else None)
optimizer = torch.optim.SGD(compiled.parameters(), lr=1e-3, momentum=0.9)

def step():
    optimizer.zero_grad()
    loss = compiled(x).square().mean()
    loss.backward()
    optimizer.step()

for _ in range(warmup):
    step()
times, waits = [], []
for _ in range(steps):
    waited = _lamina.replica_wait_seconds() if ranks > 1 and not independent \
        else 0.0
    start = time.perf_counter()
    step()
    times.append(time.perf_counter() - start)
    waits.append((_lamina.replica_wait_seconds()
                  if ranks > 1 and not independent else 0.0) - waited)
if lamina.rank() == 0:
    print(statistics.median(times), statistics.median(waits))
""" % {"mlp": GPT2_MLP % {"hidden": HIDDEN, "inter": INTER},
       "hidden": HIDDEN}


def run(ranks, tokens, steps, warmup, overlap=True, independent=False):
    step, wait = run_pinned(STEP, (tokens, steps, warmup), ranks,
                            {"LAMINA_OVERLAP": "1" if overlap else "0",
                             "BENCH_INDEPENDENT": "1" if independent else "0"})
    return float(step), float(wait)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--output", type=pathlib.Path)
    args = parser.parse_args()

    one, alone, overlapped, at_end = [], [], [], []
    for _ in range(args.rounds):
        one.append(run(1, args.tokens, args.steps, args.warmup))
        alone.append(run(2, args.tokens, args.steps, args.warmup,
                         independent=True))
        overlapped.append(run(2, args.tokens, args.steps, args.warmup))
        at_end.append(run(2, args.tokens, args.steps, args.warmup,
                          overlap=False))
        print(one[-1], alone[-1], overlapped[-1], at_end[-1], flush=True)
    median = lambda runs, i: statistics.median(r[i] for r in runs)  # noqa
    t1, t2, t2_end = median(one, 0), median(overlapped, 0), median(at_end, 0)
    t_alone = median(alone, 0)
    wait, wait_end = median(overlapped, 1), median(at_end, 1)
    tokens = args.tokens
    hidden = 1 - wait / wait_end if wait_end > 0 else float("nan")
    saved = (t2_end - t2) / wait_end if wait_end > 0 else float("nan")
    rows = [
        f"| 1 rank | {t1 * 1e3:.1f} | — | {tokens / t1:.0f} | 1.00× |",
        f"| 2 processes side by side, no grid (no communication) | "
        f"{t_alone * 1e3:.1f} | — | {2 * tokens / t_alone:.0f} | "
        f"{2 * t1 / t_alone:.2f}× |",
        f"| dp=2, reductions as gradients are final | {t2 * 1e3:.1f} | "
        f"{wait * 1e3:.1f} | {2 * tokens / t2:.0f} | {2 * t1 / t2:.2f}× |",
        f"| dp=2, reductions at the end (LAMINA_OVERLAP=0) | "
        f"{t2_end * 1e3:.1f} | {wait_end * 1e3:.1f} | "
        f"{2 * tokens / t2_end:.0f} | {2 * t1 / t2_end:.2f}× |",
    ]
    command = "/usr/bin/python3 bench/data_parallel.py " + " ".join(
        f"--{k} {v}" for k, v in (("rounds", args.rounds),
                                  ("steps", args.steps),
                                  ("warmup", args.warmup),
                                  ("tokens", args.tokens)))
    table = "\n".join([
        "# Data parallelism: GPT-2 MLP training step, 2 replicas vs 1 rank "
        "(fp32, one thread per rank)",
        "",
        f"Command: `{command}` ({datetime.date.today()}; each rank a process "
        "pinned to its own core).",
        "",
        f"Hidden {HIDDEN}, inter {INTER}: x + fc2(GELU(fc1(x))), loss = "
        f"mean(y²), backward, SGD with momentum 0.9; {tokens} tokens per "
        "rank, 8.4 M parameters (33.6 MB of fp32 gradients reduced per "
        "step). Medians over rounds of rank 0's per-process medians; "
        "'waiting' is the time the backward spends waiting for the "
        "reductions.",
        "",
        "| run | step ms | waiting ms | tokens/s | throughput vs 1 rank |",
        "|---|---|---|---|---|",
        *rows,
        "",
        f"Share of the gradient reduction hidden behind the backward: "
        f"{hidden * 100:.0f}% of the waiting (1 − {wait * 1e3:.1f} / "
        f"{wait_end * 1e3:.1f} ms); {saved * 100:.0f}% in step time "
        f"(({t2_end * 1e3:.1f} − {t2 * 1e3:.1f}) / {wait_end * 1e3:.1f} ms): "
        "the reduction's copies and sums run on the cores that compute.",
        "",
        f"The two cores' own ceiling: two processes side by side, each "
        f"training alone, reach {2 * t1 / t_alone:.2f}× one process's "
        f"throughput (each step {t_alone / t1:.2f}× as long as one process "
        f"alone: the cores share the memory bandwidth and caches). Against "
        f"that ceiling the data-parallel step reaches "
        f"{t_alone / t2 * 100:.0f}% ({t_alone * 1e3:.1f} / "
        f"{t2 * 1e3:.1f} ms).",
        ""])
    print(table)
    if args.output:
        args.output.write_text(table)


if __name__ == "__main__":
    main()
