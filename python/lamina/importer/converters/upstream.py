"""The upstream ops (tensor, linalg, arith) that several converters emit,
built from typed Values."""

from .. import ir


def constant(builder, literal, type_):
    """`arith.constant literal : type`."""
    return builder.op("arith.constant", literal, types=type_,
                      results=[type_])


def empty(builder, type_):
    """`tensor.empty() : type`."""
    return builder.op("tensor.empty()", types=type_, results=[type_])


def filled(builder, scalar, type_):
    """A new tensor of `type` filled with the Value `scalar`."""
    return builder.op("linalg.fill", ir.ins(scalar),
                      ir.outs(empty(builder, type_)), "->", type_,
                      results=[type_])


def collapse_shape(builder, value, groups, type_):
    """`tensor.collapse_shape`: the dims of each group merged into one."""
    return builder.op("tensor.collapse_shape", value,
                      ir.reassociation(groups),
                      types=ir.reshaped_type(value.type, type_),
                      results=[type_])


def expand_shape(builder, value, groups, type_):
    """`tensor.expand_shape`: each dim split into the dims of its group."""
    return builder.op("tensor.expand_shape", value, ir.reassociation(groups),
                      "output_shape", ir.int_list(type_.shape),
                      types=ir.reshaped_type(value.type, type_),
                      results=[type_])
