"""Element-wise arithmetic on tensors and numbers, with PyTorch's
broadcasting: arith on tensors (`arith.addf`, `subf`, `mulf`, `divf`,
`negf`) and math (`math.tanh`, `cos`, `sin`, `exp`, `sqrt`, `rsqrt`,
`powf`), and outer products, each
operand broadcast to the result's shape by `linalg.broadcast` and each
number a splat constant."""

import numbers
import operator

import torch
from torch import fx

from .. import ir
from . import converts
from .upstream import collapse_shape, constant, empty, expand_shape


def _is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def broadcast(emitter, node, value, shape):
    """`value` broadcast to `shape` as PyTorch broadcasts: its dims aligned
    to the right, unit dims stretched, missing leading dims added."""
    source = value.type.shape
    if source == tuple(shape):
        return value
    offset = len(shape) - len(source)
    if offset < 0 or any(s not in (1, t) for s, t in
                         zip(source, shape[offset:])):
        emitter.fail(node, f"broadcasting {list(source)} to {list(shape)}")
    builder = emitter.builder
    # The unit dims that stretch go first (collapsed into a neighbour).
    kept = [d for d, s in enumerate(source) if s == shape[offset + d]]
    if len(kept) != len(source):
        groups = _groups_keeping(len(source), kept)
        value = collapse_shape(builder, value, groups, value.type.with_shape(
            [source[d] for d in kept]))
    added = [d for d in range(len(shape)) if d - offset not in kept]
    result = value.type.with_shape(shape)
    return builder.op("linalg.broadcast", ir.ins(value),
                      ir.outs(empty(builder, result)), "dimensions", "=",
                      ir.int_list(added), results=[result])


def _groups_keeping(rank, kept):
    """A reassociation from `rank` dims onto the dims `kept`, each dropped
    (unit) dim joining a kept neighbour; [] when none is kept."""
    if not kept:
        return []
    groups = [[d] for d in kept]
    owner = 0
    for d in range(rank):
        if d in kept:
            owner = kept.index(d)
        else:
            target = owner if d > kept[0] else 0
            groups[target].append(d)
    return [sorted(g) for g in groups]


def _operand(emitter, node, operand, type_):
    """A tensor operand broadcast to `type_`, or a number as a splat."""
    if isinstance(operand, fx.Node):
        value = emitter.float_value(node, operand)
        if value.type.element != type_.element:
            emitter.fail(node, f"mixed element types {value.type.element} "
                         f"and {type_.element}")
        return broadcast(emitter, node, value, type_.shape)
    if _is_number(operand):
        literal = ir.float_literal(float(operand), type_.element.dtype)
        return constant(emitter.builder, f"dense<{literal}>", type_)
    emitter.fail(node, f"operand {operand!r} of {_name(node)}")


def _name(node):
    return getattr(node.target, "__name__", str(node.target))


def _binary(emitter, node, op, lhs, rhs):
    for operand in (lhs, rhs):
        if isinstance(operand, fx.Node):
            emitter.float_value(node, operand)
    result = emitter.result_type(node)
    if not result.element.is_float:
        emitter.fail(node, f"{_name(node)} on {result.element} tensors")
    if node.kwargs.keys() - {"alpha"} or node.kwargs.get("alpha", 1) != 1:
        emitter.fail(node, f"{_name(node)} with {dict(node.kwargs)}")
    a = _operand(emitter, node, lhs, result)
    b = _operand(emitter, node, rhs, result)
    return emitter.builder.op(op, ir.operand_list(a, b), types=result,
                              results=[result])


@converts(operator.add, torch.add, "add")
def add(emitter, node):
    """`arith.addf` of tensors and numbers, broadcast as in PyTorch
    (residuals, `tok_emb + pos_emb`, `1.0 + x`)."""
    return _binary(emitter, node, "arith.addf", *node.args[:2])


@converts(operator.sub, torch.sub, "sub")
def sub(emitter, node):
    """`arith.subf` of tensors and numbers, broadcast (`x - y`,
    `1.0 - x`)."""
    return _binary(emitter, node, "arith.subf", *node.args[:2])


@converts(operator.mul, torch.mul, "mul")
def mul(emitter, node):
    """`arith.mulf` of tensors and numbers, broadcast (`x * y`,
    `0.5 * x`)."""
    return _binary(emitter, node, "arith.mulf", *node.args[:2])


@converts(operator.truediv, torch.div, "div")
def div(emitter, node):
    """`arith.divf` of tensors and numbers, broadcast (`x / c`,
    `x / y`)."""
    if node.kwargs.get("rounding_mode") is not None:
        emitter.fail(node, "a division with a rounding_mode")
    return _binary(emitter, node, "arith.divf", *node.args[:2])


@converts(operator.neg, torch.neg, "neg")
def neg(emitter, node):
    """`arith.negf`."""
    x = emitter.float_value(node, node.args[0])
    return emitter.builder.op("arith.negf", x, types=x.type,
                              results=[x.type])


def _unary(op):
    def convert(emitter, node):
        x = emitter.float_value(node, node.args[0])
        return emitter.builder.op(op, x, types=x.type, results=[x.type])
    convert.__doc__ = f"`{op}` element-wise."
    return convert


for _op, _keys in (("math.tanh", (torch.tanh, "tanh")),
                   ("math.cos", (torch.cos, "cos")),
                   ("math.sin", (torch.sin, "sin")),
                   ("math.exp", (torch.exp, "exp")),
                   ("math.sqrt", (torch.sqrt, "sqrt")),
                   ("math.rsqrt", (torch.rsqrt, "rsqrt"))):
    converts(*_keys)(_unary(_op))


@converts(torch.outer, "outer", torch.ger, "ger")
def outer(emitter, node):
    """`arith.mulf` of the two vectors broadcast to a matrix (`torch.outer(t,
    inv_freq)` building rotary tables from an input)."""
    a = emitter.float_value(node, node.args[0])
    b = emitter.float_value(node, node.args[1])
    result = emitter.result_type(node)
    if a.type.rank != 1 or b.type.rank != 1 or \
            a.type.element != b.type.element:
        emitter.fail(node, "an outer product of tensors that are not two "
                     "vectors of one element type")
    builder = emitter.builder
    column = expand_shape(builder, a, [[0, 1]],
                          a.type.with_shape((a.type.shape[0], 1)))
    operands = [broadcast(emitter, node, v, result.shape) for v in
                (column, b)]
    return builder.op("arith.mulf", ir.operand_list(*operands), types=result,
                      results=[result])


@converts(operator.pow, torch.pow, "pow")
def pow_(emitter, node):
    """A tensor to a number's power: products for integral exponents (exact
    for negative bases, as PyTorch), `math.sqrt` for 0.5, `math.powf`
    otherwise."""
    base, exponent = node.args[:2]
    if not isinstance(base, fx.Node) or not _is_number(exponent):
        emitter.fail(node, "a power that is not a tensor to a number's power")
    x = emitter.float_value(node, base)
    builder = emitter.builder
    if exponent == 0.5:
        return builder.op("math.sqrt", x, types=x.type, results=[x.type])
    if float(exponent).is_integer() and 1 <= abs(exponent) <= 8:
        power = _integral_power(builder, x, int(abs(exponent)))
        if exponent > 0:
            return power
        one = constant(builder, "dense<1.0>", x.type)
        return builder.op("arith.divf", ir.operand_list(one, power),
                          types=x.type, results=[x.type])
    c = _operand(emitter, node, exponent, x.type)
    return builder.op("math.powf", ir.operand_list(x, c), types=x.type,
                      results=[x.type])


def _integral_power(builder, x, n):
    """x^n (n ≥ 1) by repeated squaring."""
    result, square = None, x
    while n:
        if n & 1:
            result = square if result is None else builder.op(
                "arith.mulf", ir.operand_list(result, square), types=x.type,
                results=[x.type])
        n >>= 1
        if n:
            square = builder.op("arith.mulf", ir.operand_list(square, square),
                                types=x.type, results=[x.type])
    return result


# PyTorch's comparisons: (float predicate, integer predicate). `ne` is true
# where either float operand is NaN, as in PyTorch.
_COMPARISONS = {"eq": ("oeq", "eq"), "ne": ("une", "ne"),
                "lt": ("olt", "slt"), "le": ("ole", "sle"),
                "gt": ("ogt", "sgt"), "ge": ("oge", "sge")}


def _comparison(name):
    float_predicate, int_predicate = _COMPARISONS[name]

    def convert(emitter, node):
        lhs, rhs = node.args[:2]
        if not isinstance(lhs, fx.Node):
            emitter.fail(node, f"{name} of a number and a tensor")
        x = emitter.value(node, lhs)
        result = emitter.result_type(node)
        operand_type = x.type.with_shape(result.shape)
        element = x.type.element
        if element is ir.I1 or (isinstance(rhs, fx.Node) and
                                emitter.value(node, rhs).type.element
                                != element):
            emitter.fail(node, f"{name} of {element} and another type")
        a = broadcast(emitter, node, x, result.shape)
        if isinstance(rhs, fx.Node):
            b = broadcast(emitter, node, emitter.value(node, rhs),
                          result.shape)
        elif _is_number(rhs) and (element.is_float or
                                  float(rhs) == int(rhs)):
            literal = ir.float_literal(float(rhs), element.dtype) if \
                element.is_float else str(int(rhs))
            b = constant(emitter.builder, f"dense<{literal}>", operand_type)
        else:
            emitter.fail(node, f"{name} with {rhs!r}")
        op, predicate = ("arith.cmpf", float_predicate) if element.is_float \
            else ("arith.cmpi", int_predicate)
        return emitter.builder.op(op, predicate + ",",
                                  ir.operand_list(a, b),
                                  types=operand_type, results=[result])
    convert.__doc__ = (f"`{name}`: `arith.cmpf {float_predicate}` / "
                       f"`arith.cmpi {int_predicate}` element-wise, "
                       "broadcast, to an i1 tensor.")
    return convert


for _name_ in _COMPARISONS:
    converts(getattr(operator, _name_), getattr(torch, _name_), _name_)(
        _comparison(_name_))
