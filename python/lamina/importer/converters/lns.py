"""LNS layers: LNSLinear / LNSLazyLinear as a lamina.linear on LNS numbers
between lns.encode and lns.decode."""

from ... import lns
from .. import ir
from . import converts


@converts(lns.LNSLinear, lns.LNSLazyLinear, layer=True)
def lns_linear(emitter, node, module, path):
    """`lamina.linear` on `!lns.num` tensors: the input encoded in the
    weight's base, the parameters passed as their codes (a bias may keep
    its own base), the result decoded."""
    x = emitter.float_value(node, node.args[0])
    result = emitter.result_type(node)
    if module.weight is None:
        emitter.fail(node, "an LNSLazyLinear that has not seen an input")
    # A bias in another base is converted by the spec's mixed-base rule
    # in the layer.
    number = module_number(module.weight)
    builder = emitter.builder

    def encode(value, element):
        encoded = value.type.with_element(element)
        return builder.op("lns.encode", value,
                          types=ir.converted_type(value.type, encoded),
                          results=[encoded])

    # Parameters enter the program as their codes (the layer's float64
    # code Parameters, which the compiled module trains), typed in their
    # own bases; the input is encoded in the weight's.
    encoded = [encode(x, number),
               emitter.parameter(node, f"{path}.weight", module.weight.lns,
                                 element=module_number(module.weight))]
    syntax = [ir.operand_list(*encoded)]
    if module.bias is not None:
        bias = emitter.parameter(node, f"{path}.bias", module.bias.lns,
                                 element=module_number(module.bias))
        encoded.append(bias)
        syntax += ["bias", bias]
    lns_result = result.with_element(number)
    y = builder.op("lamina.linear", ir.string(path), *syntax,
                   types=ir.function_type([v.type for v in encoded],
                                          [lns_result]),
                   results=[lns_result])
    return builder.op("lns.decode", y,
                      types=ir.converted_type(lns_result, result),
                      results=[result])


def module_number(parameter):
    """The `!lns.num` element of an LNS parameter's base."""
    base = parameter.lns_base
    return ir.LnsNumber(f=base.f, b=base.b)
