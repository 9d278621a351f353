"""Rotary embeddings written out, recognised as the op they compute.

LLaMA's reference code rotates interleaved pairs::

    x_r, x_i = x.float().reshape(x.shape[:-1] + (-1, 2)).unbind(-1)
    out_r = x_r * cos - x_i * sin
    out_i = x_r * sin + x_i * cos
    out = torch.stack([out_r, out_i], dim=-1).flatten(3)

and other implementations rotate halves::

    x * cos + rotate_half(x) * sin   # rotate_half(x) = cat(-x2, x1)

(with tables of the full width whose two halves are equal). Left as they
are, each is a dozen element-wise ops, slices and copies; recognised, it is
one :func:`rope` call that imports as ``lamina.rope``. A match needs the
tables to be constants (buffers, or sliced from them): the op does not
differentiate its tables.
"""

import operator

import torch
from torch import fx, nn
from torch.fx.passes.shape_prop import _extract_tensor_metadata

from .formulas import PRODUCTS, SUMS, erase_unused

_DIFFERENCES = {operator.sub, torch.sub, "sub"}
_RESHAPES = {"reshape", "view"}


def rope(x, cos, sin, pairs):
    """Pairs of the last dim of `x` rotated by the angles whose cosines and
    sines `cos` and `sin` hold (one per pair, broadcast over the other
    dims): elements 2i and 2i + 1 (`pairs` "interleaved") or i and i + D/2
    ("halves")."""
    half = x.shape[-1] // 2
    if pairs == "interleaved":
        a, b = x.reshape(x.shape[:-1] + (half, 2)).unbind(-1)
    else:
        a, b = x[..., :half], x[..., half:]
    first, second = a * cos - b * sin, a * sin + b * cos
    if pairs == "interleaved":
        return torch.stack([first, second], dim=-1).flatten(-2)
    return torch.cat([first, second], dim=-1)


def _is(node, targets):
    return isinstance(node, fx.Node) and node.op in (
        "call_function", "call_method") and node.target in targets


def _value(node):
    return node.meta.get("lamina_value") if isinstance(node, fx.Node) \
        else None


def _is_table(node):
    """A tensor that depends on no input and is not a parameter."""
    value = _value(node)
    return isinstance(node, fx.Node) and node.op == "get_attr" and \
        isinstance(value, torch.Tensor) and not isinstance(value, nn.Parameter)


def _product_of(node, first, others):
    """The operand of `node` = `first` · t (either order) with t in
    `others`, else None."""
    if not _is(node, PRODUCTS) or len(node.args) != 2 or node.kwargs:
        return None
    x, y = node.args
    if x is first and y in others:
        return y
    if y is first and x in others:
        return x
    return None


def _rotation(first, second, a, b):
    """(cos, sin) when `first` = a·cos − b·sin and `second` = a·sin +
    b·cos, else None."""
    if not (_is(first, _DIFFERENCES) and _is(second, SUMS)) or \
            first.kwargs or second.kwargs or len(first.args) != 2 or \
            len(second.args) != 2:
        return None
    tables = {n for n in _operands(first) + _operands(second)
              if isinstance(n, fx.Node)}
    cos = _product_of(first.args[0], a, tables)
    sin = _product_of(first.args[1], b, tables)
    if cos is None or sin is None or cos is sin:
        return None
    for order in (second.args, second.args[::-1]):
        if _product_of(order[0], a, {sin}) is sin and \
                _product_of(order[1], b, {cos}) is cos:
            return cos, sin
    return None


def _operands(node):
    return [o for p in node.args if isinstance(p, fx.Node)
            for o in p.args]


def _dim_argument(node):
    """The `dim` of a torch.stack or torch.cat call (0 when not given)."""
    return node.kwargs.get("dim", node.args[1] if len(node.args) > 1 else 0)


def _interleaved(node):
    """(x, cos, sin) when `node` flattens a stack that rotates interleaved
    pairs of x, else None."""
    if not _is(node, {"flatten", torch.flatten} | _RESHAPES):
        return None
    stacked = node.args[0]
    if not _is(stacked, {torch.stack}) or len(stacked.users) != 1:
        return None
    items = stacked.args[0]
    rank = _value(stacked).dim()
    if not isinstance(items, (list, tuple)) or len(items) != 2 or \
            _dim_argument(stacked) not in (-1, rank - 1):
        return None
    first, second = items
    if not (_is(first, _DIFFERENCES) and isinstance(first.args[0], fx.Node)):
        return None
    # a and b: the unbound halves of the pairs of x.
    pieces = [p for p in _operands(first) if _is(p, {operator.getitem})]
    unbound = {p.args[0] for p in pieces}
    if len(unbound) != 1:
        return None
    unbind = unbound.pop()
    if not _is(unbind, {"unbind", torch.unbind}) or \
            unbind.args[1:] not in ((-1,), (_value(unbind.args[0]).dim() - 1,)):
        return None
    by_index = {p.args[1]: p for p in pieces}
    if set(by_index) != {0, 1}:
        return None
    a, b = by_index[0], by_index[1]
    tables = _rotation(first, second, a, b)
    if tables is None or not all(_is_table(t) for t in tables):
        return None
    paired = unbind.args[0]
    if not _is(paired, _RESHAPES):
        return None
    x = paired.args[0]
    if _value(x) is None or tuple(_value(node).shape) != tuple(
            _value(x).shape) or _value(paired).shape[-1] != 2:
        return None
    return x, tables[0], tables[1]


def _halves_of(x, piece):
    """0 or 1 when `piece` is x[..., :D/2] or x[..., D/2:], else None."""
    if not _is(piece, {operator.getitem}) or piece.args[0] is not x:
        return None
    index = piece.args[1]
    index = index if isinstance(index, tuple) else (index,)
    width = _value(x).shape[-1]
    rank = _value(x).dim()
    leading = index[:-1]
    if leading not in ((Ellipsis,), (slice(None),) * (rank - 1)):
        return None
    last = index[-1]
    if last == slice(None, width // 2, None) or \
            last == slice(0, width // 2, None):
        return 0
    if last in (slice(width // 2, None, None), slice(width // 2, width, None)):
        return 1
    return None


def _halves(node):
    """(x, cos, sin) of the full width when `node` = x·cos +
    rotate_half(x)·sin, else None."""
    if not _is(node, SUMS) or len(node.args) != 2 or node.kwargs:
        return None
    for plain, rotated in (node.args, node.args[::-1]):
        if not (_is(plain, PRODUCTS) and _is(rotated, PRODUCTS)):
            continue
        for x, cos in (plain.args, plain.args[::-1]):
            for cat, sin in (rotated.args, rotated.args[::-1]):
                if _is(cat, {torch.cat}) and _is_table(cos) and \
                        _is_table(sin) and _rotates_half(cat, x):
                    return x, cos, sin
    return None


def _rotates_half(cat, x):
    """Whether `cat` is cat((−x2, x1), dim=-1) of x's halves."""
    if _value(x) is None or _value(x).shape[-1] % 2:
        return False
    items = cat.args[0]
    if not isinstance(items, (list, tuple)) or len(items) != 2 or \
            _dim_argument(cat) not in (-1, _value(x).dim() - 1):
        return False
    negated, kept = items
    return _is(negated, {operator.neg, torch.neg, "neg"}) and \
        _halves_of(x, negated.args[0]) == 1 and _halves_of(x, kept) == 0


def _first_half(table):
    """The first half of the last dim of `table`'s value, or None when its
    two halves differ (tables of the full width repeat their angles)."""
    value = _value(table)
    half = value.shape[-1] // 2
    if value.shape[-1] % 2 or not torch.equal(value[..., :half],
                                              value[..., half:]):
        return None
    return value[..., :half].contiguous()


def _constant(graph, node, name, value, like):
    """A constant node holding `value`, before `node`."""
    with graph.inserting_before(node):
        constant = graph.get_attr(name)
    constant.meta.update(like.meta)
    constant.meta.update(lamina_value=value, lamina_constant=True,
                         tensor_meta=_extract_tensor_metadata(value))
    return constant


def recognise_rope(graph):
    """Replaces every rotary embedding written out in `graph` by a call of
    :func:`rope`; the formula's nodes are removed when nothing else uses
    them."""
    count = 0
    for node in list(graph.nodes):
        if node.graph is not graph or node.op == "output":
            continue
        match, pairs = _interleaved(node), "interleaved"
        if match is None:
            match, pairs = _halves(node), "halves"
            if match is not None:
                x, cos, sin = match
                halves = [_first_half(cos), _first_half(sin)]
                if any(h is None for h in halves):
                    continue
                cos, sin = (_constant(graph, node,
                                      f"_lamina_rope_table{count + i}", h, t)
                            for i, (h, t) in enumerate(zip(halves,
                                                           (cos, sin))))
                count += 2
                match = (x, cos, sin)
        if match is None:
            continue
        x, cos, sin = match
        with graph.inserting_before(node):
            rotated = graph.call_function(rope, (x, cos, sin, pairs))
        rotated.meta.update(node.meta)
        node.replace_all_uses_with(rotated)
        erase_unused(graph, node)
    return graph
