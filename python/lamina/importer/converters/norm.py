"""Normalisation: nn.LayerNorm as `lamina.layer_norm` (lowered in C++)."""

from torch import nn

from .. import ir
from . import converts


@converts(nn.LayerNorm)
def layer_norm(emitter, node, module, path):
    """`lamina.layer_norm`: (x − mean) / sqrt(var + eps) · weight + bias
    over the last dim (f32, biased variance)."""
    x = emitter.float_value(node, node.args[0])
    if tuple(module.normalized_shape) != emitter.shape(node)[-1:]:
        emitter.fail(node, f"LayerNorm '{path}' over more than the last dim")
    if x.type.element != ir.F32:
        emitter.fail(node, f"LayerNorm '{path}' on {x.type}")
    operands = [x]
    syntax = [ir.string(path), x]
    if module.elementwise_affine:
        weight = emitter.parameter(node, f"{path}.weight", module.weight)
        operands.append(weight)
        syntax += ["weight", weight]
        if module.bias is not None:
            bias = emitter.parameter(node, f"{path}.bias", module.bias)
            operands.append(bias)
            syntax += ["bias", bias]
    syntax += ["eps", ir.float_literal(module.eps)]
    return emitter.builder.op(
        "lamina.layer_norm", *syntax,
        types=ir.function_type([v.type for v in operands], [x.type]),
        results=[x.type])
