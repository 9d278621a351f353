"""Shapes: view / reshape / flatten / unflatten that split or merge
neighbouring dims, permute / transpose / `.T`, contiguous, unit dims,
expand, repeat, repeat_interleave, split, unbind, cat, stack, and indexing
(slices, ints and lists of ints; a layer's several results)."""

import operator

import torch

from .. import ir
from . import converts
from .elementwise import broadcast
from .upstream import collapse_shape, empty, expand_shape


@converts("view", "reshape", torch.reshape, "flatten", torch.flatten,
          "unflatten", torch.unflatten)
def reshape(emitter, node):
    """`tensor.expand_shape` / `collapse_shape` (splitting or merging
    neighbouring dims, adding or dropping unit dims); nothing for the same
    shape."""
    x = emitter.value(node, node.args[0])
    return reshape_to(emitter, node, x, emitter.shape(node))


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


@converts(getattr)
def attribute(emitter, node):
    """`x.T` (every dim reversed) and `x.mT` (the last two swapped):
    `linalg.transpose`."""
    name = node.args[1]
    rank = len(emitter.shape(node.args[0]))
    if name == "T":
        return _transpose(emitter, node, list(reversed(range(rank))))
    if name == "mT" and rank >= 2:
        return _transpose(emitter, node, list(range(rank - 2)) +
                          [rank - 1, rank - 2])
    emitter.fail(node, f"the tensor attribute '{name}'")


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
    """One of several results (`q, k, v = x.split(C, dim=2)`, a layer's);
    indexing a tensor with ints, slices, `None`, `...` and lists of ints
    (`x[:, -1, :]`, `x[:, [-1], :]`, `mask[:, :, :T, :T]`):
    `tensor.extract_slice` (a `tensor.concat` of slices for a list of
    several), then the unit dims dropped or added."""
    base = emitter.values.get(node.args[0])
    if isinstance(base, list):
        return base[node.args[1]]
    x = emitter.value(node, node.args[0])
    index = node.args[1]
    index = index if isinstance(index, tuple) else (index,)
    if sum(i is Ellipsis for i in index) > 1:
        emitter.fail(node, "an index with two ellipses")
    named = [i for i in index if i is not None and i is not Ellipsis]
    if Ellipsis in index:
        at = index.index(Ellipsis)
        fill = (slice(None),) * (x.type.rank - len(named))
        index = index[:at] + fill + index[at + 1:]
    named = [i for i in index if i is not None]
    if len(named) > x.type.rank:
        emitter.fail(node, f"an index of {len(named)} dims into a tensor of "
                     f"rank {x.type.rank}")
    named += [slice(None)] * (x.type.rank - len(named))
    lists = [d for d, i in enumerate(named) if isinstance(i, list)]
    if len(lists) > 1:
        emitter.fail(node, "indexing with lists in two dims")
    offsets, sizes, strides = [], [], []
    for dim, (i, size) in enumerate(zip(named, x.type.shape)):
        if isinstance(i, bool) or not isinstance(i, (int, slice, list)):
            emitter.fail(node, f"an index {i!r} (tensor indices are not "
                         "imported)")
        if isinstance(i, int):
            if not -size <= i < size:
                emitter.fail(node, f"index {i} of a dim of size {size}")
            offsets.append(i % size), sizes.append(1), strides.append(1)
        elif isinstance(i, slice):
            start, stop, step = i.indices(size)
            if step <= 0:
                emitter.fail(node, "a slice with a step that is not positive")
            offsets.append(start)
            sizes.append(max(0, -(-(stop - start) // step)))
            strides.append(step)
        else:
            offsets.append(0), sizes.append(size), strides.append(1)
    if 0 in sizes:
        emitter.fail(node, "an index selecting no element")
    picked = _slice(emitter.builder, x, offsets, sizes, strides)
    if lists:
        dim = lists[0]
        rows = named[dim]
        if not rows or not all(isinstance(r, int) and
                               -x.type.shape[dim] <= r < x.type.shape[dim]
                               for r in rows):
            emitter.fail(node, f"index list {rows} of a dim of size "
                         f"{x.type.shape[dim]}")
        parts = []
        for r in rows:
            part_offsets, part_sizes = list(offsets), list(sizes)
            part_offsets[dim], part_sizes[dim] = r % x.type.shape[dim], 1
            parts.append(_slice(emitter.builder, x, part_offsets, part_sizes,
                                strides))
        picked = parts[0] if len(parts) == 1 else _concat(
            emitter.builder, parts, dim)
    return reshape_to(emitter, node, picked, emitter.shape(node))


def _slice(builder, x, offsets, sizes, strides):
    """`tensor.extract_slice` keeping every dim."""
    if list(offsets) == [0] * len(offsets) and \
            tuple(sizes) == x.type.shape and set(strides) <= {1}:
        return x
    result = x.type.with_shape(sizes)
    return builder.op("tensor.extract_slice",
                      f"{x}{ir.int_list(offsets)}{ir.int_list(sizes)}"
                      f"{ir.int_list(strides)}",
                      types=f"{x.type} to {result}", results=[result])


def _concat(builder, parts, dim):
    shape = list(parts[0].type.shape)
    shape[dim] = sum(p.type.shape[dim] for p in parts)
    result = parts[0].type.with_shape(shape)
    return builder.op(f"tensor.concat dim({dim})",
                      ir.operand_list(*parts),
                      types=ir.function_type([p.type for p in parts],
                                             [result]),
                      results=[result])


@converts("split", torch.split)
def split(emitter, node):
    """`tensor.extract_slice` per part along the dim (`x.split(C, dim=2)`,
    or a list of sizes)."""
    x = emitter.value(node, node.args[0])
    sizes = emitter.argument(node, 1, "split_size_or_sections")
    if sizes is None:
        sizes = emitter.argument(node, 1, "split_size")
    dim = emitter.argument(node, 2, "dim", 0) % x.type.rank
    length = x.type.shape[dim]
    if isinstance(sizes, int) and not isinstance(sizes, bool) and sizes > 0:
        sizes = [min(sizes, length - start)
                 for start in range(0, length, sizes)]
    if not isinstance(sizes, (list, tuple)) or sum(sizes) != length:
        emitter.fail(node, f"split of a dim of size {length} into {sizes}")
    parts, start = [], 0
    for size in sizes:
        offsets = [0] * x.type.rank
        shape = list(x.type.shape)
        offsets[dim], shape[dim] = start, size
        parts.append(_slice(emitter.builder, x, offsets, shape,
                            [1] * x.type.rank))
        start += size
    return parts


@converts("expand", "expand_as")
def expand(emitter, node):
    """`linalg.broadcast` stretching unit dims and adding leading ones, as
    PyTorch's expand (a view there, a copy here)."""
    x = emitter.value(node, node.args[0])
    return broadcast(emitter, node, x, emitter.shape(node))


@converts("repeat")
def repeat(emitter, node):
    """`linalg.broadcast` into a new dim before each repeated one, then
    `tensor.collapse_shape` merging the two (`x.repeat(1, 2, 1)`; extra
    leading counts add dims, as in PyTorch)."""
    x = emitter.value(node, node.args[0])
    counts = node.args[1:]
    if len(counts) == 1 and isinstance(counts[0], (list, tuple)):
        counts = counts[0]
    counts = list(counts)
    if len(counts) < x.type.rank:
        emitter.fail(node, f"repeat with {len(counts)} counts of a tensor of "
                     f"rank {x.type.rank}")
    shape = (1,) * (len(counts) - x.type.rank) + x.type.shape
    return _tile(emitter, node, x, shape, counts, count_first=True)


@converts("repeat_interleave", torch.repeat_interleave)
def repeat_interleave(emitter, node):
    """`linalg.broadcast` into a new dim after the repeated one, then
    `tensor.collapse_shape` merging the two (`x.repeat_interleave(2,
    dim=1)`, GQA's repeated KV heads); a count per element is not
    imported."""
    x = emitter.value(node, node.args[0])
    count = emitter.argument(node, 1, "repeats")
    dim = emitter.argument(node, 2, "dim")
    if isinstance(count, bool) or not isinstance(count, int) or dim is None:
        emitter.fail(node, "repeat_interleave without one int count and a "
                     "dim")
    dim %= x.type.rank
    counts = [count if d == dim else 1 for d in range(x.type.rank)]
    return _tile(emitter, node, x, x.type.shape, counts, count_first=False)


def _tile(emitter, node, x, shape, counts, count_first):
    """`x` (reshaped to `shape`) with each dim d repeated `counts[d]` times:
    a broadcast into a new dim of that size next to d (before it to repeat
    the whole dim, after it to repeat each element), the two merged."""
    x = reshape_to(emitter, node, x, shape)
    if all(c == 1 for c in counts):
        return x
    wide, added = [], []
    for size, count in zip(shape, counts):
        pair = (count, size) if count_first else (size, count)
        added.append(len(wide) + (0 if count_first else 1))
        wide.extend(pair)
    builder = emitter.builder
    spread_type = x.type.with_shape(wide)
    spread = builder.op("linalg.broadcast", ir.ins(x),
                        ir.outs(empty(builder, spread_type)), "dimensions",
                        "=", ir.int_list(added), results=[spread_type])
    groups = [[2 * d, 2 * d + 1] for d in range(len(shape))]
    return collapse_shape(builder, spread, groups, x.type.with_shape(
        [s * c for s, c in zip(shape, counts)]))


@converts("unsqueeze", torch.unsqueeze, "squeeze", torch.squeeze)
def unit_dims(emitter, node):
    """`tensor.expand_shape` / `collapse_shape` adding or dropping unit
    dims."""
    x = emitter.value(node, node.args[0])
    return reshape_to(emitter, node, x, emitter.shape(node))


def reshape_to(emitter, node, x, shape):
    """`x` reshaped to `shape` when the two differ only by unit dims or by
    merging / splitting neighbours: a collapse, an expand, or a collapse to
    the dims that are not 1 and then an expand."""
    source, target = x.type.shape, tuple(shape)
    if source == target:
        return x
    result = x.type.with_shape(target)
    groups = _reassociation(source, target)
    builder = emitter.builder
    if groups is not None:
        if len(target) > len(source):
            return expand_shape(builder, x, groups, result)
        return collapse_shape(builder, x, groups, result)
    squeezed = tuple(s for s in source if s != 1)
    if squeezed != tuple(s for s in target if s != 1):
        emitter.fail(node, f"reshape {list(source)} → {list(target)}")
    middle = reshape_to(emitter, node, x, squeezed)
    return reshape_to(emitter, node, middle, target)


def _reassociation(source, target):
    """Groups of `target` dims forming each `source` dim (expand), or of
    `source` dims forming each `target` dim (collapse); None otherwise."""
    if len(target) == len(source):
        return None
    expand = len(target) > len(source)
    big, small = (target, source) if expand else (source, target)
    if not small:
        return [] if all(s == 1 for s in big) else None
    groups, index = [], 0
    for size in small:
        group, product = [], 1
        while index < len(big) and (product < size or not group):
            group.append(index)
            product *= big[index]
            index += 1
        # Trailing unit dims join the last group.
        if product != size or not group:
            return None
        groups.append(group)
    while index < len(big) and big[index] == 1 and groups:
        groups[-1].append(index)
        index += 1
    if index != len(big):
        return None
    return groups


@converts("unbind", torch.unbind)
def unbind(emitter, node):
    """`tensor.extract_slice` of each index along the dim, the dim dropped
    (RoPE's `x.reshape(..., -1, 2).unbind(-1)`)."""
    x = emitter.value(node, node.args[0])
    dim = emitter.argument(node, 1, "dim", 0) % x.type.rank
    shape = list(x.type.shape)
    dropped = shape[:dim] + shape[dim + 1:]
    parts = []
    for index in range(shape[dim]):
        offsets = [0] * x.type.rank
        sizes = list(shape)
        offsets[dim], sizes[dim] = index, 1
        part = _slice(emitter.builder, x, offsets, sizes, [1] * x.type.rank)
        parts.append(reshape_to(emitter, node, part, dropped))
    return parts


@converts(torch.cat, torch.concat)
def cat(emitter, node):
    """`tensor.concat` along the dim (the rotate-half form of rotary
    embeddings: `torch.cat((-x2, x1), dim=-1)`)."""
    tensors = emitter.argument(node, 0, "tensors")
    values = [emitter.value(node, t) for t in tensors]
    dim = emitter.argument(node, 1, "dim", 0) % values[0].type.rank
    if len({(v.type.element, v.type.rank) for v in values}) != 1:
        emitter.fail(node, "a concatenation of tensors of different element "
                     "types or ranks")
    if len(values) == 1:
        return values[0]
    return _concat(emitter.builder, values, dim)


@converts(torch.stack)
def stack(emitter, node):
    """`tensor.concat` of the tensors, each with a unit dim inserted at the
    dim (RoPE's `torch.stack([a, b], dim=-1)`)."""
    tensors = emitter.argument(node, 0, "tensors")
    values = [emitter.value(node, t) for t in tensors]
    rank = values[0].type.rank + 1
    dim = emitter.argument(node, 1, "dim", 0) % rank
    parts = []
    for value in values:
        shape = list(value.type.shape)
        shape.insert(dim, 1)
        parts.append(reshape_to(emitter, node, value, shape))
    if len(parts) == 1:
        return parts[0]
    return _concat(emitter.builder, parts, dim)
