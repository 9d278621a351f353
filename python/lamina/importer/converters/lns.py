"""LNS layers: LNSLinear / LNSLazyLinear as a lamina.linear on LNS numbers
between lns.encode and lns.decode."""

from ... import lns
from .. import ir
from . import converts


@converts(lns.LNSLinear, lns.LNSLazyLinear)
def lns_linear(emitter, node, module, path):
    """`lamina.linear` on `!lns.num` tensors: the input and parameters
    encoded in the weight's base (a bias may keep its own), the result
    decoded."""
    x = emitter.float_value(node, node.args[0])
    result = emitter.result_type(node)
    if module.weight is None:
        emitter.fail(node, "an LNSLazyLinear that has not seen an input")
    # The input is encoded in the weight's base; a bias in another base
    # is converted by the spec's mixed-base rule in the layer.
    number = ir.LnsNumber(f=module.weight_f, b=module.weight_b)
    bias_number = ir.LnsNumber(f=module.bias_f, b=module.bias_b)
    builder = emitter.builder

    def encode(value, element):
        encoded = value.type.with_element(element)
        return builder.op("lns.encode", value,
                          types=ir.converted_type(value.type, encoded),
                          results=[encoded])

    encoded = [encode(x, number),
               encode(emitter.parameter(node, f"{path}.weight",
                                        module.weight), number)]
    syntax = [ir.operand_list(*encoded)]
    if module.bias is not None:
        bias = encode(emitter.parameter(node, f"{path}.bias", module.bias),
                      bias_number)
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
