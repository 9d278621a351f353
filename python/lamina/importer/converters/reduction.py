"""Sums and means of a tensor (`Tensor.sum`, `torch.sum`, `Tensor.mean`,
`torch.mean`) over all dims or the given ones, with keepdim: a
`linalg.reduce` adding the elements into a zero-filled tensor, the mean
then divided by the count of elements summed, as PyTorch computes it."""

import math

import torch

from .. import ir
from . import converts
from .shape import reshape_to
from .upstream import constant, filled


@converts("sum", torch.sum, "mean", torch.mean)
def reduction(emitter, node):
    """`linalg.reduce` of `arith.addf` over the dims (all of them when none
    are given); a mean divides the sum by the count."""
    name = getattr(node.target, "__name__", str(node.target))
    x = emitter.float_value(node, node.args[0])
    dims = emitter.argument(node, 1, "dim", None)
    keepdim = emitter.argument(node, 2, "keepdim", False)
    if emitter.argument(node, 3, "dtype", None) is not None:
        emitter.fail(node, f"{name} with a dtype")
    rank = x.type.rank
    if dims is None:
        dims = list(range(rank))
    elif isinstance(dims, int):
        dims = [dims]
    dims = sorted({d % rank for d in dims}) if rank else []
    builder = emitter.builder
    element = x.type.element
    kept = [s for d, s in enumerate(x.type.shape) if d not in dims]
    reduced_type = x.type.with_shape(kept)
    zero = constant(builder, ir.float_literal(0.0, element.dtype), element)
    init = filled(builder, zero, reduced_type)
    element_value, accumulator, total = (builder.fresh(element)
                                         for _ in range(3))
    body = (f"\n      ({element_value}: {element}, {accumulator}: {element}) "
            f"{{\n        {total} = arith.addf {element_value}, "
            f"{accumulator} : {element}\n        linalg.yield {total} : "
            f"{element}\n      }}")
    value = builder.op("linalg.reduce", ir.ins(x), ir.outs(init),
                       "dimensions", "=", ir.int_list(dims), body,
                       results=[reduced_type])
    if name == "mean":
        count = math.prod(x.type.shape[d] for d in dims)
        literal = ir.float_literal(float(count), element.dtype)
        divisor = constant(builder, f"dense<{literal}>", reduced_type)
        value = builder.op("arith.divf", ir.operand_list(value, divisor),
                           types=reduced_type, results=[reduced_type])
    return reshape_to(emitter, node, value, emitter.shape(node)) \
        if keepdim else value
