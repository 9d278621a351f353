#!/usr/bin/env python3
"""Generation with the model's own `generate`: Lamina's prefill and decode
steps with a key/value cache against eager PyTorch, in tokens per second.

The model is test/python/llama_model.py's LLaMA-2 as single-file
implementations write it (RMSNorm in float, rotary tables, grouped-query
attention through repeat_kv, additive causal mask, SwiGLU, tied head),
fp32, one thread, batch 1, greedy. Its `generate` calls the model on the
whole sequence so far at every token: eager PyTorch computes every position
again, Lamina serves the call with one decode step (runtime/generation.py).
Prefill: one call on the prompt (for Lamina a plain compiled call). Decode:
the `generate` loop per new token.
Each round runs both contenders once, in separate processes pinned to one
core (PyTorch on the fastest OpenBLAS kernels for the CPU); the table
reports medians over rounds. The decode step reads every weight once (the
tied embedding's as the head) and the cache up to the maximum length:
those bytes per step over the time, against one core's streaming read
bandwidth (bench/probes/stream_read.c).

usage: bench/generation.py [--rounds 3] [--tokens 128]
                           [--output bench/results/generation.md]
"""

import argparse
import datetime
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

from machine import openblas_env, openblas_kernels

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("LAMINA_BUILD_DIR", ROOT / "build"))
CONFIG = dict(dim=512, n_layers=4, n_heads=8, n_kv_heads=4, vocab_size=4096,
              hidden_dim=1376, max_seq_len=256)
PROMPT = 32

CALL = r"""
import json, statistics, sys, time
import torch
torch.set_num_threads(1)
sys.path.insert(0, %(tests)r)
from llama_model import Llama, LlamaArgs
tokens, contender = int(sys.argv[1]), sys.argv[2]
torch.manual_seed(0)
model = Llama(LlamaArgs(**%(config)r)).eval()
prompt = torch.randint(0, model.params.vocab_size, (1, %(prompt)d))
if contender == "lamina":
    import lamina
    model = lamina.build(lamina.create_schedule(model)).eval()
    model.generate(prompt, 2, temperature=0.0)  # compiles
with torch.no_grad():
    model(prompt)
    prefill = []
    for _ in range(5):
        start = time.perf_counter()
        model(prompt)
        prefill.append(time.perf_counter() - start)
start = time.perf_counter()
out = model.generate(prompt, tokens, temperature=0.0)
decode = (time.perf_counter() - start) / tokens
print(json.dumps({"prefill": statistics.median(prefill), "decode": decode,
                  "tokens": out[0].tolist(),
                  "parameters": sum(p.numel() for p in model.parameters())}))
""" % {"tests": str(ROOT / "test" / "python"), "config": CONFIG,
       "prompt": PROMPT}


def run(contender, tokens, blas_env):
    env = dict(blas_env, PYTHONPATH=str(BUILD / "python"),
               LAMINA_PROGRESS="0")
    command = ["taskset", "-c", "0", sys.executable, "-c", CALL, str(tokens),
               contender]
    out = subprocess.run(command, env=env, check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def stream_read_bandwidth():
    """One core's streaming read bandwidth, GB/s."""
    with tempfile.TemporaryDirectory() as work:
        binary = pathlib.Path(work) / "stream_read"
        subprocess.run(["clang-22", "-O3", "-march=native", "-o", str(binary),
                        str(ROOT / "bench" / "probes" / "stream_read.c")],
                       check=True)
        out = subprocess.run(["taskset", "-c", "0", str(binary)], check=True,
                             capture_output=True, text=True).stdout
    return float(out.split()[0])


def decode_bytes(parameters):
    """Bytes a decode step reads: every parameter once, and both caches
    (keys and values, repeated to every query head) over the maximum
    length, per layer."""
    c = CONFIG
    cache = 2 * c["n_layers"] * c["dim"] * c["max_seq_len"]
    return 4 * (parameters + cache)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--output", type=pathlib.Path)
    args = parser.parse_args()

    blas_env = openblas_env(os.environ)
    eager, compiled = [], []
    for _ in range(args.rounds):
        eager.append(run("eager", args.tokens, blas_env))
        compiled.append(run("lamina", args.tokens, blas_env))
        if eager[-1]["tokens"] != compiled[-1]["tokens"]:
            sys.exit("the generated tokens differ from eager PyTorch's")
        print(f"prefill: eager {eager[-1]['prefill'] * 1e3:.2f} ms, Lamina "
              f"{compiled[-1]['prefill'] * 1e3:.2f} ms; decode: eager "
              f"{eager[-1]['decode'] * 1e3:.2f} ms, Lamina "
              f"{compiled[-1]['decode'] * 1e3:.2f} ms a token", flush=True)
    bandwidth = stream_read_bandwidth()
    median = lambda runs, key: statistics.median(r[key] for r in runs)  # noqa
    ep, cp = median(eager, "prefill"), median(compiled, "prefill")
    ed, cd = median(eager, "decode"), median(compiled, "decode")
    read = decode_bytes(compiled[0]["parameters"]) / cd / 1e9
    command = "/usr/bin/python3 bench/generation.py " + " ".join(
        f"--{k} {v}" for k, v in (("rounds", args.rounds),
                                  ("tokens", args.tokens)))
    shape = ", ".join(f"{k} {v}" for k, v in CONFIG.items())
    table = "\n".join([
        "# Generation: prefill and decode with a key/value cache (fp32, one "
        "thread)",
        "",
        f"Command: `{command}` ({datetime.date.today()}, one core pinned per "
        "process).",
        "",
        f"test/python/llama_model.py's LLaMA-2 as written ({shape}), batch 1, "
        f"a prompt of {PROMPT} tokens, {args.tokens} tokens generated "
        "greedily by the model's own `generate` (both contenders generate "
        "the same tokens). Eager PyTorch, on " + openblas_kernels(blas_env) +
        ", computes the whole sequence at every token, as the model is "
        "written; Lamina runs the prompt's call as a plain compiled call "
        "(the prefill column), the next as a prefill filling the cache, and "
        "each later call as one decode step. Medians over rounds.",
        "",
        "| contender | prefill ms | prefill tokens/s | decode ms/token | "
        "decode tokens/s | vs eager |",
        "|---|---|---|---|---|---|",
        f"| eager PyTorch | {ep * 1e3:.2f} | {PROMPT / ep:,.0f} | "
        f"{ed * 1e3:.2f} | {1 / ed:,.0f} | 1.00× |",
        f"| Lamina | {cp * 1e3:.2f} | {PROMPT / cp:,.0f} | {cd * 1e3:.2f} | "
        f"{1 / cd:,.0f} | prefill {ep / cp:.2f}×, decode {ed / cd:.2f}× |",
        "",
        f"A decode step reads {decode_bytes(compiled[0]['parameters']) / 1e6:.1f} MB "
        f"(weights and both caches at the maximum length): {read:.1f} GB/s, "
        f"{100 * read / bandwidth:.0f}% of one core's streaming read "
        f"bandwidth ({bandwidth:.1f} GB/s, bench/probes/stream_read.c).",
        ""])
    print(table)
    if args.output:
        args.output.write_text(table)


if __name__ == "__main__":
    main()
