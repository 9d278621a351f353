"""Generation with a key/value cache under the model's own `generate`
(runtime/generation.py, importer/kv_cache.py): tokens and every step's
logits against the eager model, which computes every position again; the
prompt's prefill and one decode step per new token; crops past the
maximum length; a maximum length other than the traced one; and models the
decode step does not fit, which run whole with a GenerationWarning."""

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lamina
from gpt_models import GPTConfig, TiedGPT
from lamina.runtime.generation import GenerationWarning
from llama_model import Llama, LlamaArgs

TOL = dict(rtol=1e-4, atol=1e-5)


def twins(model):
    return model, copy.deepcopy(model).eval()


def llama():
    torch.manual_seed(0)
    return twins(Llama(LlamaArgs(n_layers=2)))


def test_llama_greedy_tokens_and_logits_match_eager():
    model, eager = llama()
    compiled = lamina.build(lamina.create_schedule(model)).eval()
    prompt = torch.randint(0, LlamaArgs.vocab_size, (2, 5),
                           generator=torch.Generator().manual_seed(1))
    ours = compiled.generate(prompt, 9, temperature=0.0)
    theirs = eager.generate(prompt, 9, temperature=0.0)
    assert torch.equal(ours, theirs)
    with torch.no_grad():
        # The prompt's call is a plain one, the second call (the first
        # extending it) a prefill, the other 7 decode steps.
        assert compiled.generation.steps == {"decode": 7, "prefill": 1}
        # Every step's logits, the prompt extended one token at a time:
        # the prompt's call plain again (the cache holds 13 tokens), then a
        # prefill and 8 decode steps.
        for length in range(prompt.shape[1], ours.shape[1] + 1):
            torch.testing.assert_close(compiled(ours[:, :length]),
                                       eager(ours[:, :length]), **TOL)
        assert compiled.generation.steps == {"decode": 15, "prefill": 2}
        assert compiled.last_loss is None


def test_llama_decode_steps_under_autocast_compute_in_bf16():
    """In an autocast region the prefill and decode steps are the autocast
    program's too (a decoder and cache of their own): each step's logits
    equal those of the whole sequence compiled under autocast (generation
    off: max_seq_len=0), come back in bf16 as eager's, and differ from the
    f32 program's by bf16's rounding: more than nothing, a few units of
    bf16's roundoff of the logits' scale at most."""
    model, _ = llama()
    compiled = lamina.build(lamina.create_schedule(model)).eval()
    whole = lamina.build(lamina.create_schedule(copy.deepcopy(model)),
                         max_seq_len=0).eval()
    tokens = torch.randint(0, LlamaArgs.vocab_size, (2, 8),
                           generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        exact = whole(tokens)
        for length in range(4, tokens.shape[1] + 1):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                ours = compiled(tokens[:, :length])
                theirs = whole(tokens[:, :length])
            assert ours.dtype == theirs.dtype == torch.bfloat16
            assert torch.equal(ours, theirs)
        assert compiled.generation.steps == {"decode": 3, "prefill": 1}
        # bf16's unit roundoff u = 2^-8, through two layers' roundings.
        error = (ours.float() - exact).abs().max()
        assert 0 < error <= 8 * 2.0 ** -8 * exact.abs().max()


def test_llama_generation_past_the_maximum_length_crops_as_eager():
    model, eager = llama()
    compiled = lamina.build(lamina.create_schedule(model)).eval()
    prompt = torch.randint(0, LlamaArgs.vocab_size, (1, 3),
                           generator=torch.Generator().manual_seed(2))
    # max_seq_len is 16: the call on 3 tokens is plain, on 4 a prefill,
    # on 5 ... 16 decode steps; the last 4 see a window that moved, plain
    # calls.
    ours = compiled.generate(prompt, 18, temperature=0.0)
    assert torch.equal(ours, eager.generate(prompt, 18, temperature=0.0))
    with torch.no_grad():
        assert compiled.generation.steps == {"decode": 12, "prefill": 1}


def test_a_maximum_length_other_than_the_traced_one():
    # Built for prompts of 4 tokens; the model takes up to 24.
    torch.manual_seed(3)
    model, eager = twins(Llama(LlamaArgs(max_seq_len=24)))
    prompt = torch.randint(0, LlamaArgs.vocab_size, (1, 4),
                           generator=torch.Generator().manual_seed(4))
    compiled = lamina.build(lamina.create_schedule(model, example_inputs=(
        prompt,)), example_inputs=(prompt,)).eval()
    ours = compiled.generate(prompt, 20, temperature=0.0)
    assert torch.equal(ours, eager.generate(prompt, 20, temperature=0.0))
    with torch.no_grad():
        assert compiled.generation.length == 24
        assert compiled.generation.steps == {"decode": 18, "prefill": 1}


def test_max_seq_len_given_to_build():
    torch.manual_seed(5)
    model, eager = twins(Llama(LlamaArgs(max_seq_len=32)))
    compiled = lamina.build(lamina.create_schedule(model),
                            max_seq_len=12).eval()
    prompt = torch.randint(0, LlamaArgs.vocab_size, (1, 2),
                           generator=torch.Generator().manual_seed(6))
    ours = compiled.generate(prompt, 14, temperature=0.0)
    assert torch.equal(ours, eager.generate(prompt, 14, temperature=0.0))
    with torch.no_grad():
        # Calls on 3 ... 12 tokens use the cache; longer ones run whole.
        assert compiled.generation.length == 12
        assert compiled.generation.steps == {"decode": 9, "prefill": 1}


def test_nanogpt_style_model_with_a_boolean_mask_and_position_embedding():
    torch.manual_seed(7)
    model, eager = twins(TiedGPT(GPTConfig()))
    compiled = lamina.build(lamina.create_schedule(model)).eval()
    prompt = torch.randint(0, GPTConfig.vocab_size, (2, 3),
                           generator=torch.Generator().manual_seed(8))
    # top_k=1 samples the likeliest token: greedy.
    # Calls on 4 ... 16 tokens use the cache (a prefill, then decode
    # steps), then the window moves.
    ours = compiled.generate(prompt, 20, top_k=1)
    assert torch.equal(ours, eager.generate(prompt, 20, top_k=1))
    with torch.no_grad():
        assert compiled.generation.steps == {"decode": 12, "prefill": 1}
        logits, loss = compiled(ours[:, :9])
        torch.testing.assert_close(logits, eager(ours[:, :9])[0], **TOL)
        assert loss is None


def test_no_generation_while_training_or_with_autograd():
    model, _ = llama()
    compiled = lamina.build(lamina.create_schedule(model))
    assert compiled.generation is None  # train mode
    compiled.eval()
    assert compiled.generation is None  # autograd on
    with torch.no_grad():
        assert compiled.generation is not None


class TinyAttention(nn.Module):
    """One attention head over token embeddings, with a causal mask
    buffer; subclasses say what the forward makes of it."""

    def __init__(self):
        super().__init__()
        self.max_seq_len = 8
        self.embed = nn.Embedding(11, 16)
        self.q, self.k, self.v = (nn.Linear(16, 16) for _ in range(3))
        self.out = nn.Linear(16, 11)
        self.register_buffer("mask", torch.tril(torch.ones(8, 8)) == 0)

    def attend(self, idx, causal=True):
        t = idx.shape[1]
        x = self.embed(idx)
        scores = self.q(x) @ self.k(x).transpose(-2, -1)
        if causal:
            scores = scores.masked_fill(self.mask[:t, :t], float("-inf"))
        return F.softmax(scores, dim=-1) @ self.v(x)


class PooledHead(TinyAttention):
    """Attention whose result is averaged over the positions: the last
    position's output depends on every position's, which a decode step does
    not compute."""

    def forward(self, idx):
        return self.out(self.attend(idx).mean(1))


def test_a_model_the_decode_step_does_not_fit_runs_whole():
    torch.manual_seed(9)
    model, eager = twins(PooledHead())
    compiled = lamina.build(lamina.create_schedule(model)).eval()
    tokens = torch.randint(0, 11, (1, 6))
    with torch.no_grad():
        torch.testing.assert_close(compiled(tokens[:, :5]),
                                   eager(tokens[:, :5]), **TOL)
        # The first call extending the previous one tries the cache.
        with pytest.warns(GenerationWarning, match="reduces over positions"):
            result = compiled(tokens)
        torch.testing.assert_close(result, eager(tokens), **TOL)
        assert "'mean' (mean) reduces over positions" in \
            compiled.generation.reason


class Bidirectional(TinyAttention):
    """Attention without a causal mask: every position attends to later
    ones too, so earlier positions' keys are not all a new token needs. The
    shapes look like a causal model's; the check against the model catches
    it."""

    def forward(self, idx):
        return self.out(self.attend(idx, causal=False)[:, [-1], :])


def test_the_check_against_the_model_catches_attention_to_later_positions():
    torch.manual_seed(10)
    model, eager = twins(Bidirectional())
    compiled = lamina.build(lamina.create_schedule(model)).eval()
    tokens = torch.randint(0, 11, (1, 6))
    with torch.no_grad():
        torch.testing.assert_close(compiled(tokens[:, :4]),
                                   eager(tokens[:, :4]), **TOL)
        with pytest.warns(GenerationWarning, match="does not reproduce"):
            result = compiled(tokens)
        torch.testing.assert_close(result, eager(tokens), **TOL)
        # Later calls run whole without trying again.
        torch.testing.assert_close(compiled(tokens[:, :5]),
                                   eager(tokens[:, :5]), **TOL)
        assert compiled.generation.steps == {"decode": 0, "prefill": 0}
