#!/usr/bin/env python3
"""Training steps of small LNS networks on MNIST-sized data: xlnstorch's
MNIST example (LNSLinear(784, 100) → relu → LNSLinear(100, 10) → relu →
log_softmax → NLLLoss, LNSSGD with momentum 0.9, batch 128) and a small
CNN (LNSConv2d(1, 8, 5) → relu → flatten → LNSLinear(4608, 10) →
log_softmax → NLLLoss, batch 64). Lamina's compiled step
(lamina.lns.compile_step) and its eager LNS autograd against the NumPy
spec of the same step (lamina.lns.numpy_spec, about the reference's speed),
side by side in one run, identical codes in all three checked after every
timed step. Images are uniform in [0, 1) (MNIST's shape and range; the
data set itself is not needed to time a step).

usage: bench/lns_network_step.py [--rounds 3] [--output bench/results/lns_network_step.md]
"""

import argparse
import datetime
import os
import pathlib
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(pathlib.Path(os.environ.get("LAMINA_BUILD_DIR",
                                                   ROOT / "build")) / "python"))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from lamina import lns  # noqa: E402
from lamina.lns import numpy_spec as spec  # noqa: E402
from lamina.lns.convolution import LNSConv2d  # noqa: E402

LR, MOMENTUM = 0.1, 0.9


class Mlp(lns.LNSModule):
    """xlnstorch's MNIST example network, as written there."""

    def __init__(self, f):
        super().__init__()
        self.fc1 = lns.LNSLinear(784, 100, weight_f=f)
        self.fc2 = lns.LNSLinear(100, 10, weight_f=f)

    def forward(self, x):
        x = x.view(-1, 784)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return F.log_softmax(x, dim=1)

    def layers(self):
        return [self.fc1, self.fc2]


class Cnn(lns.LNSModule):
    def __init__(self, f):
        super().__init__()
        self.conv = LNSConv2d(1, 8, 5, weight_f=f)
        self.fc = lns.LNSLinear(8 * 24 * 24, 10, weight_f=f)

    def forward(self, x):
        h = F.relu(self.conv(x))
        return F.log_softmax(self.fc(h.view(h.shape[0], -1)), dim=1)

    def layers(self):
        return [self.conv, self.fc]


NETWORKS = {"MNIST MLP (xlnstorch's example)": (Mlp, 128, spec.mnist_mlp_step),
            "CNN": (Cnn, 64, spec.mnist_cnn_step)}


def codes_of(model):
    return [c for layer in model.layers()
            for c in (layer.weight.codes.numpy(), layer.bias.codes.numpy())]


def measure(make, batch, spec_step, f, rounds):
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    batches = [(lns.lnstensor(torch.rand(batch, 1, 28, 28,
                                         generator=generator), f=f),
                torch.randint(0, 10, (batch,), generator=generator))
               for _ in range(rounds + 2)]
    compiled, eager = make(f), make(f)
    eager.load_state_dict(compiled.state_dict())
    spec_params = codes_of(compiled)
    compiled_opt = lns.LNSSGD(compiled.lns_parameters(), lr=LR,
                              momentum=MOMENTUM)
    eager_opt = lns.LNSSGD(eager.lns_parameters(), lr=LR, momentum=MOMENTUM)
    base = lns.Base(f=f)
    group = compiled_opt.param_groups[0]
    hp = dict(lr=int(group["lr"].code_in(base)),
              momentum=int(group["momentum"].code_in(base)),
              dampening=spec.ZERO, weight_decay=spec.ZERO, nesterov=False,
              maximize=False)
    states = [{} for _ in spec_params]
    loss_fn = torch.nn.NLLLoss()
    start = time.perf_counter()
    step = lns.compile_step(compiled, loss_fn, compiled_opt, batches[0])
    # The first two steps compile the program without and with momentum
    # buffers; they bring eager and the spec to the compiled state.
    for x, t in batches[:2]:
        step(x, t)
    compile_s = time.perf_counter() - start
    for x, t in batches[:2]:
        eager_opt.zero_grad()
        loss_fn(eager(x), t).backward()
        eager_opt.step()

    def spec_images(x):
        codes = x.codes.numpy()
        return codes.reshape(codes.shape[0], -1) if make is Mlp else codes

    for x, t in batches[:2]:
        _, spec_params = spec_step(spec_images(x), t.numpy(), spec_params,
                                   states, hp, f)
    times = {"compiled": [], "eager": [], "spec": []}
    for x, t in batches[2:]:
        begin = time.perf_counter()
        loss = step(x, t)
        times["compiled"].append(time.perf_counter() - begin)
        begin = time.perf_counter()
        eager_opt.zero_grad()
        eager_loss = loss_fn(eager(x), t)
        eager_loss.backward()
        eager_opt.step()
        times["eager"].append(time.perf_counter() - begin)
        begin = time.perf_counter()
        spec_loss, spec_params = spec_step(spec_images(x), t.numpy(),
                                           spec_params, states, hp, f)
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
    # Cold compiles: a compile cache of its own, empty.
    os.environ["LAMINA_CACHE_DIR"] = tempfile.mkdtemp(prefix="lamina-bench-")
    rows = ["| network | batch | f | NumPy spec | eager Lamina | compiled step "
            "| compiled vs spec | compiled vs eager | compile |",
            "|---|---|---|---|---|---|---|---|---|"]
    for name, (make, batch, spec_step) in NETWORKS.items():
        for f in (10, 23):
            t, compile_s = measure(make, batch, spec_step, f, args.rounds)
            rows.append(
                f"| {name} | {batch} | {f} | {t['spec'] * 1e3:.0f} ms | "
                f"{t['eager'] * 1e3:.0f} ms | {t['compiled'] * 1e3:.1f} ms | "
                f"{t['spec'] / t['compiled']:.1f}× | "
                f"{t['eager'] / t['compiled']:.1f}× | {compile_s:.1f} s |")
            print(rows[-1], flush=True)
    table = "\n".join(rows)
    text = (f"# LNS network training steps\n\nxlnstorch's MNIST example "
            f"network and a small CNN on 28×28 images, NLLLoss after "
            f"log_softmax, LNSSGD (lr {LR}, momentum {MOMENTUM}), one thread; "
            f"medians of {args.rounds} steps per path, measured side by side; "
            f"identical codes in all three paths checked after every step.\n"
            f"The compile column is compile_step plus its first two calls "
            f"(the programs without and with momentum buffers), cold (an "
            f"empty compile cache).\n\n"
            f"{table}\n\n`/usr/bin/python3 bench/lns_network_step.py "
            f"--rounds {args.rounds}`, {datetime.date.today()}\n")
    if args.output:
        args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
