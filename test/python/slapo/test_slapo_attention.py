"""slapo.op.FlashAttentionOp and FlashAttention with Slapo's constructors
and signatures, compiled by Lamina. The reference is Slapo's own formula
for its kernels (flash_attn_ref: einsum over (batch, seq, heads, dim),
the query scaled first), written here independently of the modules; the
compiled models are compared with eager PyTorch, forward and backward."""

import copy
import math

import pytest
import torch
from torch import nn

import lamina.slapo as slapo


def reference_attention(q, k, v, bias, causal):
    scores = torch.einsum("bthd,bshd->bhts", q / math.sqrt(q.shape[-1]), k)
    if bias is not None:
        scores = scores + bias
    if causal:
        future = torch.triu(torch.ones(q.shape[1], k.shape[1],
                                       dtype=torch.bool), 1)
        scores = scores.masked_fill(future, float("-inf"))
    return torch.einsum("bhts,bshd->bthd", torch.softmax(scores, -1), v)


@pytest.mark.parametrize("name", ["native_flash_attn", "native_xformers",
                                  "triton", "cuda", "cutlass", "auto"])
@pytest.mark.parametrize("causal", [False, True])
def test_every_kernel_name_computes_slapos_attention(name, causal):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 6, 3, 4) for _ in range(3))
    op = slapo.op.FlashAttentionOp(name, causal)
    bias = torch.randn(2, 1, 1, 6) if op.bias_layout == "b11k" else \
        torch.randn(2, 3, 6, 6)
    torch.testing.assert_close(op(q, k, v, bias, p=0.0),
                               reference_attention(q, k, v, bias, causal))
    assert op.bias_layout == ("b11k" if name in ("native_flash_attn",
                                                 "triton", "cuda")
                              else "bhqk")


def test_unknown_kernel_name():
    with pytest.raises(ValueError, match="Unknown attention op name: fast"):
        slapo.op.FlashAttentionOp("fast", True)
    with pytest.raises(ValueError, match="not a multiple"):
        slapo.op.FlashAttention(10, 3)


class Block(nn.Module):
    """A pre-norm block around Slapo's FlashAttention, with a mask."""

    def __init__(self, **kwargs):
        super().__init__()
        self.ln = nn.LayerNorm(16)
        self.attn = slapo.op.FlashAttention(16, 4, **kwargs)

    def forward(self, x, mask):
        return x + self.attn(self.ln(x), attention_mask=mask)[0]


def compiled_matches_eager(model, *inputs):
    reference = copy.deepcopy(model)
    sch = slapo.create_schedule(model)
    built, _ = slapo.build(sch, init_weights=False)
    leaf = inputs[0].clone().requires_grad_()
    expected_leaf = inputs[0].clone().requires_grad_()
    out = built(leaf, *inputs[1:])
    expected = reference(expected_leaf, *inputs[1:])
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    grad = torch.randn_like(out)
    out.backward(grad)
    expected.backward(grad)
    torch.testing.assert_close(leaf.grad, expected_leaf.grad, rtol=1e-5,
                               atol=1e-5)
    ours = dict(built.named_parameters())
    for name, param in reference.named_parameters():
        torch.testing.assert_close(ours[name].grad, param.grad, rtol=1e-5,
                                   atol=1e-5, msg=name)
    return built


# flash-attention's mask layout with separate projections, xFormers' with
# the fused one.
@pytest.mark.parametrize("fused_qkv, name", [(False, "cuda"), (True, "auto")])
def test_flash_attention_compiles_and_trains(fused_qkv, name):
    torch.manual_seed(1)
    model = Block(fused_qkv=fused_qkv, attn_op_name=name)
    x = torch.randn(2, 8, 16)
    # A padding mask as HF makes it: 0 to keep, a large negative to drop.
    keep = torch.ones(2, 8)
    keep[1, 6:] = 0
    mask = ((1.0 - keep) * -1e4)[:, None, None, :]
    built = compiled_matches_eager(model, x, mask)
    ir = built.ir("imported")
    assert "lamina.softmax" in ir and "lamina.masked_fill" in ir


def test_flash_attention_without_output_projection_is_not_causal():
    torch.manual_seed(2)
    model = Block(output_proj=False, bias=False)
    x = torch.randn(2, 5, 16)
    built = compiled_matches_eager(model, x, torch.zeros(2, 1, 1, 5))
    assert "lamina.masked_fill" not in built.ir("imported")


def test_flash_attention_unsupported_arguments_raise_as_in_slapo():
    attention = slapo.op.FlashAttention(16, 4)
    x = torch.randn(1, 3, 16)
    with pytest.raises(NotImplementedError, match="cross attention"):
        attention(x, encoder_hidden_states=x)
    with pytest.raises(NotImplementedError, match="head mask"):
        attention(x, head_mask=torch.ones(4))
    context, cache = attention(x, use_cache=True)
    assert context.shape == x.shape and cache[0].shape == (1, 3, 4, 4)
