"""A character-level GPT trained the way nanoGPT's train.py trains one,
with the compiled model in the model's place: gradient accumulation, AdamW
groups from the model's `configure_optimizers`, a warm-up + cosine learning
rate, gradient clipping at 1.0, `estimate_loss` switching to eval mode and
back, the model's `estimate_mfu`, a checkpoint saved and resumed, and
sampling with the model's `generate`. The corpus is this repository's own
documentation, read character by character.

    python3 char_train.py                      # compiled by Lamina
    python3 char_train.py --eager              # the same run in PyTorch
    python3 char_train.py --dropout=0.1 --max_iters=40
    python3 char_train.py --out_dir=ckpt --max_iters=10
    python3 char_train.py --out_dir=ckpt --init_from=resume --max_iters=20

`train(**settings)` runs it from Python and returns what it logged.
"""

import dataclasses
import math
import os
import pathlib
import sys
import time

import torch

import lamina
from gpt_models import GPTConfig, TiedGPT

REPOSITORY = pathlib.Path(__file__).resolve().parents[1]


@dataclasses.dataclass
class Settings:
    # the model (nanoGPT's shakespeare_char, scaled down)
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 64
    block_size: int = 32
    dropout: float = 0.0
    bias: bool = False
    # the data and the loop
    batch_size: int = 8
    gradient_accumulation_steps: int = 2
    max_iters: int = 20
    eval_interval: int = 10
    eval_iters: int = 2
    log_interval: int = 1
    # AdamW and its schedule
    learning_rate: float = 1e-3
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0
    warmup_iters: int = 5
    lr_decay_iters: int = 20
    min_lr: float = 1e-4
    # running
    eager: bool = False
    out_dir: str = ""
    init_from: str = "scratch"
    seed: int = 1337
    sample_tokens: int = 40
    quiet: bool = False


class Corpus:
    """This repository's README and docs as one text: characters, their
    codes, and a 90/10 train/validation split."""

    def __init__(self):
        files = [REPOSITORY / "README.md",
                 *sorted((REPOSITORY / "docs").glob("*.md"))]
        text = "\n".join(path.read_text() for path in files)
        self.chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}
        data = torch.tensor([self.stoi[c] for c in text], dtype=torch.long)
        split = int(0.9 * len(data))
        self.splits = {"train": data[:split], "val": data[split:]}

    def decode(self, codes):
        return "".join(self.chars[i] for i in codes)


def train(**overrides):
    """Runs the loop; returns {"losses": per-iteration training losses,
    "evals": (iteration, train loss, val loss), "sample": text,
    "model": the model it trained (compiled unless eager)}."""
    s = Settings(**overrides)
    say = (lambda *a: None) if s.quiet else print
    torch.manual_seed(s.seed)
    corpus = Corpus()
    batches = torch.Generator().manual_seed(s.seed)

    def get_batch(split):
        data = corpus.splits[split]
        ix = torch.randint(len(data) - s.block_size, (s.batch_size,),
                           generator=batches)
        x = torch.stack([data[i:i + s.block_size] for i in ix])
        y = torch.stack([data[i + 1:i + 1 + s.block_size] for i in ix])
        return x, y

    model_args = dict(n_layer=s.n_layer, n_head=s.n_head, n_embd=s.n_embd,
                      block_size=s.block_size, bias=s.bias,
                      vocab_size=len(corpus.chars), dropout=s.dropout)
    iter_num, best_val_loss, checkpoint, resumed_batch = 0, 1e9, None, None
    if s.init_from == "resume":
        checkpoint = torch.load(os.path.join(s.out_dir, "ckpt.pt"))
        model_args = checkpoint["model_args"]
        iter_num = checkpoint["iter_num"]
        best_val_loss = checkpoint["best_val_loss"]
        batches.set_state(checkpoint["batch_rng_state"])
        resumed_batch = checkpoint["batch"]
    model = TiedGPT(GPTConfig(**model_args))
    if not s.eager:
        model = lamina.build(lamina.create_schedule(model))
    if checkpoint is not None:
        model.load_state_dict(checkpoint["model"])
    optimizer = model.configure_optimizers(s.weight_decay, s.learning_rate,
                                           (s.beta1, s.beta2), "cpu")
    if checkpoint is not None:
        optimizer.load_state_dict(checkpoint["optimizer"])
        # (After the model's initialisation, which draws from it.)
        torch.set_rng_state(checkpoint["rng_state"])
    checkpoint = None

    def get_lr(it):
        if it < s.warmup_iters:
            return s.learning_rate * (it + 1) / (s.warmup_iters + 1)
        if it > s.lr_decay_iters:
            return s.min_lr
        ratio = (it - s.warmup_iters) / (s.lr_decay_iters - s.warmup_iters)
        coefficient = 0.5 * (1.0 + math.cos(math.pi * ratio))
        return s.min_lr + coefficient * (s.learning_rate - s.min_lr)

    @torch.no_grad()
    def estimate_loss():
        out = {}
        model.eval()
        for split in ("train", "val"):
            losses = torch.zeros(s.eval_iters)
            for k in range(s.eval_iters):
                x, y = get_batch(split)
                _, loss = model(x, y)
                losses[k] = loss.item()
            out[split] = losses.mean().item()
        model.train()
        return out

    record = {"losses": [], "evals": []}
    # (A resumed run continues with the batch the checkpoint holds.)
    x, y = resumed_batch if s.init_from == "resume" else get_batch("train")
    t0, local_iter_num, running_mfu = time.time(), 0, -1.0
    while True:
        lr = get_lr(iter_num)
        for group in optimizer.param_groups:
            group["lr"] = lr
        if iter_num % s.eval_interval == 0:
            # Where a resumed run starts: the random streams and the batch
            # as they are before this evaluation.
            resume_state = {"rng_state": torch.get_rng_state(),
                            "batch_rng_state": batches.get_state(),
                            "batch": (x, y)}
            losses = estimate_loss()
            record["evals"].append((iter_num, losses["train"],
                                    losses["val"]))
            say(f"step {iter_num}: train loss {losses['train']:.4f}, "
                f"val loss {losses['val']:.4f}")
            if s.out_dir and (losses["val"] < best_val_loss or iter_num):
                best_val_loss = min(best_val_loss, losses["val"])
                os.makedirs(s.out_dir, exist_ok=True)
                torch.save({"model": model.state_dict(),
                            "optimizer": optimizer.state_dict(),
                            "model_args": model_args, "iter_num": iter_num,
                            "best_val_loss": best_val_loss,
                            **resume_state},
                           os.path.join(s.out_dir, "ckpt.pt"))
        for _ in range(s.gradient_accumulation_steps):
            _, loss = model(x, y)
            loss = loss / s.gradient_accumulation_steps
            x, y = get_batch("train")
            loss.backward()
        if s.grad_clip != 0.0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), s.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        t1 = time.time()
        dt, t0 = t1 - t0, t1
        lossf = loss.item() * s.gradient_accumulation_steps
        record["losses"].append(lossf)
        if iter_num % s.log_interval == 0:
            if local_iter_num >= 5:
                mfu = model.estimate_mfu(
                    s.batch_size * s.gradient_accumulation_steps, dt)
                running_mfu = mfu if running_mfu == -1.0 else \
                    0.9 * running_mfu + 0.1 * mfu
            say(f"iter {iter_num}: loss {lossf:.4f}, time {dt * 1000:.2f}ms, "
                f"mfu {running_mfu * 100:.4f}%")
        iter_num += 1
        local_iter_num += 1
        if iter_num > s.max_iters:
            break

    model.eval()
    start = torch.tensor([[corpus.stoi["\n"]]], dtype=torch.long)
    sample = model.generate(start, s.sample_tokens, temperature=0.8,
                            top_k=10)
    record["sample"] = corpus.decode(sample[0].tolist())
    say(record["sample"])
    record["model"] = model
    return record


def _settings(argv):
    """--key=value arguments (and --eager, --quiet) as Settings fields."""
    fields = {f.name: f.type for f in dataclasses.fields(Settings)}
    overrides = {}
    for argument in argv:
        key, _, value = argument.removeprefix("--").partition("=")
        if key not in fields:
            sys.exit(f"unknown setting --{key}; settings: "
                     f"{', '.join(fields)}")
        kind = fields[key]
        overrides[key] = value in ("", "1", "true", "True") \
            if kind is bool else kind(value)
    return overrides


if __name__ == "__main__":
    train(**_settings(sys.argv[1:]))
