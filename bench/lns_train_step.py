#!/usr/bin/env python3
"""One LNS training step (LNSLinear → relu → LNSLinear → mse_loss, plain
SGD): Lamina's compiled step (lamina.lns.compile_step) and its eager LNS
autograd against the NumPy spec of the same step (lamina.lns_numpy, about
the xlnstorch reference's speed), in one run, with identical codes
checked after every timed step.

usage: bench/lns_train_step.py [--rounds 3] [--output bench/results/lns_train_step.md]
"""

import argparse
import datetime
import os
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(pathlib.Path(os.environ.get("LAMINA_BUILD_DIR",
                                                   ROOT / "build")) / "python"))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from lamina import lns, lns_numpy  # noqa: E402

# (batch M, in K, hidden H, out N): the 64×256→256→256.
SHAPE = (64, 256, 256, 256)
LR = 0.01


class Mlp(lns.LNSModule):
    def __init__(self, k, h, n, f):
        super().__init__()
        self.fc1 = lns.LNSLinear(k, h, weight_f=f)
        self.fc2 = lns.LNSLinear(h, n, weight_f=f)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def codes_of(model):
    return [model.fc1.weight.codes.numpy(), model.fc1.bias.codes.numpy(),
            model.fc2.weight.codes.numpy(), model.fc2.bias.codes.numpy()]


def measure(f, rounds):
    torch.manual_seed(0)
    m, k, h, n = SHAPE
    batches = [(lns.lnstensor(torch.randn(m, k), f=f),
                lns.lnstensor(torch.randn(m, n) * 0.5, f=f))
               for _ in range(rounds + 1)]
    compiled, eager = Mlp(k, h, n, f), Mlp(k, h, n, f)
    eager.load_state_dict(compiled.state_dict())
    spec_params = codes_of(compiled)
    compiled_opt = lns.LNSSGD(compiled.lns_parameters(), lr=LR)
    eager_opt = lns.LNSSGD(eager.lns_parameters(), lr=LR)
    lr_code = int(compiled_opt.param_groups[0]["lr"].code_in(lns.Base(f=f)))
    start = time.perf_counter()
    step = lns.compile_step(compiled, F.mse_loss, compiled_opt, batches[0])
    step(*batches[0])  # compiles
    compile_s = time.perf_counter() - start
    # The first batch brings eager and the spec to the compiled state.
    eager_opt.zero_grad()
    F.mse_loss(eager(batches[0][0]), batches[0][1]).backward()
    eager_opt.step()
    _, spec_params, _ = lns_numpy.mlp_sgd_step(
        batches[0][0].codes.numpy(), batches[0][1].codes.numpy(),
        spec_params, lr_code, f)
    times = {"compiled": [], "eager": [], "spec": []}
    for x, t in batches[1:]:
        begin = time.perf_counter()
        loss = step(x, t)
        times["compiled"].append(time.perf_counter() - begin)
        begin = time.perf_counter()
        eager_opt.zero_grad()
        eager_loss = F.mse_loss(eager(x), t)
        eager_loss.backward()
        eager_opt.step()
        times["eager"].append(time.perf_counter() - begin)
        begin = time.perf_counter()
        spec_loss, spec_params, _ = lns_numpy.mlp_sgd_step(
            x.codes.numpy(), t.codes.numpy(), spec_params, lr_code, f)
        times["spec"].append(time.perf_counter() - begin)
        assert int(loss.codes) == int(eager_loss.codes) == int(spec_loss)
        for a, b, c in zip(codes_of(compiled), codes_of(eager), spec_params):
            assert np.array_equal(a, b) and np.array_equal(a, c), \
                "the three paths must give identical codes"
    return {name: statistics.median(v) for name, v in times.items()}, compile_s


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output", type=pathlib.Path)
    args = parser.parse_args()
    torch.set_num_threads(1)
    m, k, h, n = SHAPE
    macs = 3 * m * (k * h + h * n)  # forward, dX and dW of both layers
    rows = ["| f | NumPy spec | eager Lamina | compiled step | compiled vs spec "
            "| compiled vs eager | M LNS-MAC/s compiled | compile |",
            "|---|---|---|---|---|---|---|---|"]
    for f in (10, 23):
        t, compile_s = measure(f, args.rounds)
        rows.append(
            f"| {f} | {t['spec'] * 1e3:.0f} ms | {t['eager'] * 1e3:.0f} ms | "
            f"{t['compiled'] * 1e3:.1f} ms | {t['spec'] / t['compiled']:.1f}× | "
            f"{t['eager'] / t['compiled']:.1f}× | "
            f"{macs / t['compiled'] / 1e6:.0f} | {compile_s:.1f} s |")
        print(rows[-1], flush=True)
    table = "\n".join(rows)
    text = (f"# LNS training step\n\nLNSLinear({k}, {h}) → relu → "
            f"LNSLinear({h}, {n}) → mse_loss, plain SGD (lr {LR}), batch {m}, "
            f"one thread; medians of {args.rounds} steps per path, measured "
            f"side by side; identical codes in all three paths checked after "
            f"every step.\nThe compile column is compile_step plus its first "
            f"call.\n\n{table}\n\n"
            f"`/usr/bin/python3 bench/lns_train_step.py --rounds "
            f"{args.rounds}`, {datetime.date.today()}\n")
    if args.output:
        args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
