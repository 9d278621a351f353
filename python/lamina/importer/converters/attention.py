"""Attention's arithmetic: batched matmuls (linalg), masked fills and
softmax (`lamina.masked_fill`, `lamina.softmax`, lowered in C++)."""

import math
import operator

import torch
import torch.nn.functional as F
from torch import nn

from .. import ir
from . import converts
from .upstream import collapse_shape, constant, expand_shape, filled


@converts(operator.matmul, torch.matmul)
def matmul(emitter, node):
    """`linalg.matmul`, or `linalg.batch_matmul` over the flattened batch
    dims, of tensors with equal batch dims."""
    a, b = node.args[:2]
    shape_a, shape_b = emitter.shape(a), emitter.shape(b)
    result = emitter.result_type(node)
    if len(shape_a) < 2 or shape_a[:-2] != shape_b[:-2] or \
            len(shape_a) != len(shape_b):
        emitter.fail(node, "a matmul of tensors with different batch dims")
    x, y = emitter.float_value(node, a), emitter.float_value(node, b)
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
    product = builder.op("linalg.batch_matmul", ir.ins(flat_x, flat_y),
                         ir.outs(acc), "->", flat_result,
                         results=[flat_result])
    return expand_shape(builder, product, groups, result)


def _softmax(emitter, node, dim):
    """`lamina.softmax ["path"] %x dim d : type`."""
    if dim is None:
        emitter.fail(node, "a softmax without dim")
    x = emitter.float_value(node, node.args[0])
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
