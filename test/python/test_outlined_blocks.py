"""Repeated blocks differentiated once (lamina-outline-blocks before
lamina-generate-backward): the training pair of a nanoGPT-style and a
LLaMA-style model calls one block forward and one block backward per
instance, draws the dropout masks the inlined program draws, and gives
eager PyTorch's gradients, with blocks checkpointed too."""

import copy
import re
import sys
import pathlib

import torch

import lamina
from llama_model import Llama, LlamaArgs

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] /
                       "examples"))
from gpt_models import GPTConfig, TiedGPT  # noqa: E402

TOL = dict(rtol=1e-4, atol=1e-5)


def gpt(layers=3, dropout=0.0):
    torch.manual_seed(0)
    return TiedGPT(GPTConfig(n_layer=layers, dropout=dropout))


def tokens(vocab, seed=1):
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, vocab, (2, 16), generator=g)
    return idx, torch.roll(idx, -1, 1)


def logits_and_loss(model, idx, targets):
    """GPT returns (logits, loss); LLaMA the logits, its loss kept."""
    out = model(idx, targets)
    return out if isinstance(out, tuple) else (out, model.last_loss)


def train_step(model, idx, targets, schedule=None):
    """(logits, loss, {name: grad}, pair) of one compiled training step."""
    sch = lamina.create_schedule(model)
    if schedule:
        schedule(sch)
    compiled = lamina.build(sch)
    compiled.train()
    torch.manual_seed(5)  # the dropout seed
    logits, loss = logits_and_loss(compiled, idx, targets)
    loss.backward()
    grads = {n: p.grad.clone() for n, p in compiled.named_parameters()}
    return logits.detach(), loss.detach(), grads, compiled._last.call.pair()


def calls(module, function, callee):
    """How many times `function` of `module` (text) calls `callee`."""
    body = module[module.index(f"func.func @{function}("):]
    body = body[:body.index("\n  }")]
    return len(re.findall(rf"call @{callee}\(", body))


def test_gpt_blocks_are_differentiated_once_with_the_inlined_masks(
        monkeypatch):
    idx, targets = tokens(96)
    outlined = train_step(gpt(dropout=0.1), idx, targets)
    monkeypatch.setenv("LAMINA_OUTLINE_BLOCKS", "0")
    inlined = train_step(gpt(dropout=0.1), idx, targets)
    module = str(outlined[3].module)
    assert module.count("func.func private @transformer_h_block_forward(") == 1
    assert module.count("func.func private @transformer_h_block_backward(") == 1
    assert calls(module, "forward_forward", "transformer_h_block_forward") == 3
    assert calls(module, "forward_backward",
                 "transformer_h_block_backward") == 3
    assert "_block" not in str(inlined[3].module)
    # The same masks: the forward's results are the inlined program's, bit
    # for bit; its gradients too, up to the order of sums.
    assert torch.equal(outlined[0], inlined[0])
    assert torch.equal(outlined[1], inlined[1])
    for name, grad in inlined[2].items():
        torch.testing.assert_close(outlined[2][name], grad, rtol=1e-6,
                                   atol=1e-7, msg=lambda m: f"{name}: {m}")


def assert_eager_gradients(model, idx, targets, schedule=None):
    eager = copy.deepcopy(model)
    logits, loss, grads, pair = train_step(model, idx, targets, schedule)
    expected_logits, expected_loss = logits_and_loss(eager, idx, targets)
    expected_loss.backward()
    torch.testing.assert_close(logits, expected_logits.detach(), **TOL)
    torch.testing.assert_close(loss, expected_loss.detach(), **TOL)
    for name, parameter in eager.named_parameters():
        torch.testing.assert_close(grads[name], parameter.grad, **TOL,
                                   msg=lambda m: f"{name}: {m}")
    return str(pair.module), pair.saved


def test_llama_layers_are_one_block_with_eager_gradients():
    torch.manual_seed(0)
    model = Llama(LlamaArgs(n_layers=3))
    idx, targets = tokens(LlamaArgs.vocab_size, seed=2)
    module, _ = assert_eager_gradients(model, idx, targets)
    assert module.count("func.func private @layers_block_backward(") == 1
    assert calls(module, "forward_backward", "layers_block_backward") == 3


def test_checkpointed_blocks_save_less_and_give_eager_gradients():
    idx, targets = tokens(96, seed=3)
    _, plain = assert_eager_gradients(gpt(), idx, targets)

    def checkpoint_all(sch):
        for i in range(3):
            sch[f"transformer.h.{i}"].checkpoint()

    module, kept = assert_eager_gradients(gpt(), idx, targets, checkpoint_all)
    assert kept < plain, (kept, plain)
    assert calls(module, "forward_backward",
                 "transformer_h_block_backward") == 3
    # Blocks checkpointed whole save nothing of their own: the block's
    # forward returns only its output.
    forward = re.search(r"func.func private @transformer_h_block_forward"
                        r"\([^)]*\) -> ([^{]*)\{", module).group(1)
    assert forward.strip() == "tensor<2x16x32xf32> attributes", forward


def test_one_checkpointed_block_stays_inline():
    idx, targets = tokens(96, seed=4)
    module, _ = assert_eager_gradients(
        gpt(), idx, targets, lambda sch: sch["transformer.h.1"].checkpoint())
    assert calls(module, "forward_forward", "transformer_h_block_forward") == 2
    assert '"transformer.h.1.attn.c_attn"' in module


class DropoutBlock(torch.nn.Module):
    """A residual block whose layer carries its own dropout epilogue
    (Slapo's LinearWithDropout): lamina.linear_dropout, whose offset is
    the layer's."""

    def __init__(self, width):
        super().__init__()
        self.fc = lamina.op.LinearWithDropout(width, width, p=0.2)

    def forward(self, x):
        return x + self.fc(torch.tanh(x))


class DropoutStack(torch.nn.Module):
    def __init__(self, width=16, depth=3):
        super().__init__()
        self.blocks = torch.nn.ModuleList(DropoutBlock(width)
                                          for _ in range(depth))

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return x


def stack_step(monkeypatch, outline):
    monkeypatch.setenv("LAMINA_OUTLINE_BLOCKS", "1" if outline else "0")
    torch.manual_seed(0)
    compiled = lamina.build(lamina.create_schedule(DropoutStack()))
    compiled.train()
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(1),
                    requires_grad=True)
    torch.manual_seed(5)  # the dropout seed
    y = compiled(x)
    y.square().sum().backward()
    grads = {n: p.grad.clone() for n, p in compiled.named_parameters()}
    return y.detach(), x.grad.clone(), grads, compiled._last.call.pair()


def test_layer_dropout_epilogues_take_the_block_offset(monkeypatch):
    y, dx, grads, pair = stack_step(monkeypatch, outline=True)
    y_inline, dx_inline, grads_inline, _ = stack_step(monkeypatch,
                                                      outline=False)
    module = str(pair.module)
    assert calls(module, "forward_forward", "blocks_block_forward") == 3
    assert "offset_base" in module
    # The masks of every block are those drawn inline.
    assert torch.equal(y, y_inline)
    torch.testing.assert_close(dx, dx_inline, rtol=1e-6, atol=1e-7)
    for name, grad in grads_inline.items():
        torch.testing.assert_close(grads[name], grad, rtol=1e-6, atol=1e-7,
                                   msg=lambda m: f"{name}: {m}")
