"""Element-wise arithmetic: residual adds, and tensors shifted or scaled by
numbers."""

import operator

import torch
from torch import fx

from .. import ir
from . import converts
from .upstream import constant


@converts(operator.add, torch.add)
def add(emitter, node):
    """`arith.addf` of two tensors of equal shapes (a residual), or of a
    tensor and a splat constant (x + c, c + x: c a Python number)."""
    a, b = node.args[:2]
    if isinstance(a, (int, float)) and not isinstance(a, bool):
        a, b = b, a
    if isinstance(a, fx.Node) and isinstance(b, (int, float)) and \
            not isinstance(b, bool) and not node.kwargs:
        x = emitter.float_value(node, a)
        c = constant(emitter.builder, f"dense<{ir.float_literal(float(b))}>",
                     x.type)
        return emitter.builder.op("arith.addf", ir.operand_list(x, c),
                                  types=x.type, results=[x.type])
    if not (isinstance(a, fx.Node) and isinstance(b, fx.Node)) or \
            emitter.shape(a) != emitter.shape(b) or node.kwargs:
        emitter.fail(node, "an add that is not of two equally shaped tensors "
                     "or of a tensor and a number")
    x, y = emitter.float_value(node, a), emitter.float_value(node, b)
    return emitter.builder.op("arith.addf", ir.operand_list(x, y),
                              types=x.type, results=[x.type])


@converts(operator.mul, torch.mul, operator.truediv, torch.div)
def scale(emitter, node):
    """`arith.mulf` by a splat constant: x * c or x / c, c a Python
    number."""
    a, b = node.args[:2]
    if not isinstance(a, fx.Node) or isinstance(b, fx.Node) or \
            not isinstance(b, (int, float)):
        emitter.fail(node, "a product or quotient that is not a tensor "
                     "scaled by a number")
    x = emitter.float_value(node, a)
    factor = 1.0 / b if node.target in (operator.truediv, torch.div) \
        else float(b)
    c = constant(emitter.builder, f"dense<{ir.float_literal(factor)}>",
                 x.type)
    return emitter.builder.op("arith.mulf", ir.operand_list(x, c),
                              types=x.type, results=[x.type])
