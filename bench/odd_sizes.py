#!/usr/bin/env python3
"""Compile time and correctness of odd feature sizes: a language model's
head `nn.Linear(64, N, bias=False)` with `F.cross_entropy`, its training pair
(forward and backward) compiled for every N in --sizes, each checked against
eager PyTorch.

Each size compiles in a fresh schedule: the time is `lamina.build` plus the
first call and `loss.backward()` (tracing, the compile of the forward /
backward pair, the run), against eager's first step. A size fails when its
compile raises, its loss or gradients differ from eager's beyond fp32's
rtol = atol = 1e-5, or it takes longer than --limit seconds.

usage: bench/odd_sizes.py [--sizes 1-130,997,1009,1013] [--limit 2]
                          [--output bench/results/odd_sizes.md]
"""

import argparse
import datetime
import os
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(pathlib.Path(os.environ.get("LAMINA_BUILD_DIR",
                                                   ROOT / "build")) / "python"))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import lamina  # noqa: E402

N_EMBD, BATCH, BLOCK = 64, 8, 32


class Head(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.lm_head = nn.Linear(N_EMBD, vocab, bias=False)

    def forward(self, x, targets):
        logits = self.lm_head(x)
        return F.cross_entropy(logits.view(-1, logits.size(-1)),
                               targets.view(-1))


def parse_sizes(text):
    sizes = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        sizes += range(int(low), int(high or low) + 1)
    return sizes


def first_step(model, x, targets):
    model.zero_grad()
    loss = model(x, targets)
    loss.backward()
    return loss.item(), model.lm_head.weight.grad.clone()


def run(vocab):
    """(seconds to build and take the first step, eager's, the largest
    difference from eager's loss and gradient, or the error)."""
    torch.manual_seed(vocab)
    model = Head(vocab).train()
    eager = Head(vocab).train()
    eager.load_state_dict(model.state_dict())
    x = torch.randn(BATCH, BLOCK, N_EMBD)
    targets = torch.randint(0, vocab, (BATCH, BLOCK))
    start = time.perf_counter()
    try:
        compiled = lamina.build(lamina.create_schedule(model), (x, targets))
        loss, grad = first_step(compiled, x, targets)
    except Exception as error:  # noqa: BLE001 (reported in the table)
        return time.perf_counter() - start, None, str(error).splitlines()[0]
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    want_loss, want_grad = first_step(eager, x, targets)
    eager_seconds = time.perf_counter() - start
    torch.testing.assert_close(torch.tensor(loss), torch.tensor(want_loss),
                               rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(grad, want_grad, rtol=1e-5, atol=1e-5)
    return seconds, eager_seconds, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1-130,997,1009,1013")
    parser.add_argument("--limit", type=float, default=2.0)
    parser.add_argument("--output", type=pathlib.Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows, times, failures = [], [], []
    for vocab in parse_sizes(args.sizes):
        try:
            seconds, eager_seconds, error = run(vocab)
        except AssertionError as mismatch:
            seconds, eager_seconds = float("nan"), None
            error = "differs from eager: " + str(mismatch).splitlines()[0]
        if error is None and seconds > args.limit:
            error = f"over the {args.limit:g} s limit"
        if error is None:
            times.append(seconds)
        else:
            failures.append(vocab)
        eager_text = f"{eager_seconds * 1e3:.1f}" if eager_seconds else "-"
        rows.append(f"| {vocab} | {seconds:.2f} | {eager_text} | "
                    f"{error or 'ok'} |")
        print(rows[-1], flush=True)
    command = f"/usr/bin/python3 bench/odd_sizes.py --sizes {args.sizes} " \
              f"--limit {args.limit:g}"
    summary = (f"{len(times)} of {len(rows)} sizes ok; build + first step "
               f"median {statistics.median(times):.2f} s, max "
               f"{max(times):.2f} s" if times else "no size compiled")
    table = "\n".join([
        f"# Odd vocabularies: `nn.Linear({N_EMBD}, N, bias=False)` + "
        f"`F.cross_entropy`, [{BATCH}, {BLOCK}] tokens, trained compiled",
        "",
        f"Command: `OMP_NUM_THREADS=1 {command}` ({datetime.date.today()}).",
        "",
        f"{summary}; failed: {failures or 'none'}.",
        "",
        "| N | build + first step s | eager first step ms | result |",
        "|---|---|---|---|",
        *rows, ""])
    if args.output:
        args.output.write_text(table)
    print(summary)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
