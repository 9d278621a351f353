"""The ops a LLaMA-2 file writes (issue: LLaMA as people write it): RMSNorm
computing in float (`x.float()`, `type_as`), rotary embeddings applied with
`reshape(..., -1, 2).unbind(-1)` and `torch.stack(..., dim=-1).flatten(3)`,
casts between float types; compiled forward and gradients against eager
PyTorch."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import handle_torch_function, has_torch_function

import lamina
from lamina.importer import converters
from lamina.importer.converters import attention
import eager_twins
from eager_twins import TOL
from llama_model import RMSNorm, apply_rotary_emb, precompute_freqs



class Rotary(nn.Module):
    """Queries and keys projected, split into heads and rotated."""

    def __init__(self, dim=32, heads=4, length=8):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        cos, sin = precompute_freqs(self.head_dim, length)
        self.register_buffer("freqs_cos", cos, persistent=False)
        self.register_buffer("freqs_sin", sin, persistent=False)

    def forward(self, x):
        b, t, _ = x.shape
        xq = self.wq(x).view(b, t, self.heads, self.head_dim)
        xk = self.wk(x).view(b, t, self.heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, self.freqs_cos[:t],
                                  self.freqs_sin[:t])
        return (xq * xk).sum(-1)


def compiled_matches_eager(make):
    """Builds `make()` and checks it on a (2, 8, 32) input against an eager
    twin (eager_twins.py); the compiled module."""
    return eager_twins.compiled_matches_eager(make, (2, 8, 32))


@pytest.mark.parametrize("make", [lambda: RMSNorm(32), Rotary],
                         ids=["rmsnorm", "rotary"])
def test_forward_and_gradients_match_eager(make):
    compiled_matches_eager(make)


class RotateHalf(nn.Module):
    """Queries rotated in halves with full-width tables (the angles
    repeated, as GPT-NeoX and HuggingFace build them), heads before
    positions; `tables` picks buffers (constants) or Parameters (learned,
    differentiated: left as element-wise ops), `skew` makes the two halves
    of the tables differ (no rotation: left as element-wise ops)."""

    def __init__(self, tables="buffers", skew=False, dim=32, heads=4,
                 length=8):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.wq = nn.Linear(dim, dim, bias=False)
        cos, sin = precompute_freqs(self.head_dim, length)
        cos, sin = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
        if skew:
            cos = cos + torch.linspace(0, 0.1, self.head_dim)
        if tables == "buffers":
            self.register_buffer("cos", cos, persistent=False)
            self.register_buffer("sin", sin, persistent=False)
        else:
            self.cos, self.sin = nn.Parameter(cos), nn.Parameter(sin)

    def forward(self, x):
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        q = q * self.cos[:t] + rotate_half(q) * self.sin[:t]
        return q.transpose(1, 2).reshape(b, t, -1)


@pytest.mark.parametrize("make, ropes", [
    (Rotary, ["interleaved"] * 2),
    (RotateHalf, ["halves"]),
    (lambda: RotateHalf(tables="parameters"), []),
    (lambda: RotateHalf(skew=True), []),
], ids=["interleaved", "halves", "learned-tables", "unequal-halves"])
def test_rotary_embeddings_import_as_one_op(make, ropes):
    imported = compiled_matches_eager(make).ir("imported")
    found = [line.split(":")[0].split()[-1] for line in imported.splitlines()
             if "lamina.rope" in line]
    assert found == ropes, imported
    if ropes:  # no pair split, stack or concatenation is left
        assert "tensor.concat" not in imported
        assert "math.cos" not in imported


@pytest.mark.parametrize("dim, heads", [(64, 4), (24, 3)],
                         ids=["packed", "unpacked"])
def test_rotary_embeddings_fuse_into_the_projections(dim, heads):
    """lamina-cpu-pipeline{fuse-rope=true} makes each rotation the epilogue
    of its projection (lamina-fuse-epilogues{rope=true}): its results and
    gradients equal eager's, and the forward's are bit for bit those of the
    default pipeline (the rotation a pass of its own). 64 features are
    packed in blocks of 16, whose pair partners the epilogue reads; 24 are
    not, and the projection is followed by lamina.rope's generic."""
    model, eager = eager_twins.twins(lambda: Rotary(dim=dim, heads=heads))
    compiled = lamina.build(lamina.create_schedule(model),
                            pipeline="lamina-cpu-pipeline{fuse-rope=true}")
    x = torch.randn(2, 8, dim, generator=torch.Generator().manual_seed(1))
    eager_twins.results_and_input_gradients_match(compiled, eager, x,
                                                  cotangent_seed=2)
    fused = lamina._lamina.Module(compiled.ir("scheduled")).transform(
        pipeline="lamina-decompose,lamina-fuse-epilogues{rope=true}")
    ropes = [line for line in str(fused).splitlines()
             if "lamina.fused_linear" in line and " rope " in line]
    assert len(ropes) == 2 and "lamina.rope" not in str(fused), str(fused)

    apart = lamina.build(lamina.create_schedule(eager_twins.twins(
        lambda: Rotary(dim=dim, heads=heads))[0]))
    with torch.no_grad():
        assert torch.equal(compiled(x), apart(x))


class Casts(nn.Module):
    def forward(self, x):
        wide = x.float() * 3.0
        return wide.to(torch.bfloat16), wide.half(), wide.type_as(x)


def test_casts_between_float_types_round_as_eager():
    x = torch.randn(4, 16).to(torch.bfloat16)
    compiled = lamina.build(lamina.create_schedule(Casts()))
    with torch.no_grad():
        ours, theirs = compiled(x), Casts()(x)
    for got, want in zip(ours, theirs):
        assert got.dtype == want.dtype
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def rotate_half(x):
    """The rotate-half form of rotary embeddings (GPT-NeoX, HuggingFace)."""
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Function(nn.Module):
    """One construct applied to the input."""

    def __init__(self, function):
        super().__init__()
        self.function = function

    def forward(self, x):
        return self.function(x)


# Each construct alone, on a (2, 8, 16) input.
CONSTRUCTS = {
    "unflatten": lambda x: x.unflatten(-1, (4, 4)) * 2.0,
    "torch.unflatten": lambda x: torch.unflatten(x, 1, (2, 4)) * 2.0,
    "outer": lambda x: torch.outer(x[0, :, 0], x[1, :, 1]),
    "cos-sin": lambda x: x.cos() * torch.sin(x),
    "rotate-half": lambda x: x * x.cos() + rotate_half(x) * x.sin(),
    "cat": lambda x: torch.cat([x, 2.0 * x[:, :3]], dim=1),
    "repeat": lambda x: x.repeat(1, 2, 3),
    "repeat-leading": lambda x: x.repeat(2, 1, 1, 1),
    "repeat_interleave": lambda x: x.repeat_interleave(3, dim=1),
    "torch.repeat_interleave": lambda x: torch.repeat_interleave(x, 2, -1),
    "expand": lambda x: x[:, :, None, :].expand(2, 8, 3, 16).reshape(
        2, 24, 16),
    "triu": lambda x: torch.triu(x, diagonal=1),
    "tril": lambda x: x.tril(-2),
    "triu-of-inf": lambda x: (x @ x.mT + torch.triu(
        torch.full((8, 8), float("-inf")), 1)).softmax(-1),
    "transpose-T": lambda x: x[0].T @ x[1],
    "silu": lambda x: F.silu(x),
    "rsqrt": lambda x: torch.rsqrt(x * x + 1.0),
    "double": lambda x: (x.double() * 3.0).float(),
    "bfloat16": lambda x: (x.to(torch.bfloat16) * 2.0).float(),
    "gt": lambda x: x.masked_fill(x > 0.5, 0.0),
    "le": lambda x: x.masked_fill(x.le(0.0), 0.0) * 3.0,
    "lt-ge": lambda x: x.masked_fill(torch.lt(x, -0.5), 1.0).masked_fill(
        torch.ge(x, 1.0), 2.0),
    "eq-ne-broadcast": lambda x: x.masked_fill(
        torch.eq(x, x[:, :1]), -1.0).masked_fill(x[:, :, :1] != x[0], 4.0),
}


@pytest.mark.parametrize("name", CONSTRUCTS)
def test_construct_forward_and_gradients_match_eager(name):
    function = CONSTRUCTS[name]
    x = torch.randn(2, 8, 16, generator=torch.Generator().manual_seed(3))
    compiled = lamina.build(lamina.create_schedule(
        Function(function), example_inputs=[x]))
    eager_twins.results_and_input_gradients_match(compiled, function, x,
                                                  cotangent_seed=4)


@pytest.mark.parametrize("function, message", [
    (lambda x: x.repeat_interleave(torch.tensor([1, 2]), dim=0),
     "repeat_interleave without one int count"),
    (lambda x: x.repeat_interleave(2), "repeat_interleave without one int"),
    (lambda x: x.mH, "the tensor attribute 'mH'"),
], ids=["counts-tensor", "no-dim", "mH"])
def test_unimported_forms_are_named(function, message):
    x = torch.randn(2, 8, 16)
    with pytest.raises(lamina.UnsupportedOperationError, match=message):
        lamina.build(lamina.create_schedule(Function(function),
                                            example_inputs=[x]))


def reference_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                        is_causal=False, scale=None):
    """`F.scaled_dot_product_attention` as PyTorch 2 documents it, called
    through `__torch_function__` as the builtin is, so a trace records one
    call (torch 1.13 has no builtin)."""
    operands = (query, key, value)
    if has_torch_function(operands):
        return handle_torch_function(
            reference_attention, operands, query, key, value,
            attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
            scale=scale)
    length, source = query.size(-2), key.size(-2)
    factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    bias = torch.zeros(length, source)
    if is_causal:
        future = torch.ones(length, source, dtype=torch.bool).triu(1)
        bias = bias.masked_fill(future, float("-inf"))
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        bias = bias.masked_fill(attn_mask.logical_not(), float("-inf"))
    elif attn_mask is not None:
        bias = bias + attn_mask
    weights = torch.softmax(query @ key.transpose(-2, -1) * factor + bias, -1)
    return torch.dropout(weights, dropout_p, train=True) @ value


class Attention(nn.Module):
    def __init__(self, mask=None, **settings):
        super().__init__()
        self.mask, self.settings = mask, settings
        self.register_buffer("allowed", torch.ones(8, 8).tril().bool())

    def forward(self, q, k, v):
        mask = {"boolean": self.allowed, "additive": q[0, 0, :, :1] * 0.5,
                None: None}[self.mask]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask,
                                              **self.settings)


@pytest.mark.parametrize("settings", [
    {}, {"is_causal": True}, {"mask": "boolean"}, {"mask": "additive"},
    {"is_causal": True, "scale": 0.3}], ids=str)
def test_scaled_dot_product_attention_imports_its_decomposition(
        monkeypatch, settings):
    if not hasattr(F, "scaled_dot_product_attention"):
        monkeypatch.setattr(F, "scaled_dot_product_attention",
                            reference_attention, raising=False)
        monkeypatch.setitem(converters.FUNCTIONS, reference_attention,
                            converters.Converter(
                                attention.scaled_dot_product_attention,
                                "attention"))
    model = Attention(**settings)
    generator = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 3, 8, 4, generator=generator)
               for _ in range(3))
    compiled = lamina.build(lamina.create_schedule(
        model, example_inputs=[q, k, v]))
    ours = [t.clone().requires_grad_() for t in (q, k, v)]
    theirs = [t.clone().requires_grad_() for t in (q, k, v)]
    y, y_eager = compiled(*ours), model(*theirs)
    torch.testing.assert_close(y, y_eager, **TOL)
    y.sum().backward()
    y_eager.sum().backward()
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a.grad, b.grad, **TOL)


def test_a_layer_on_float64_is_rejected_naming_the_op_and_module():
    layer = nn.Linear(4, 4).double()
    x = torch.randn(3, 4, dtype=torch.float64)
    with pytest.raises(lamina.UnsupportedOperationError,
                       match=r'loc\("layer"\).*lamina.linear.*f64'):
        lamina.build(lamina.create_schedule(layer, example_inputs=[x]))
