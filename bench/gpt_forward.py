#!/usr/bin/env python3
"""Whole-model GPT-2 forward compiled by Lamina against eager PyTorch on
OpenBLAS, in tokens per second.

The model is examples/gpt_models.py's TiedGPT as written (F.layer_norm,
nn.GELU, causal attention with a mask buffer, tied head; logits of the last
position, as at generation): 4 layers, hidden 256, 4 heads, sequence 128,
batch 8, vocabulary 50304, fp32, one thread, eval mode. Each round runs both
contenders once, in separate processes pinned to one core (PyTorch with
LD_LIBRARY_PATH=.../openblas-pthread, on the fastest of its kernels for
the CPU), and the table reports medians over rounds of per-process medians
of one forward call.

usage: bench/gpt_forward.py [--rounds 3] [--calls 10]
                            [--output bench/results/gpt_forward.md]
"""

import argparse
import datetime
import os
import pathlib
import statistics
import subprocess
import sys

from machine import openblas_env, openblas_kernels

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("LAMINA_BUILD_DIR", ROOT / "build"))
LAYERS, HIDDEN, HEADS, SEQUENCE, BATCH, VOCAB = 4, 256, 4, 128, 8, 50304

CALL = r"""
import statistics, sys, time
import torch
torch.set_num_threads(1)
sys.path.insert(0, %(examples)r)
from gpt_models import GPTConfig, TiedGPT
calls, contender = int(sys.argv[1]), sys.argv[2]
config = GPTConfig(block_size=%(sequence)d, vocab_size=%(vocab)d,
                   n_layer=%(layers)d, n_head=%(heads)d, n_embd=%(hidden)d)
torch.manual_seed(0)
model = TiedGPT(config).eval()
idx = torch.randint(0, config.vocab_size, (%(batch)d, %(sequence)d))
if contender == "lamina":
    import lamina
    model = lamina.build(lamina.create_schedule(model), (idx,))
with torch.no_grad():
    model(idx)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        model(idx)
        times.append(time.perf_counter() - start)
print(statistics.median(times))
""" % {"examples": str(ROOT / "examples"), "sequence": SEQUENCE,
       "vocab": VOCAB, "layers": LAYERS, "heads": HEADS, "hidden": HIDDEN,
       "batch": BATCH}


def run(contender, calls, blas_env):
    env = dict(blas_env, PYTHONPATH=str(BUILD / "python"))
    command = ["taskset", "-c", "0", sys.executable, "-c", CALL, str(calls),
               contender]
    out = subprocess.run(command, env=env, check=True, capture_output=True,
                         text=True).stdout
    return float(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--output", type=pathlib.Path)
    args = parser.parse_args()

    blas_env = openblas_env(os.environ)
    eager, compiled = [], []
    for _ in range(args.rounds):
        eager.append(run("eager", args.calls, blas_env))
        compiled.append(run("lamina", args.calls, blas_env))
        print(f"eager {eager[-1] * 1e3:.1f} ms, Lamina "
              f"{compiled[-1] * 1e3:.1f} ms", flush=True)
    e, c = statistics.median(eager), statistics.median(compiled)
    tokens = BATCH * SEQUENCE
    command = "/usr/bin/python3 bench/gpt_forward.py " + " ".join(
        f"--{k} {v}" for k, v in (("rounds", args.rounds),
                                  ("calls", args.calls)))
    table = "\n".join([
        "# Whole-model GPT-2 forward, compiled vs eager (fp32, one thread)",
        "",
        f"Command: `{command}` ({datetime.date.today()}, one core pinned per "
        "process).",
        "",
        f"examples/gpt_models.py's TiedGPT as written: {LAYERS} layers, "
        f"hidden {HIDDEN}, {HEADS} heads, sequence {SEQUENCE}, batch "
        f"{BATCH}, vocabulary {VOCAB}, eval mode, logits of the last "
        "position. Times are medians over rounds of per-process medians of "
        "one call; eager PyTorch runs on " + openblas_kernels(blas_env) + ".",
        "",
        "| contender | ms per call | tokens/s | vs eager |",
        "|---|---|---|---|",
        f"| eager PyTorch | {e * 1e3:.1f} | {tokens / e:,.0f} | 1.00× |",
        f"| Lamina | {c * 1e3:.1f} | {tokens / c:,.0f} | {e / c:.2f}× |",
        ""])
    print(table)
    if args.output:
        args.output.write_text(table)


if __name__ == "__main__":
    main()
