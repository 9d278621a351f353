"""Shapes: view / reshape that split or merge neighbouring dims, permute /
transpose, contiguous, and the indexing the tracer leaves behind (a
layer's several results, shape arithmetic)."""

import operator

from .. import ir
from . import converts
from .upstream import collapse_shape, empty, expand_shape


@converts("view", "reshape")
def reshape(emitter, node):
    """`tensor.expand_shape` / `collapse_shape` (splitting or merging
    neighbouring dims); nothing for the same shape."""
    x = emitter.value(node, node.args[0])
    source, target = emitter.shape(node.args[0]), emitter.shape(node)
    result = emitter.result_type(node)
    if source == target:
        return x
    groups = _reassociation(source, target)
    if groups is None:
        emitter.fail(node, f"reshape {list(source)} → {list(target)} (only "
                     "splitting or merging neighbouring dimensions)")
    if len(target) > len(source):
        return expand_shape(emitter.builder, x, groups, result)
    return collapse_shape(emitter.builder, x, groups, result)


@converts("contiguous")
def contiguous(emitter, node):
    """Nothing: tensors in Lamina have no strides."""
    return emitter.value(node, node.args[0])


@converts("permute")
def permute(emitter, node):
    """`linalg.transpose`; nothing for the identity."""
    dims = node.args[1:]
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = dims[0]
    return _transpose(emitter, node, list(dims))


@converts("transpose")
def transpose(emitter, node):
    """`linalg.transpose` swapping two dims."""
    rank = len(emitter.shape(node.args[0]))
    d0, d1 = (d % rank for d in node.args[1:3])
    permutation = list(range(rank))
    permutation[d0], permutation[d1] = permutation[d1], permutation[d0]
    return _transpose(emitter, node, permutation)


def _transpose(emitter, node, permutation):
    x = emitter.value(node, node.args[0])
    result = emitter.result_type(node)
    if permutation == sorted(permutation):
        return x
    builder = emitter.builder
    init = empty(builder, result)
    return builder.op("linalg.transpose", ir.ins(x), ir.outs(init),
                      "permutation", "=", ir.int_list(permutation),
                      results=[result])


@converts(operator.getitem)
def getitem(emitter, node):
    """One of a layer's several results (q, k, v = qkv(x)); nothing for
    shape arithmetic (x.shape[0])."""
    base = emitter.values.get(node.args[0])
    if isinstance(base, list):
        return base[node.args[1]]
    if "tensor_meta" not in node.meta:
        return None  # the consumers' shapes suffice
    emitter.fail(node, "function getitem")


@converts(getattr)
def attribute(emitter, node):
    """Nothing: shape arithmetic (x.shape) is read from the consumers'
    shapes."""
    if "tensor_meta" not in node.meta:
        return None
    emitter.fail(node, "function getattr")


def _reassociation(source, target):
    """Groups of `target` dims forming each `source` dim (expand), or of
    `source` dims forming each `target` dim (collapse); None otherwise."""
    expand = len(target) > len(source)
    big, small = (target, source) if expand else (source, target)
    groups, index = [], 0
    for size in small:
        group, product = [], 1
        while index < len(big) and (product < size or not group):
            group.append(index)
            product *= big[index]
            index += 1
        # Trailing unit dims join the last group.
        if product != size:
            return None
        groups.append(group)
    while index < len(big) and big[index] == 1 and groups:
        groups[-1].append(index)
        index += 1
    if index != len(big):
        return None
    return groups
