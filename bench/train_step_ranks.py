#!/usr/bin/env python3
"""One training step of the GPT-2 MLP compiled by Lamina: Megatron's tensor
parallelism on 2 ranks against the unsharded program on 1.

The model and step of bench/train_step.py (hidden 1024, inter 4096, fp32,
forward, loss, backward, SGD with momentum 0.9 on the parameters each rank
holds), 512 and 2048 tokens. Each rank is one single-threaded process
pinned to its own core (`mpirun.mpich -np 2 -bind-to core`); the one-rank
run is pinned to one core. Each round runs both once; the table reports
medians over rounds of rank 0's per-process median step time.

Each process first runs `--warmup` steps untimed (see bench/train_step.py).

usage: bench/train_step_ranks.py [--rounds 3] [--steps 5] [--warmup 10]
                                 [--output bench/results/train_step_ranks.md]
"""

import argparse
import datetime
import pathlib
import statistics

from ranks import GPT2_MLP, run_pinned

HIDDEN, INTER = 1024, 4096
TOKENS = [512, 2048]

STEP = r"""
import statistics, sys, time
import torch
from torch import nn
import lamina
torch.set_num_threads(1)
tokens, steps, warmup = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

%(mlp)s
torch.manual_seed(0)
model = MLP()
x = torch.randn(tokens, %(hidden)d)
ranks = lamina.world_size()
sch = lamina.create_schedule(model, world_size=ranks, example_inputs=(x,))
if ranks > 1:
    sch["fc1"].shard("weight", 0).shard("bias", 0).sync("bwd_post", "all_reduce")
    sch["fc2"].shard("weight", 1).sync("fwd_post", "all_reduce")
compiled = lamina.build(sch, (x,))
optimizer = torch.optim.SGD(compiled.parameters(), lr=1e-3, momentum=0.9)

def step():
    optimizer.zero_grad()
    loss = compiled(x).square().mean()
    loss.backward()
    optimizer.step()

for _ in range(warmup):
    step()
times = []
for _ in range(steps):
    start = time.perf_counter()
    step()
    times.append(time.perf_counter() - start)
if lamina.rank() == 0:
    print(statistics.median(times))
""" % {"mlp": GPT2_MLP % {"hidden": HIDDEN, "inter": INTER},
       "hidden": HIDDEN}


def run(ranks, tokens, steps, warmup):
    return float(run_pinned(STEP, (tokens, steps, warmup), ranks)[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--output", type=pathlib.Path)
    args = parser.parse_args()

    rows = []
    for tokens in TOKENS:
        one, two = [], []
        for _ in range(args.rounds):
            one.append(run(1, tokens, args.steps, args.warmup))
            two.append(run(2, tokens, args.steps, args.warmup))
        a, b = statistics.median(one), statistics.median(two)
        rows.append(f"| {tokens} | {a * 1e3:.1f} | {b * 1e3:.1f} | "
                    f"{a / b:.2f}× |")
        print(rows[-1], flush=True)

    command = "/usr/bin/python3 bench/train_step_ranks.py " + " ".join(
        f"--{k} {v}" for k, v in (("rounds", args.rounds),
                                  ("steps", args.steps),
                                  ("warmup", args.warmup)))
    table = "\n".join([
        "# One training step: GPT-2 MLP, Megatron on 2 ranks vs 1 rank "
        "(fp32, one thread per rank)",
        "",
        f"Command: `{command}` ({datetime.date.today()}; each rank a process "
        "pinned to its own core).",
        "",
        f"Hidden {HIDDEN}, inter {INTER}: x + fc2(GELU(fc1(x))), loss = "
        "mean(y²), backward, SGD with momentum 0.9 on each rank's "
        "parameter blocks. Step times, after the warm-up steps: medians over "
        "rounds of rank 0's per-process median.",
        "",
        "| tokens | 1 rank ms | 2 ranks ms | speedup |",
        "|---|---|---|---|",
        *rows, ""])
    print(table)
    if args.output:
        args.output.write_text(table)


if __name__ == "__main__":
    main()
