"""Casts between float element types: `Tensor.float()`, `half()`,
`bfloat16()`, `double()`, `type_as(other)`, `to(dtype)` (LLaMA's RMSNorm computes in
float and casts back with `type_as`). A cast to the type a tensor already
has is nothing; a wider type `arith.extf`, a narrower `arith.truncf`
(between bf16 and f16, through f32)."""

from .. import ir
from . import converts

_BITS = {ir.F16: 16, ir.BF16: 16, ir.F32: 32, ir.F64: 64}


def cast(emitter, node, x, element):
    """`x` with elements of `element`."""
    source = x.type.element
    if source == element:
        return x
    if source not in _BITS or element not in _BITS:
        emitter.fail(node, f"a cast from {source} to {element}")
    builder = emitter.builder
    if _BITS[source] == _BITS[element]:
        x = cast(emitter, node, x, ir.F32)
        source = ir.F32
    op = "arith.extf" if _BITS[source] < _BITS[element] else "arith.truncf"
    result = x.type.with_element(element)
    return builder.op(op, x, types=f"{x.type} to {result}",
                      results=[result])


@converts("float", "half", "bfloat16", "double", "type_as", "to")
def convert_type(emitter, node):
    """`arith.extf` / `arith.truncf` to the traced result's element type;
    nothing when it is the tensor's own (`x.float()` on f32, `to(device)`)."""
    x = emitter.value(node, node.args[0])
    return cast(emitter, node, x, emitter.result_type(node).element)
