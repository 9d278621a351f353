#!/usr/bin/env python3
"""Compile time of whole GPT models by depth, at GPT-2-small width.

examples/gpt_models.py's TiedGPT (n_embd 768, 12 heads, vocabulary 50304,
block 64, input (1, 64)), fp32, one thread. For each depth, in fresh
processes:

- forward: `lamina.build(lamina.create_schedule(model))` in eval mode, then
  the first call under `torch.no_grad()`: seconds to its result;
- training pair: the same in train mode, the first call with targets and
  `loss.backward()`: seconds to the first step's gradients;
- step: the median time of a training step (forward, loss, backward) after
  that and two more untimed steps (the first steps of a process touch its
  memory for the first time, which on a virtual machine costs up to
  seconds), against eager PyTorch's in another process timed the same way
  (OpenBLAS, as bench/machine.py sets it up).

Each depth runs cold (an empty compile cache, LAMINA_CACHE_DIR a fresh
directory; LAMINA_TIMING=1, whose reports' totals give the seconds spent
in the training pair's compiles, MLIR pipelines and LLVM, apart from
tracing, differentiation and the first step's run), then warm: the same
builds in new processes that find the first ones' programs in the cache. The `LAMINA_TIMING=1` report of the
deepest training pair's cold compile (MLIR pipelines, translation, LLVM)
closes the table.

usage: bench/compile_time.py [--depths 1,2,4,8,12] [--steps 5] [--repeats 1]
                             [--pipeline lamina-cpu-pipeline{...}]
                             [--inline-blocks]
                             [--output bench/results/compile_time.md]
"""

import argparse
import datetime
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

from machine import openblas_env, openblas_kernels

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("LAMINA_BUILD_DIR", ROOT / "build"))
HIDDEN, HEADS, VOCAB, BLOCK = 768, 12, 50304, 64

WORKER = r"""
import logging, statistics, sys, time
import torch
torch.set_num_threads(1)
sys.path.insert(0, %(examples)r)
from gpt_models import GPTConfig, TiedGPT
depth, what, steps = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
pipeline = sys.argv[4]
config = GPTConfig(block_size=%(block)d, vocab_size=%(vocab)d, n_layer=depth,
                   n_head=%(heads)d, n_embd=%(hidden)d)
torch.manual_seed(0)
model = TiedGPT(config)
idx = torch.randint(0, config.vocab_size, (1, %(block)d))
targets = torch.roll(idx, -1, 1)
start = time.perf_counter()
# When each program is compiled or loaded: the compile's stage records (its
# last, "compiled in", comes after the first call's run).
stages = []
class Stages(logging.Handler):
    def emit(self, record):
        if "compiled in" not in record.getMessage():
            stages.append(time.perf_counter())
logging.getLogger("lamina").addHandler(Stages())
logging.getLogger("lamina").setLevel(logging.INFO)
if what != "eager":
    import lamina
    model = lamina.build(lamina.create_schedule(model), progress=False,
                         pipeline=pipeline)
if what == "forward":
    model.eval()
    with torch.no_grad():
        model(idx)
    print(time.perf_counter() - start)
    sys.exit()
def step():
    _, loss = model(idx, targets)
    loss.backward()
step()
first = time.perf_counter() - start
# With a warm cache the last record is the last program's load: the first
# step starts right after it.
ready = (stages[-1] if stages else start) - start
for _ in range(2 if steps else 0):
    step()
times = []
for _ in range(steps):
    begin = time.perf_counter()
    step()
    times.append(time.perf_counter() - begin)
print(first, ready, statistics.median(times))
""" % {"examples": str(ROOT / "examples"), "block": BLOCK, "vocab": VOCAB,
       "heads": HEADS, "hidden": HIDDEN}


def compile_seconds(report):
    """The seconds the `LAMINA_TIMING=1` reports in `report` add up to."""
    return sum(float(line.split()[-2]) for line in report.splitlines()
               if "Total Execution Time:" in line)


def run(depth, what, steps, env, pipeline, timing=False, cache=None):
    env = dict(env, OMP_NUM_THREADS="1",
               PYTHONPATH=str(BUILD / "python"))
    if cache is not None:
        env["LAMINA_CACHE_DIR"] = cache
    if timing:
        env["LAMINA_TIMING"] = "1"
    completed = subprocess.run(
        ["taskset", "-c", "0", sys.executable, "-c", WORKER, str(depth),
         what, str(steps), pipeline], env=env, capture_output=True,
        text=True, check=True)
    return [float(v) for v in completed.stdout.split()], completed.stderr


def measure_depth(depth, steps, pipeline, blas):
    """One sample of each column at `depth`: forward and training pair cold
    (an empty cache), then warm, then eager's step."""
    with tempfile.TemporaryDirectory() as cache:
        (forward,), _ = run(depth, "forward", 0, os.environ, pipeline,
                            cache=cache)
        (pair, _, step), report = run(depth, "train", steps, os.environ,
                                      pipeline, timing=True, cache=cache)
        compiles = compile_seconds(report)
        (warm_forward,), _ = run(depth, "forward", 0, os.environ, pipeline,
                                 cache=cache)
        (warm_pair, ready, _), _ = run(depth, "train", 1, os.environ,
                                       pipeline, cache=cache)
    (_, _, eager), _ = run(depth, "eager", steps, blas, pipeline)
    return (forward, pair, compiles, warm_forward, warm_pair, ready, step,
            eager)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", default="1,2,4,8,12")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=1,
                        help="samples of each cell (medians reported)")
    parser.add_argument("--pipeline", default="lamina-cpu-pipeline",
                        help="the CPU pipeline Lamina builds with")
    parser.add_argument("--inline-blocks", action="store_true",
                        help="differentiate every layer inline "
                             "(LAMINA_OUTLINE_BLOCKS=0), for comparison")
    parser.add_argument("--output",
                        default=str(ROOT / "bench/results/compile_time.md"))
    args = parser.parse_args()
    if args.inline_blocks:
        os.environ["LAMINA_OUTLINE_BLOCKS"] = "0"
    pipeline = args.pipeline
    depths = [int(d) for d in args.depths.split(",")]
    blas = openblas_env(os.environ)
    rows = []
    for depth in depths:
        samples = [measure_depth(depth, args.steps, pipeline, blas)
                   for _ in range(args.repeats)]
        row = (depth,) + tuple(statistics.median(column)
                               for column in zip(*samples))
        rows.append(row)
        (_, forward, pair, compiles, warm_forward, warm_pair, ready, step,
         eager) = row
        print(f"depth {depth}: forward {forward:.1f} s (warm "
              f"{warm_forward:.2f} s), training pair {pair:.1f} s "
              f"({compiles:.2f} s compiling; warm "
              f"{warm_pair:.2f} s, {ready:.2f} s to the first step's "
              f"start), step {step * 1e3:.0f} ms (eager "
              f"{eager * 1e3:.0f} ms)", flush=True)
    with tempfile.TemporaryDirectory() as cache:
        _, report = run(depths[-1], "train", 1, os.environ, pipeline,
                        timing=True, cache=cache)
    lines = [
        "# Compile time by depth",
        "",
        f"`{' '.join(['bench/compile_time.py'] + sys.argv[1:])}` on "
        f"{datetime.date.today()}: TiedGPT at GPT-2-small width (n_embd "
        f"{HIDDEN}, {HEADS} heads, vocabulary {VOCAB}), input (1, {BLOCK}), "
        "fp32, one thread pinned to one core, each cell a fresh process "
        f"(the median of {args.repeats}). "
        "Cold: an empty compile cache; warm: a new process finding the "
        "cold one's programs in the cache (build, load, first call; "
        "and to the first step's start: when the last program is loaded "
        "from the cache, its `lamina` logger record). "
        f"Eager PyTorch on {openblas_kernels(blas)}.",
        "",
        "| layers | forward cold | training pair cold | its compiles "
        "(MLIR + LLVM) | forward warm | training pair warm | to the first "
        "step's start, warm | step (Lamina) | step (eager) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (depth, forward, pair, compiles, warm_forward, warm_pair, ready,
         step, eager) in rows:
        lines.append(f"| {depth} | {forward:.1f} s | {pair:.1f} s | "
                     f"{compiles:.2f} s | {warm_forward:.2f} s | "
                     f"{warm_pair:.2f} s | {ready:.2f} s | "
                     f"{step * 1e3:.0f} ms | {eager * 1e3:.0f} ms |")
    first, last = rows[0], rows[-1]
    lines += ["", f"Depth {last[0]} against depth {first[0]}: the training "
              f"pair cold {last[2] / first[2]:.2f}×, its compiles "
              f"{last[3] / first[3]:.2f}×."]
    lines += ["", f"Stages of the {depths[-1]}-layer training pair's "
              "compiles (`LAMINA_TIMING=1`; the forward, then the "
              "backward):", "", "```",
              *[line for line in report.splitlines()
                if "Total" in line or "lamina-" in line or "LLVM" in line
                or "translate" in line],
              "```", ""]
    pathlib.Path(args.output).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
