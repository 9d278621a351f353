#!/usr/bin/env python3
"""F.cross_entropy's mean compiled by Lamina against eager PyTorch, forward
and forward + backward, one thread.

Logits [512, 32768] (a GPT head's 512 tokens over a 32k vocabulary) and
random targets. Each round times eager PyTorch and Lamina side by side, a
time in a round being the median of --repeat calls after a warm-up; the
table reports medians over rounds.

usage: bench/cross_entropy.py [--rounds 5] [--repeat 5]
                              [--output bench/results/cross_entropy.md]
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

ROWS, CLASSES = 512, 32768


class Loss(nn.Module):
    def forward(self, logits, targets):
        return F.cross_entropy(logits, targets)


def median_ms(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--output", type=pathlib.Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    logits = torch.randn(ROWS, CLASSES)
    targets = torch.randint(0, CLASSES, (ROWS,))
    eager = Loss()
    compiled = lamina.build(
        lamina.create_schedule(eager, example_inputs=(logits, targets)),
        (logits, targets))
    leaf = logits.clone().requires_grad_()

    def backward(model):
        def step():
            leaf.grad = None
            model(leaf, targets).backward()
        return step

    with torch.no_grad():
        torch.testing.assert_close(compiled(logits, targets),
                                   eager(logits, targets))
    cases = {"forward": (lambda: eager(logits, targets),
                         lambda: compiled(logits, targets)),
             "forward + backward": (backward(eager), backward(compiled))}
    times = {(case, who): [] for case in cases for who in ("eager", "lamina")}
    for _ in range(args.rounds):
        for case, (ours_eager, ours) in cases.items():
            with torch.no_grad() if case == "forward" else torch.enable_grad():
                times[(case, "eager")].append(median_ms(ours_eager,
                                                        args.repeat))
                times[(case, "lamina")].append(median_ms(ours, args.repeat))
    rows = []
    for case in cases:
        e = statistics.median(times[(case, "eager")])
        m = statistics.median(times[(case, "lamina")])
        rows.append(f"| {case} | {e:.1f} | {m:.1f} | {e / m:.2f}× |")
    command = "/usr/bin/python3 bench/cross_entropy.py " + " ".join(
        f"--{k} {v}" for k, v in (("rounds", args.rounds),
                                  ("repeat", args.repeat)))
    table = "\n".join([
        f"# F.cross_entropy on [{ROWS}, {CLASSES}] logits: Lamina vs eager "
        "PyTorch (fp32, one thread)",
        "",
        f"Command: `OMP_NUM_THREADS=1 taskset -c 1 {command}` "
        f"({datetime.date.today()}).",
        "",
        "The mean over random targets; forward + backward includes the "
        "logits' gradient. Times: medians over rounds of each round's "
        "median call.",
        "",
        "| case | eager ms | Lamina ms | Lamina speedup |",
        "|---|---|---|---|",
        *rows, ""])
    print(table)
    if args.output:
        args.output.write_text(table)


if __name__ == "__main__":
    main()
