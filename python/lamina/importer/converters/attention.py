"""Attention's arithmetic: batched matmuls (linalg), masked fills,
triangles, softmax and rotary embeddings (`lamina.masked_fill`,
`lamina.softmax`, `lamina.rope`, lowered in C++)."""

import math
import operator

import torch
import torch.nn.functional as F
from torch import nn

from .. import ir
from ..rotary import rope
from . import converts
from .dropout import dropout_of
from .elementwise import broadcast
from .upstream import collapse_shape, constant, empty, expand_shape, filled


@converts(operator.matmul, torch.matmul)
def matmul(emitter, node):
    """`linalg.matmul`, or `linalg.batch_matmul` over the flattened batch
    dims, of tensors with equal batch dims."""
    a, b = node.args[:2]
    x, y = emitter.float_value(node, a), emitter.float_value(node, b)
    return product(emitter, node, x, y, emitter.result_type(node))


def product(emitter, node, x, y, result):
    """The matrix product of `x` and `y` (equal batch dims) as `result`."""
    shape_a, shape_b = x.type.shape, y.type.shape
    if len(shape_a) < 2 or shape_a[:-2] != shape_b[:-2] or \
            len(shape_a) != len(shape_b):
        emitter.fail(node, "a matmul of tensors with different batch dims")
    builder = emitter.builder
    zero = constant(builder, "0.0", result.element)
    if len(shape_a) == 2:
        acc = filled(builder, zero, result)
        return builder.op("linalg.matmul", ir.ins(x, y), ir.outs(acc), "->",
                          result, results=[result])
    rank = len(shape_a)
    groups = [list(range(rank - 2)), [rank - 2], [rank - 1]]
    batch = math.prod(shape_a[:-2])
    (m, k), n = shape_a[-2:], shape_b[-1]
    flat_x = collapse_shape(builder, x, groups,
                            result.with_shape((batch, m, k)))
    flat_y = collapse_shape(builder, y, groups,
                            result.with_shape((batch, k, n)))
    flat_result = result.with_shape((batch, m, n))
    acc = filled(builder, zero, flat_result)
    flat = builder.op("linalg.batch_matmul", ir.ins(flat_x, flat_y),
                      ir.outs(acc), "->", flat_result, results=[flat_result])
    return expand_shape(builder, flat, groups, result)


def _softmax(emitter, node, dim):
    """`lamina.softmax ["path"] %x dim d : type`."""
    if dim is None:
        emitter.fail(node, "a softmax without dim")
    return softmax_of(emitter, node, emitter.float_value(node, node.args[0]),
                      dim)


def softmax_of(emitter, node, x, dim):
    """`lamina.softmax` of the Value `x` over `dim`."""
    path = emitter.path(node)
    named = [ir.string(path)] if path else []
    return emitter.builder.op("lamina.softmax", *named, x, "dim",
                              dim % x.type.rank, types=x.type,
                              results=[x.type])


@converts(nn.Softmax)
def softmax_module(emitter, node, module, path):
    """`lamina.softmax` over the module's dim."""
    return _softmax(emitter, node, module.dim)


@converts(F.softmax, torch.softmax, "softmax")
def softmax(emitter, node):
    """`lamina.softmax` over the given dim."""
    dim = node.kwargs.get("dim", node.args[1] if len(node.args) > 1 else None)
    return _softmax(emitter, node, dim)


@converts("masked_fill", torch.masked_fill)
def masked_fill(emitter, node):
    """`lamina.masked_fill`: a number where a boolean mask is true (a causal
    mask sliced from a buffer is a constant), the mask broadcast."""
    x = emitter.float_value(node, node.args[0])
    mask = emitter.value(node, emitter.argument(node, 1, "mask"))
    value = emitter.argument(node, 2, "value")
    if mask.type.element != ir.I1:
        emitter.fail(node, f"masked_fill with a {mask.type.element} mask")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        emitter.fail(node, f"masked_fill with the value {value!r} (a "
                     "number)")
    return _fill_where(emitter, node, x, mask, value)


@converts(torch.triu, "triu", torch.tril, "tril")
def triangle(emitter, node):
    """`lamina.masked_fill` of zeros over the other triangle of the last two
    dims (a constant mask), as `torch.triu(x, diagonal)` /
    `torch.tril(x, diagonal)` keep one."""
    x = emitter.float_value(node, node.args[0])
    diagonal = emitter.argument(node, 1, "diagonal", 0)
    if x.type.rank < 2:
        emitter.fail(node, "a triangle of a tensor of rank below 2")
    rows, columns = x.type.shape[-2:]
    keep = torch.ones(rows, columns, dtype=torch.bool)
    name = getattr(node.target, "__name__", node.target)
    keep = keep.triu(diagonal) if name == "triu" else keep.tril(diagonal)
    return _fill_where(emitter, node, x, emitter.constant(~keep), 0.0)


def _fill_where(emitter, node, x, mask, value):
    """`lamina.masked_fill` of `x` with `value` where the i1 `mask`
    (broadcast to `x`'s shape) is true."""
    lead = x.type.rank - mask.type.rank
    if lead < 0 or any(m not in (1, s) for m, s in
                       zip(mask.type.shape, x.type.shape[lead:])):
        emitter.fail(node, f"masked_fill of {list(x.type.shape)} with a mask "
                     f"of {list(mask.type.shape)}")
    if lead:
        # Leading unit dims, as broadcasting adds them.
        full = mask.type.with_shape((1,) * lead + mask.type.shape)
        groups = [list(range(lead + 1))] + [[d] for d in range(
            lead + 1, full.rank)] if mask.type.rank else []
        mask = expand_shape(emitter.builder, mask, groups, full)
    path = emitter.path(node)
    named = [ir.string(path)] if path else []
    return emitter.builder.op(
        "lamina.masked_fill", *named, ir.operand_list(x, mask), "value",
        ir.float_literal(value), types=f"{x.type}, {mask.type}",
        results=[x.type])


def scaled_dot_product_attention(emitter, node):
    """Its decomposition: `softmax(q @ kᵀ · scale + mask) @ v`, the mask a
    causal triangle (`is_causal`), a boolean mask (`lamina.masked_fill`
    of −inf where it is false) or added floats, then `lamina.dropout` of
    `dropout_p` (drawn whenever it is above 0, as in PyTorch)."""
    q, k, v = (emitter.float_value(node, emitter.argument(node, i, name))
               for i, name in enumerate(("query", "key", "value")))
    mask = emitter.argument(node, 3, "attn_mask")
    p = emitter.argument(node, 4, "dropout_p", 0.0)
    causal = emitter.argument(node, 5, "is_causal", False)
    scale = emitter.argument(node, 6, "scale")
    if q.type.rank < 2 or k.type.rank != q.type.rank or \
            v.type.rank != q.type.rank:
        emitter.fail(node, "attention on tensors of different ranks")
    if causal and mask is not None:
        emitter.fail(node, "attention with both attn_mask and is_causal")
    builder = emitter.builder
    rank = q.type.rank
    (length, depth), source = q.type.shape[-2:], k.type.shape[-2]
    k_t_type = k.type.with_shape(k.type.shape[:-2] + (depth, source))
    k_t = builder.op("linalg.transpose", ir.ins(k),
                     ir.outs(empty(builder, k_t_type)), "permutation", "=",
                     ir.int_list(list(range(rank - 2)) + [rank - 1, rank - 2]),
                     results=[k_t_type])
    scores_type = q.type.with_shape(q.type.shape[:-1] + (source,))
    scores = product(emitter, node, q, k_t, scores_type)
    factor = 1 / math.sqrt(depth) if scale is None else scale
    scores = builder.op("arith.mulf", ir.operand_list(scores, constant(
        builder, f"dense<{ir.float_literal(factor, scores_type.element.dtype)}>",
        scores_type)), types=scores_type, results=[scores_type])
    if causal:
        future = torch.ones(length, source, dtype=torch.bool).triu(1)
        scores = _fill_where(emitter, node, scores, emitter.constant(future),
                             float("-inf"))
    elif mask is not None:
        mask_value = emitter.value(node, mask)
        if mask_value.type.element == ir.I1:
            constant_mask = mask.meta.get("lamina_value") \
                if mask.op == "get_attr" else None
            if constant_mask is None:
                emitter.fail(node, "attention with a boolean attn_mask that "
                             "depends on the inputs")
            scores = _fill_where(emitter, node, scores,
                                 emitter.constant(~constant_mask),
                                 float("-inf"))
        else:
            added = broadcast(emitter, node, mask_value, scores_type.shape)
            scores = builder.op("arith.addf", ir.operand_list(scores, added),
                                types=scores_type, results=[scores_type])
    weights = softmax_of(emitter, node, scores, rank - 1)
    if p > 0:
        weights = dropout_of(emitter, node, weights, p, True)
    return product(emitter, node, weights, v, emitter.result_type(node))


if hasattr(F, "scaled_dot_product_attention"):
    converts(F.scaled_dot_product_attention)(scaled_dot_product_attention)


@converts(rope)
def rotary_embedding(emitter, node):
    """`lamina.rope` of a rotary embedding written out (the interleaved
    pairs of LLaMA's `unbind` / `stack` code, or `x * cos + rotate_half(x)
    * sin`), recognised by importer/rotary.py; tables of a lower rank gain
    leading unit dims."""
    x = emitter.float_value(node, node.args[0])
    tables = []
    for table in node.args[1:3]:
        value = emitter.float_value(node, table)
        lead = x.type.rank - value.type.rank
        if lead < 0 or value.type.element != x.type.element:
            emitter.fail(node, f"a rotary embedding of {x.type} with tables "
                         f"{value.type}")
        if lead:
            full = value.type.with_shape((1,) * lead + value.type.shape)
            groups = [list(range(lead + 1))] + [
                [d] for d in range(lead + 1, full.rank)]
            value = expand_shape(emitter.builder, value, groups, full)
        tables.append(value)
    path = emitter.path(node)
    named = [ir.string(path)] if path else []
    return emitter.builder.op(
        "lamina.rope", *named, ir.operand_list(x, *tables), node.args[3],
        types=f"{x.type}, {tables[0].type}", results=[x.type])
