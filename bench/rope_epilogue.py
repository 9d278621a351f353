#!/usr/bin/env python3
"""A rotary embedding as its projection's epilogue.

LLaMA's query projection x·Wᵀ viewed as [batch, seq, heads, head_dim] and
rotated in interleaved pairs (lamina.rope), fp32, one thread pinned to one
core, compiled by lamina-run three ways:

- fused: lamina-cpu-pipeline{fuse-rope=true}, the rotation the matmul's
  epilogue on the register tile (lamina-fuse-epilogues{rope=true});
- apart: lamina-cpu-pipeline (the default), the projection, then the
  rotation's own pass over its result;
- projection alone, without the rotation: what the fused form costs beyond
  the matmul.

Prefill (a sequence at once) and decode (one token) at LLaMA-7B's width
(dim 4096, 32 heads of 128) and at a smaller one. Each round runs every
contender once (`lamina-run --repeat`, the compile cache off); the table
reports medians over rounds of per-process medians.

usage: bench/rope_epilogue.py [--rounds 5] [--repeat 10]
                              [--output bench/results/rope_epilogue.md]
"""

import argparse
import datetime
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

from machine import cpu_model

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(pathlib.Path(os.environ.get("LAMINA_BUILD_DIR",
                                                   ROOT / "build")) / "python"))
from lamina.tools import tool  # noqa: E402

# (tokens, dim, heads).
SHAPES = [(512, 2048, 16), (512, 4096, 32), (1, 4096, 32)]

PROGRAM = """func.func @q(%x: tensor<1x{t}x{d}xf32>, %w: tensor<{d}x{d}xf32>,
             %cos: tensor<1x{t}x1x{a}xf32>, %sin: tensor<1x{t}x1x{a}xf32>)
    -> tensor<1x{t}x{h}x{hd}xf32> {{
  %0 = lamina.linear "wq" %x, %w : (tensor<1x{t}x{d}xf32>, tensor<{d}x{d}xf32>) -> tensor<1x{t}x{d}xf32>
  %1 = tensor.expand_shape %0 [[0], [1], [2, 3]] output_shape [1, {t}, {h}, {hd}] : tensor<1x{t}x{d}xf32> into tensor<1x{t}x{h}x{hd}xf32>
  {rope}
}}
"""
ROTATE = """%2 = lamina.rope "attention" %1, %cos, %sin interleaved : tensor<1x{t}x{h}x{hd}xf32>, tensor<1x{t}x1x{a}xf32>
  return %2 : tensor<1x{t}x{h}x{hd}xf32>"""
ALONE = "return %1 : tensor<1x{t}x{h}x{hd}xf32>"

CONTENDERS = [("fused", ROTATE, "lamina-cpu-pipeline{fuse-rope=true}"),
              ("apart", ROTATE, "lamina-cpu-pipeline"),
              ("projection alone", ALONE, "lamina-cpu-pipeline")]


def program(tokens, dim, heads, rope):
    sizes = dict(t=tokens, d=dim, h=heads, hd=dim // heads,
                 a=dim // heads // 2)
    return PROGRAM.format(rope=rope.format(**sizes), **sizes)


def median_ms(path, pipeline, repeat):
    env = dict(os.environ, LAMINA_CACHE="0", OMP_NUM_THREADS="1")
    out = subprocess.run(
        ["taskset", "-c", "0", tool("lamina-run"), str(path), "--entry=q",
         "--random-inputs", f"--repeat={repeat}", f"--pipeline={pipeline}"],
        env=env, check=True, capture_output=True, text=True).stdout
    return float(re.search(r"median ([0-9.]+) ms", out).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--output",
                        default=str(ROOT / "bench/results/rope_epilogue.md"))
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for tokens, dim, heads in SHAPES:
            times = {name: [] for name, _, _ in CONTENDERS}
            paths = {}
            for name, rope, _ in CONTENDERS:
                paths[name] = pathlib.Path(work) / f"{name[:5]}.mlir"
                paths[name].write_text(program(tokens, dim, heads, rope))
            for _ in range(args.rounds):
                for name, _, pipeline in CONTENDERS:
                    times[name].append(
                        median_ms(paths[name], pipeline, args.repeat))
            row = {name: statistics.median(t) for name, t in times.items()}
            rows.append(((tokens, dim, heads), row))
            print(tokens, dim, heads, row, flush=True)
    command = ("/usr/bin/python3 bench/rope_epilogue.py "
               f"--rounds {args.rounds} --repeat {args.repeat}")
    lines = [
        "# A rotary embedding as its projection's epilogue",
        "",
        f"`{command}` on {datetime.date.today()}, {cpu_model()}, one "
        "thread pinned to one core, fp32; medians over rounds of "
        "`lamina-run --repeat` medians (compile cache off).",
        "",
        "| tokens × dim (heads) | fused | apart | projection alone | "
        "apart / fused | fused − projection |",
        "|---|---|---|---|---|---|",
    ]
    for (tokens, dim, heads), row in rows:
        fused, apart = row["fused"], row["apart"]
        alone = row["projection alone"]
        lines.append(f"| {tokens} × {dim} ({heads}) | {fused:.2f} ms | "
                     f"{apart:.2f} ms | {alone:.2f} ms | "
                     f"{apart / fused:.3f}× | {fused - alone:+.2f} ms |")
    lines.append("")
    pathlib.Path(args.output).write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
