"""Normalisation: nn.LayerNorm and F.layer_norm as `lamina.layer_norm`
(lowered in C++)."""

import torch
import torch.nn.functional as F
from torch import nn

from .. import ir
from . import converts


def _layer_norm(emitter, node, what, path, normalized_shape, weight, bias,
                eps):
    """`lamina.layer_norm "path" %x [weight %w] [bias %b] eps e`; `weight`
    and `bias` are Values or None; `what` names the norm in errors."""
    x = emitter.float_value(node, node.args[0])
    if tuple(normalized_shape) != emitter.shape(node)[-1:]:
        emitter.fail(node, f"{what} over more than the last dim "
                     f"({list(normalized_shape)})")
    if x.type.element != ir.F32:
        emitter.fail(node, f"{what} on {x.type}")
    operands = [x]
    syntax = [ir.string(path), x]
    for keyword, value in (("weight", weight), ("bias", bias)):
        if value is not None:
            operands.append(value)
            syntax += [keyword, value]
    syntax += ["eps", ir.float_literal(eps)]
    return emitter.builder.op(
        "lamina.layer_norm", *syntax,
        types=ir.function_type([v.type for v in operands], [x.type]),
        results=[x.type])


@converts(nn.LayerNorm, layer=True)
def layer_norm_module(emitter, node, module, path):
    """`lamina.layer_norm`: (x − mean) / sqrt(var + eps) · weight + bias
    over the last dim (f32, biased variance)."""
    weight = bias = None
    if module.elementwise_affine:
        weight = emitter.parameter(node, f"{path}.weight", module.weight)
        if module.bias is not None:
            bias = emitter.parameter(node, f"{path}.bias", module.bias)
    return _layer_norm(emitter, node, f"LayerNorm '{path}'", path,
                       module.normalized_shape, weight, bias, module.eps)


@converts(F.layer_norm, torch.layer_norm)
def layer_norm(emitter, node):
    """`lamina.layer_norm` of `F.layer_norm(x, shape, weight, bias, eps)`,
    the weight and bias optional (parameters read as attributes)."""
    shape = emitter.argument(node, 1, "normalized_shape")
    parts = [emitter.argument(node, i, name)
             for i, name in ((2, "weight"), (3, "bias"))]
    weight, bias = (None if p is None else emitter.float_value(node, p)
                    for p in parts)
    eps = emitter.argument(node, 4, "eps", 1e-5)
    return _layer_norm(emitter, node, "F.layer_norm", emitter.path(node), shape,
                       weight, bias, eps)
