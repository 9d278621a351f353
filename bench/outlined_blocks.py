#!/usr/bin/env python3
"""Repeated blocks compiled once: the step time of a whole GPT model with
its layers outlined (`lamina-cpu-pipeline`, one function per repeated
block called once per layer) against the same model with every layer
compiled inline (`lamina-cpu-pipeline{outline-repeated-blocks=false}`).

examples/gpt_models.py's TiedGPT at GPT-2-small width (n_embd 768, 12
heads, vocabulary 50304, block 64), input (1, 64), fp32, one thread pinned
to one core. For each depth, one process builds both programs (an empty
compile cache each), then alternates them round after round: a forward in
eval mode under `torch.no_grad()`, and a training step (forward, loss,
`loss.backward()`), each the median of `--steps` calls after `--warmup`.
The table reports medians over rounds and the outlined/inlined ratio.

usage: bench/outlined_blocks.py [--depths 4,12] [--rounds 5] [--steps 3]
                                [--warmup 3]
                                [--output bench/results/outlined_blocks.md]
"""

import argparse
import datetime
import os
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("LAMINA_BUILD_DIR", ROOT / "build"))
HIDDEN, HEADS, VOCAB, BLOCK = 768, 12, 50304, 64
INLINED = "lamina-cpu-pipeline{outline-repeated-blocks=false}"

WORKER = r"""
import copy, statistics, sys, tempfile, time, os
import torch
torch.set_num_threads(1)
sys.path.insert(0, %(examples)r)
from gpt_models import GPTConfig, TiedGPT
import lamina
depth, rounds, steps, warmup = map(int, sys.argv[1:5])
config = GPTConfig(block_size=%(block)d, vocab_size=%(vocab)d,
                   n_layer=depth, n_head=%(heads)d, n_embd=%(hidden)d)
torch.manual_seed(0)
model = TiedGPT(config)
idx = torch.randint(0, config.vocab_size, (1, %(block)d))
targets = torch.roll(idx, -1, 1)
variants = {}
for name, pipeline in (("outlined", "lamina-cpu-pipeline"),
                       ("inlined", %(inlined)r)):
    os.environ["LAMINA_CACHE_DIR"] = tempfile.mkdtemp()
    train = lamina.build(lamina.create_schedule(copy.deepcopy(model)),
                         progress=False, pipeline=pipeline)
    evaluate = lamina.build(lamina.create_schedule(copy.deepcopy(model)),
                            progress=False, pipeline=pipeline)
    evaluate.eval()
    variants[name] = (train, evaluate)

def forward(evaluate):
    with torch.no_grad():
        evaluate(idx)

def step(train):
    train.zero_grad(set_to_none=False)
    _, loss = train(idx, targets)
    loss.backward()

def median_time(call, model):
    for _ in range(warmup):
        call(model)
    times = []
    for _ in range(steps):
        begin = time.perf_counter()
        call(model)
        times.append(time.perf_counter() - begin)
    return statistics.median(times)

for _ in range(rounds):
    for name, (train, evaluate) in variants.items():
        print(name, median_time(forward, evaluate),
              median_time(step, train), flush=True)
""" % {"examples": str(ROOT / "examples"), "block": BLOCK, "vocab": VOCAB,
       "heads": HEADS, "hidden": HIDDEN, "inlined": INLINED}


def measure(depth, rounds, steps, warmup):
    """{variant: ([forward seconds], [step seconds])}, one entry per
    round."""
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=str(BUILD / "python"))
    completed = subprocess.run(
        ["taskset", "-c", "0", sys.executable, "-c", WORKER, str(depth),
         str(rounds), str(steps), str(warmup)],
        env=env, capture_output=True, text=True, check=True)
    times = {}
    for line in completed.stdout.splitlines():
        name, forward, step = line.split()
        entry = times.setdefault(name, ([], []))
        entry[0].append(float(forward))
        entry[1].append(float(step))
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", default="4,12")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--output",
                        default=str(ROOT / "bench/results/outlined_blocks.md"))
    args = parser.parse_args()
    rows = []
    for depth in (int(d) for d in args.depths.split(",")):
        times = measure(depth, args.rounds, args.steps, args.warmup)
        outlined, inlined = times["outlined"], times["inlined"]
        row = (depth, statistics.median(outlined[0]),
               statistics.median(inlined[0]),
               statistics.median(outlined[1]),
               statistics.median(inlined[1]))
        rows.append(row)
        print(f"depth {depth}: forward {row[1] * 1e3:.1f} / "
              f"{row[2] * 1e3:.1f} ms, step {row[3] * 1e3:.1f} / "
              f"{row[4] * 1e3:.1f} ms", flush=True)
    lines = [
        "# Repeated blocks outlined: step time against every layer inline",
        "",
        f"`{' '.join(['bench/outlined_blocks.py'] + sys.argv[1:])}` on "
        f"{datetime.date.today()}: TiedGPT at GPT-2-small width (n_embd "
        f"{HIDDEN}, {HEADS} heads, vocabulary {VOCAB}), input (1, {BLOCK}), "
        "fp32, one thread pinned to one core; both programs in one "
        "process, alternated round after round. Outlined: "
        "`lamina-cpu-pipeline` (one function per repeated block, called "
        f"once per layer); inlined: `{INLINED}`. Medians over "
        f"{args.rounds} rounds of {args.steps}-call medians; a ratio "
        "above 1 means the outlined program is slower.",
        "",
        "| layers | forward outlined | forward inlined | ratio | "
        "training step outlined | training step inlined | ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for depth, forward, forward_inline, step, step_inline in rows:
        lines.append(
            f"| {depth} | {forward * 1e3:.1f} ms | "
            f"{forward_inline * 1e3:.1f} ms | "
            f"{forward / forward_inline:.3f} | {step * 1e3:.1f} ms | "
            f"{step_inline * 1e3:.1f} ms | {step / step_inline:.3f} |")
    lines.append("")
    pathlib.Path(args.output).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
