#!/usr/bin/env python3
"""The main job: compile and run examples/gpt2_block.mlir on the CPU.

Feeds seeded weights and activations, checks the compiled block against an
independent eager-PyTorch implementation of the same block (dropout masks from
the reference Philox stream, see lamina.philox) at PyTorch's default float32
tolerance, and reports the time per call.
"""

import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parents[1]
# The lamina package lives in the build tree, next to its extension.
sys.path.insert(0, str(pathlib.Path(os.environ.get("LAMINA_BUILD_DIR",
                                                   ROOT / "build")) / "python"))
from lamina import philox  # noqa: E402
from lamina.tools import tool  # noqa: E402

BATCH, SEQ, HIDDEN, HEADS, INNER = 2, 16, 64, 4, 256
HEAD_DIM = HIDDEN // HEADS
P_DROP, SEED = 0.1, 2024


def make_inputs(rng):
    def param(*shape, scale):
        return (rng.standard_normal(shape) * scale).astype(np.float32)
    return {
        "x": param(BATCH, SEQ, HIDDEN, scale=1.0),
        "w_qkv": param(3 * HIDDEN, HIDDEN, scale=HIDDEN ** -0.5),
        "b_qkv": param(3 * HIDDEN, scale=0.1),
        "w_proj": param(HIDDEN, HIDDEN, scale=HIDDEN ** -0.5),
        "b_proj": param(HIDDEN, scale=0.1),
        "w_fc_in": param(INNER, HIDDEN, scale=HIDDEN ** -0.5),
        "b_fc_in": param(INNER, scale=0.1),
        "w_fc_out": param(HIDDEN, INNER, scale=INNER ** -0.5),
        "b_fc_out": param(HIDDEN, scale=0.1),
    }


def eager_block(t):
    """The block in eager PyTorch, written from the spec, not from the IR."""
    t = {k: torch.from_numpy(v) for k, v in t.items()}
    x = t["x"]
    qkv = (x @ t["w_qkv"].T + t["b_qkv"]).view(BATCH, SEQ, HEADS, HEAD_DIM, 3)
    q, k, v = (qkv[..., i].transpose(1, 2) for i in range(3))  # [B, H, S, D]
    scores = q @ k.transpose(-1, -2) / HEAD_DIM ** 0.5
    causal = torch.ones(SEQ, SEQ, dtype=torch.bool).triu(1)
    probs = F.softmax(scores.masked_fill(causal, float("-inf")), dim=-1)
    context = (probs @ v).transpose(1, 2).reshape(BATCH, SEQ, HIDDEN)
    h1 = x + (context @ t["w_proj"].T + t["b_proj"])
    inner = F.gelu(h1 @ t["w_fc_in"].T + t["b_fc_in"], approximate="tanh")
    pre_dropout = (inner @ t["w_fc_out"].T + t["b_fc_out"]).numpy()
    mlp = philox.apply_dropout(pre_dropout, P_DROP, SEED, offset=0)
    return (h1 + torch.from_numpy(mlp)).numpy()


def main():
    inputs = make_inputs(np.random.default_rng(0))
    reference = eager_block(inputs)
    with tempfile.TemporaryDirectory() as work:
        work = pathlib.Path(work)
        args = [tool("lamina-run"), str(ROOT / "examples" / "gpt2_block.mlir"),
                "--entry=gpt2_block", "--repeat=50",
                f"--output-dir={work}"]
        for name, value in inputs.items():
            np.save(work / f"{name}.npy", value)
            args.append(f"--input={work / name}.npy")
        args.append(f"--input=i64:{SEED}")
        np.save(work / "reference.npy", reference)
        # PyTorch's default float32 tolerance (torch.testing.assert_close).
        args += [f"--reference={work / 'reference.npy'}", "--rtol=1.3e-6",
                 "--atol=1e-5"]
        print("compiling and running examples/gpt2_block.mlir with "
              "lamina-cpu-pipeline")
        completed = subprocess.run(args, text=True)
        if completed.returncode != 0:
            sys.exit("the compiled block does not match eager PyTorch")
        out = np.load(work / "result0.npy")
    print(f"gpt2_block: output {out.shape} matches eager PyTorch, training-"
          f"mode dropout (p={P_DROP}, seed {SEED}) included")


if __name__ == "__main__":
    main()
