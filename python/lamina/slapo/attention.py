"""slapo.op's attention modules, FlashAttentionOp and FlashAttention, with
Slapo's constructors, forward signatures and results. Slapo runs them on
the kernels of flash-attention or xFormers (CUDA); here every kernel name
computes the same attention in PyTorch operations that Lamina's importer
compiles: batched matmuls, the mask added, the causal mask filled with
-inf, softmax, dropout. The kernel's name only chooses, as in Slapo, the
layout FlashAttention gives the attention mask."""

import math

import torch
import torch.nn.functional as F
from torch import nn

# Slapo's kernel names, and the package each one comes from there.
_KERNEL_PACKAGES = {
    "native_xformers": "xformers",
    "native_flash_attn": "flash_attn",
    "triton": "flash_attn",
    "cuda": "flash_attn",
    "cutlass": "xformers",
    "auto": "xformers",
    None: "xformers",
}


class FlashAttentionOp(nn.Module):
    """Scaled dot-product attention on (batch, seq, heads, head_dim) query,
    key and value, with an additive mask and causal masking."""

    def __init__(self, attn_op_name, apply_causal_mask, scale=None):
        super().__init__()
        if attn_op_name not in _KERNEL_PACKAGES:
            raise ValueError(f"Unknown attention op name: {attn_op_name}")
        self.attn_op_name = attn_op_name
        self.apply_causal_mask = apply_causal_mask
        self.scale = scale
        self.pkg = _KERNEL_PACKAGES[attn_op_name]
        # flash-attention takes a (batch, 1, 1, keys) bias, xFormers one
        # per head.
        self.bias_layout = "b11k" if self.pkg == "flash_attn" else "bhqk"

    def forward(self, query_layer, key_layer, value_layer, attention_mask, p):
        q = query_layer.permute(0, 2, 1, 3)
        k = key_layer.permute(0, 2, 1, 3)
        v = value_layer.permute(0, 2, 1, 3)
        scale = self.scale
        if scale is None:
            scale = 1.0 / math.sqrt(q.size(-1))
        scores = torch.matmul(q, k.transpose(-1, -2)) * scale
        if attention_mask is not None:
            scores = scores + attention_mask
        if self.apply_causal_mask:
            queries, keys = scores.size(-2), scores.size(-1)
            future = torch.triu(torch.ones(queries, keys, dtype=torch.bool),
                                diagonal=1)
            scores = scores.masked_fill(future, float("-inf"))
        probs = F.dropout(torch.softmax(scores, dim=-1), p=p,
                          training=self.training)
        return torch.matmul(probs, v).permute(0, 2, 1, 3)


class FlashAttention(nn.Module):
    """Slapo's HuggingFace-style self-attention: query, key and value
    projections (or one fused projection), FlashAttentionOp (causal when
    the output projection is on, as Slapo has it), the output projection
    and its dropout. Returns (context, None), or (context, (key, value))
    with use_cache."""

    def __init__(self, hidden_size, num_attention_heads, attn_pdrop=0.0,
                 resid_pdrop=0.0, attn_op_name="auto", bias=True,
                 output_proj=True, fused_qkv=False):
        super().__init__()
        if hidden_size % num_attention_heads != 0:
            raise ValueError(
                f"The hidden size ({hidden_size}) is not a multiple "
                f"of the number of attention heads ({num_attention_heads})")
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = hidden_size // num_attention_heads
        self.all_head_size = num_attention_heads * self.attention_head_size
        self.fused_qkv = fused_qkv
        if fused_qkv:
            self.qkv = nn.Linear(hidden_size, 3 * self.all_head_size,
                                 bias=bias)
        else:
            self.query = nn.Linear(hidden_size, self.all_head_size, bias=bias)
            self.key = nn.Linear(hidden_size, self.all_head_size, bias=bias)
            self.value = nn.Linear(hidden_size, self.all_head_size, bias=bias)
        self.output_proj = output_proj
        self.attn_pdrop = attn_pdrop
        if output_proj:
            self.out_proj = nn.Linear(hidden_size, hidden_size, bias=bias)
            self.resid_dropout = nn.Dropout(resid_pdrop)
        self.attn_op_name = attn_op_name
        self.attn_op = FlashAttentionOp(attn_op_name, output_proj)
        self.bias_layout = self.attn_op.bias_layout

    @staticmethod
    def layout_attention_mask(mask, num_attention_heads):
        return mask.expand(-1, num_attention_heads, mask.shape[-1],
                           -1).contiguous()

    def reshape_for_scores(self, x):
        return x.view(x.size()[:-1] + (-1, self.attention_head_size))

    def forward(self, hidden_states, attention_mask=None, layer_past=None,
                head_mask=None, encoder_hidden_states=None,
                encoder_attention_mask=None, use_cache=False,
                output_attentions=False):
        if encoder_hidden_states is not None or \
                encoder_attention_mask is not None:
            raise NotImplementedError(
                "FlashAttention does not support cross attention yet.")
        if output_attentions:
            raise NotImplementedError(
                "FlashAttention does not support output attention yet.")
        if head_mask is not None:
            raise NotImplementedError(
                "FlashAttention does not support head mask yet.")
        if self.fused_qkv:
            layers = self.qkv(hidden_states)
            layers = layers.view(layers.size()[:-1] +
                                 (-1, 3 * self.attention_head_size))
            query, key, value = layers.split(self.attention_head_size,
                                             dim=-1)
        else:
            query = self.reshape_for_scores(self.query(hidden_states))
            key = self.reshape_for_scores(self.key(hidden_states))
            value = self.reshape_for_scores(self.value(hidden_states))
        if layer_past is not None:
            past_key, past_value = layer_past
            key = torch.cat((past_key, key), dim=-2)
            value = torch.cat((past_value, value), dim=-2)
        if attention_mask is not None and self.bias_layout == "bhqk":
            attention_mask = self.layout_attention_mask(
                attention_mask, self.num_attention_heads)
        context = self.attn_op(query, key, value, attention_mask,
                               p=self.attn_pdrop)
        context = context.reshape(context.size()[:-2] + (-1,))
        if self.output_proj:
            context = self.resid_dropout(self.out_proj(context))
        if use_cache:
            return context, (key, value)
        return context, None
