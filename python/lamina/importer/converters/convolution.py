"""2-D convolutions: nn.Conv2d and F.conv2d as upstream's
`linalg.conv_2d_nchw_fchw`, the input zero-padded first (`tensor.pad`) and
the bias broadcast into the accumulator it starts from. One group, zero
padding; batched (N, C, H, W) f32 inputs."""

import torch.nn.functional as F
from torch import nn

from .. import ir
from . import converts
from .upstream import constant, empty, filled


def _pair(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * 2


def _padding(emitter, node, padding, kernel, dilation):
    """(low, high) of the height and width: torch's `padding` (ints, or
    "valid" / "same", whose odd total puts the extra element after)."""
    if padding == "valid":
        return (0, 0), (0, 0)
    if padding == "same":
        totals = [d * (k - 1) for d, k in zip(dilation, kernel)]
        low = tuple(t // 2 for t in totals)
        return low, tuple(t - lo for t, lo in zip(totals, low))
    if isinstance(padding, str):
        emitter.fail(node, f"padding {padding!r}")
    both = _pair(padding)
    return both, both


def _zero_pad(emitter, x, low, high):
    """`tensor.pad` of the height and width with zeros."""
    if not any(low) and not any(high):
        return x
    builder = emitter.builder
    element = x.type.element
    n, c, h, w = x.type.shape
    padded = x.type.with_shape((n, c, h + low[0] + high[0],
                                w + low[1] + high[1]))
    zero = constant(builder, ir.float_literal(0.0, element.dtype), element)
    indices = ", ".join(f"{builder.fresh('index')}: index" for _ in range(4))
    body = (f"{{\n      ^bb0({indices}):\n        tensor.yield {zero} : "
            f"{element}\n      }}")
    return builder.op("tensor.pad", x, f"low[0, 0, {low[0]}, {low[1]}]",
                      f"high[0, 0, {high[0]}, {high[1]}]", body,
                      types=f"{x.type} to {padded}",
                      results=[padded])


def _conv2d(emitter, node, what, x, weight, bias, stride, padding, dilation,
            groups, padding_mode="zeros"):
    """`linalg.conv_2d_nchw_fchw` of x (Value) by weight (Value), the bias
    (Value or None) in its init; `what` names the convolution in errors."""
    if groups != 1:
        emitter.fail(node, f"{what} with groups={groups}")
    if padding_mode != "zeros":
        emitter.fail(node, f"{what} with padding_mode={padding_mode!r}")
    if x.type.rank != 4:
        emitter.fail(node, f"{what} of a {x.type.rank}-D input (N, C, H, W "
                     "batches are supported)")
    if x.type.element != ir.F32 or weight.type.element != ir.F32:
        # linalg's convolution accumulates in its operands' type: a bf16 or
        # f16 sum over C·KH·KW products would lose what PyTorch keeps.
        emitter.fail(node, f"{what} of {x.type.element} input by "
                     f"{weight.type.element} weight (f32 is supported)")
    stride, dilation = _pair(stride), _pair(dilation)
    kernel = weight.type.shape[2:]
    low, high = _padding(emitter, node, padding, kernel, dilation)
    x = _zero_pad(emitter, x, low, high)
    builder = emitter.builder
    result = emitter.result_type(node)
    if bias is None:
        zero = constant(builder, ir.float_literal(0.0, result.element.dtype),
                        result.element)
        init = filled(builder, zero, result)
    else:
        init = builder.op("linalg.broadcast", ir.ins(bias),
                          ir.outs(empty(builder, result)), "dimensions", "=",
                          ir.int_list([0, 2, 3]), results=[result])
    attributes = (f"{{dilations = dense<{ir.int_list(dilation)}> : "
                  f"tensor<2xi64>, strides = dense<{ir.int_list(stride)}> : "
                  "tensor<2xi64>}")
    return builder.op("linalg.conv_2d_nchw_fchw", attributes,
                      ir.ins(x, weight), ir.outs(init), "->", result,
                      results=[result])


@converts(nn.Conv2d)
def conv2d_module(emitter, node, module, path):
    """`linalg.conv_2d_nchw_fchw` of the zero-padded input, the bias in its
    init (strides, dilations, "same"/"valid" padding; one group)."""
    x = emitter.float_value(node, node.args[0])
    weight = emitter.parameter(node, f"{path}.weight", module.weight)
    bias = None
    if module.bias is not None:
        bias = emitter.parameter(node, f"{path}.bias", module.bias)
    return _conv2d(emitter, node, f"Conv2d '{path}'", x, weight, bias,
                   module.stride, module.padding, module.dilation,
                   module.groups, module.padding_mode)


@converts(F.conv2d)
def conv2d(emitter, node):
    """`linalg.conv_2d_nchw_fchw` of `F.conv2d(x, weight, bias, stride,
    padding, dilation, groups)`, as nn.Conv2d."""
    x = emitter.float_value(node, node.args[0])
    weight = emitter.float_value(node, emitter.argument(node, 1, "weight"))
    bias = emitter.argument(node, 2, "bias")
    if bias is not None:
        bias = emitter.float_value(node, bias)
    return _conv2d(emitter, node, "F.conv2d", x, weight, bias,
                   emitter.argument(node, 3, "stride", 1),
                   emitter.argument(node, 4, "padding", 0),
                   emitter.argument(node, 5, "dilation", 1),
                   emitter.argument(node, 6, "groups", 1))
