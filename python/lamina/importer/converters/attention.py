"""Attention's arithmetic: batched matmuls (linalg) and softmax
(`lamina.softmax`, lowered in C++)."""

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
