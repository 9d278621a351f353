#!/usr/bin/env python3
"""One training step compiled by Lamina against eager PyTorch on OpenBLAS.

The GPT-2 MLP (hidden 1024, inter 4096: fc1 + GELU(tanh), fc2, residual),
fp32, one thread, 512 and 2048 tokens; and a GPT-2 block (LayerNorm,
FusedQKV, softmax attention, output projection, MLP; hidden 256, 4 heads,
batch 8 of 64 tokens). A step is forward, loss, backward and
an SGD (momentum 0.9) step on the parameters. Each round runs both
contenders once, in separate processes pinned to one core (PyTorch with
LD_LIBRARY_PATH=.../openblas-pthread, on the fastest of its kernels for
the CPU), and the table reports medians over rounds of per-process
medians. It also reports the bytes the compiled forward saves for the
backward, with and without `checkpoint()` on fc1.

Each process first runs `--warmup` steps untimed: until then the heap of
either contender is still growing (a step faulted in tens of MiB of fresh
pages, an eighth of the compiled step's time at 2048 tokens), which is not
what training runs at.

With --bf16, the MLP's steps also run under torch.autocast("cpu",
dtype=torch.bfloat16) for both contenders (f32 master weights, bf16
matmuls; Lamina's on AVX512-BF16's vdpbf16ps where the CPU has it, eager
PyTorch's through oneDNN), as extra rows of the same run.

usage: bench/train_step.py [--rounds 3] [--steps 10] [--warmup 10] [--bf16]
                           [--output bench/results/train_step.md]
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
HIDDEN, INTER = 1024, 4096
TOKENS = [512, 2048]

# A GPT-2 block as the importer takes it: hidden 256, 4 heads, batch 8 of
# 64 tokens.
BLOCK_SHAPE = (8, 64, 256)

# The models both scripts run, as source: MLP(tokens) and Block.
MODEL = r"""
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(%(hidden)d, %(inter)d)
        self.act = nn.GELU(approximate="tanh")
        self.fc2 = nn.Linear(%(inter)d, %(hidden)d)
    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(x)))

class Block(nn.Module):
    def __init__(self, hidden=%(block_hidden)d, heads=4):
        super().__init__()
        import lamina
        self.hidden = hidden
        self.ln_1 = nn.LayerNorm(hidden)
        self.qkv = lamina.op.FusedQKV(hidden, heads, 1)
        self.proj = nn.Linear(hidden, hidden)
        self.scale = (hidden // heads) ** -0.5
        self.ln_2 = nn.LayerNorm(hidden)
        self.fc1 = nn.Linear(hidden, 4 * hidden)
        self.act = nn.GELU(approximate="tanh")
        self.fc2 = nn.Linear(4 * hidden, hidden)
    def forward(self, x):
        q, k, v = self.qkv(self.ln_1(x))
        q = q.permute(0, 2, 1, 3)
        k = k.permute(0, 2, 3, 1)
        v = v.permute(0, 2, 1, 3)
        probs = (torch.matmul(q, k) * self.scale).softmax(dim=-1)
        heads = torch.matmul(probs, v).permute(0, 2, 1, 3)
        merged = heads.reshape(x.shape[0], x.shape[1], self.hidden)
        h = x + self.proj(merged)
        return h + self.fc2(self.act(self.fc1(self.ln_2(h))))

def make(model_name, tokens):
    if model_name == "block":
        return Block(), torch.randn(*%(block_shape)r)
    return MLP(), torch.randn(tokens, %(hidden)d)
""" % {"hidden": HIDDEN, "inter": INTER, "block_hidden": BLOCK_SHAPE[2],
       "block_shape": BLOCK_SHAPE}

STEP = r"""
import statistics, sys, time
import torch
from torch import nn
torch.set_num_threads(1)
model_name, tokens, steps, contender, warmup, bf16 = (
    sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4],
    int(sys.argv[5]), sys.argv[6] == "1")

%(model)s
torch.manual_seed(0)
model, x = make(model_name, tokens)
if contender == "lamina":
    import lamina
    sch = lamina.create_schedule(model)
    model = lamina.build(sch, (x,))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)

def step():
    optimizer.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss = model(x).float().square().mean()
    loss.backward()
    optimizer.step()
    return loss

for _ in range(warmup):
    step()
times = []
for _ in range(steps):
    start = time.perf_counter()
    step()
    times.append(time.perf_counter() - start)
print(statistics.median(times))
""" % {"model": MODEL}

SAVED = r"""
import sys, torch
from torch import nn
import lamina
from lamina import _lamina

%(model)s
model_name, tokens, checkpoint = (sys.argv[1], int(sys.argv[2]),
                                  sys.argv[3] == "1")
model, x = make(model_name, tokens)
sch = lamina.create_schedule(model, example_inputs=(x,))
if checkpoint:
    sch["fc1"].checkpoint()
imported = sch.trace((x,))
ir = _lamina.transform_ir(sch.scheduled_ir(), "",
                          "lamina-generate-backward{function=%%s}" %% imported.entry)
forward = _lamina.Program(ir, imported.entry + "_forward", "lamina-cpu-pipeline")
sizes = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i64": 8}
saved = 0
for dtype, shape, _ in forward.results[imported.num_results:]:
    count = 1
    for dim in shape:
        count *= dim
    saved += count * sizes.get(str(dtype), 4)
print(saved)
""" % {"model": MODEL}


def run(code, args, blas_env):
    env = dict(blas_env, PYTHONPATH=str(BUILD / "python"))
    command = ["taskset", "-c", "0", sys.executable, "-c", code,
               *map(str, args)]
    out = subprocess.run(command, env=env, check=True, capture_output=True,
                         text=True).stdout
    return float(out.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--output", type=pathlib.Path)
    parser.add_argument("--bf16", action="store_true",
                        help="also the MLP's steps under bf16 autocast")
    args = parser.parse_args()

    blas_env = openblas_env(os.environ)
    rows = []
    cases = [("mlp", tokens, f"MLP, {tokens} tokens", 0)
             for tokens in TOKENS]
    cases.append(("block", 0, "block, {} × {} tokens, hidden {}".format(
        *BLOCK_SHAPE), 0))
    if args.bf16:
        cases += [("mlp", tokens, f"MLP, {tokens} tokens, bf16 autocast", 1)
                  for tokens in TOKENS]
    for model, tokens, label, bf16 in cases:
        eager, compiled = [], []
        for _ in range(args.rounds):
            eager.append(run(STEP, [model, tokens, args.steps, "eager",
                                    args.warmup, bf16], blas_env))
            compiled.append(run(STEP, [model, tokens, args.steps, "lamina",
                                       args.warmup, bf16], blas_env))
        saved = ["–", "–"]   # the f32 program's only
        if not bf16:
            saved = [f"{int(run(SAVED, [model, tokens, c], blas_env)) / 2**20:.1f}"
                     for c in (0, 1)]
        e, c = statistics.median(eager), statistics.median(compiled)
        rows.append(f"| {label} | {e * 1e3:.1f} | {c * 1e3:.1f} | "
                    f"{e / c:.2f}× | {saved[0]} | {saved[1]} |")
        print(rows[-1], flush=True)

    command = "/usr/bin/python3 bench/train_step.py " + " ".join(
        f"--{k} {v}" for k, v in (("rounds", args.rounds),
                                  ("steps", args.steps),
                                  ("warmup", args.warmup))) + (
        " --bf16" if args.bf16 else "")
    table = "\n".join([
        "# One training step: GPT-2 MLP and block, compiled vs eager (fp32"
        + (" and bf16 autocast" if args.bf16 else "") + ", one thread)",
        "",
        f"Command: `{command}` ({datetime.date.today()}, one core pinned per "
        "process).",
        "",
        f"MLP: hidden {HIDDEN}, inter {INTER}, x + fc2(GELU(fc1(x))). "
        "Block: LayerNorm, FusedQKV (4 heads), q·kᵀ scaled, softmax, ·v, the "
        "output projection, residual; LayerNorm, MLP (4× hidden), residual. "
        "loss = mean(y²), backward, SGD with momentum 0.9. Step times, "
        "after the warm-up steps, are medians "
        "over rounds of per-process medians; eager PyTorch runs on "
        f"{openblas_kernels(blas_env)}. "
        "Saved: the bytes the compiled forward keeps for the backward, "
        "without and with `checkpoint()` on fc1. bf16 autocast rows: both "
        "contenders' steps in `torch.autocast(\"cpu\", dtype=torch.bfloat16)` "
        "(f32 master weights; eager's bf16 matmuls through oneDNN).",
        "",
        "| model | eager ms | Lamina ms | speedup | saved MiB | saved MiB, "
        "fc1 checkpointed |",
        "|---|---|---|---|---|---|",
        *rows, ""])
    print(table)
    if args.output:
        args.output.write_text(table)


if __name__ == "__main__":
    main()
