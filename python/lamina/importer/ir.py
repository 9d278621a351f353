"""A small typed builder of MLIR text: element and tensor types that print
themselves, SSA values that know their type, attribute and literal
printing, and a :class:`Builder` collecting the operations of one function
body.

Types travel as objects from the traced tensors to the printed IR; nothing
is ever parsed back out of the text.
"""

import dataclasses
import math

import numpy as np
import torch

from .. import lns


@dataclasses.dataclass(frozen=True)
class ElementType:
    """A builtin scalar type (f32, i64 ...) and the torch dtype holding it."""

    name: str
    dtype: torch.dtype
    is_float: bool

    def __str__(self):
        return self.name


F32 = ElementType("f32", torch.float32, True)
F16 = ElementType("f16", torch.float16, True)
BF16 = ElementType("bf16", torch.bfloat16, True)
F64 = ElementType("f64", torch.float64, True)
I64 = ElementType("i64", torch.int64, False)
I1 = ElementType("i1", torch.bool, False)
# The scalar type of indices (offsets computed in a program).
INDEX = ElementType("index", torch.int64, False)

_BY_DTYPE = {t.dtype: t for t in (F32, F16, BF16, F64, I64, I1)}


def element_type(dtype):
    """The element type of tensors of torch `dtype`; None for a dtype Lamina
    does not import."""
    return _BY_DTYPE.get(dtype)


@dataclasses.dataclass(frozen=True)
class LnsNumber:
    """`!lns.num<f = ...>` (or `<b = ...>`): an LNS number, stored as its
    int64 code."""

    f: int = None
    b: float = None

    is_float = False
    dtype = torch.int64  # the codes

    def __str__(self):
        return lns.num_type(f=self.f, b=self.b)


@dataclasses.dataclass(frozen=True)
class TensorType:
    """`tensor<2x8xf32>`: a static shape and an element type."""

    shape: tuple
    element: object

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))

    @property
    def rank(self):
        return len(self.shape)

    def with_shape(self, shape):
        return TensorType(shape, self.element)

    def with_element(self, element):
        return TensorType(self.shape, element)

    def __str__(self):
        return ("tensor<" + "".join(f"{s}x" for s in self.shape) +
                f"{self.element}>")


@dataclasses.dataclass(frozen=True)
class Value:
    """An SSA value: its name (`%v3`) and type."""

    name: str
    type: object

    def __str__(self):
        return self.name


# -- attributes and literals ------------------------------------------------


_FLOAT_BITS = {torch.float64: 64, torch.float32: 32, torch.float16: 16,
               torch.bfloat16: 16}


def float_literal(value, dtype=torch.float64):
    """A float literal MLIR parses (1e-05 must read 1.0e-05; ±inf and NaN
    as the bits of `dtype`, the type the literal is for)."""
    value = float(value)
    if not math.isfinite(value):
        bits = torch.tensor([value], dtype=dtype)
        integer = {64: torch.int64, 32: torch.int32, 16: torch.int16}[
            _FLOAT_BITS[dtype]]
        word = bits.view(integer).item() % (1 << _FLOAT_BITS[dtype])
        return f"0x{word:0{_FLOAT_BITS[dtype] // 4}X}"
    text = repr(value)
    mantissa, exponent = (text.split("e") + [None])[:2]
    if exponent is not None and "." not in mantissa:
        text = f"{mantissa}.0e{exponent}"
    return text


def dense_literal(tensor):
    """`dense<...>` of a constant tensor: a splat for equal elements, else
    the elements' bytes in hex (booleans one bit each, as MLIR packs i1)."""
    flat = tensor.detach().cpu().reshape(-1)
    if flat.numel() and bool((flat == flat[0]).all()):
        first = flat[0].item()
        if isinstance(first, bool):
            return f"dense<{'true' if first else 'false'}>"
        if isinstance(first, float):
            return f"dense<{float_literal(first, flat.dtype)}>"
        return f"dense<{first}>"
    if flat.dtype == torch.bool:
        data = np.packbits(flat.numpy(), bitorder="little").tobytes()
    elif flat.dtype == torch.bfloat16:
        data = flat.view(torch.int16).numpy().astype("<i2").tobytes()
    else:
        array = flat.numpy()
        data = array.astype(array.dtype.newbyteorder("<")).tobytes()
    return f'dense<"0x{data.hex().upper()}">'


def string(text):
    """A string attribute: `"h.0.mlp"`."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def int_list(values):
    """`[0, 2, 1]`."""
    return "[" + ", ".join(str(int(v)) for v in values) + "]"


def reassociation(groups):
    """`[[0, 1], [2]]`: the dims of a collapse or expand, grouped."""
    return "[" + ", ".join(int_list(g) for g in groups) + "]"


def operand_list(*values):
    """`%a, %b`: operands separated by commas."""
    return ", ".join(v.name for v in values)


def ins(*values):
    """`ins(%a, %b : tensor<...>, tensor<...>)` of a linalg op."""
    return _operand_group("ins", values)


def outs(*values):
    """`outs(%init : tensor<...>)` of a linalg op."""
    return _operand_group("outs", values)


def _operand_group(keyword, values):
    return (f"{keyword}({operand_list(*values)} : "
            f"{', '.join(str(v.type) for v in values)})")


def converted_type(source, result):
    """`t0 -> t1`: the types of a conversion (lns.encode, lns.decode)."""
    return f"{source} -> {result}"


def reshaped_type(source, result):
    """`t0 into t1`: the types of tensor.collapse_shape / expand_shape."""
    return f"{source} into {result}"


def function_type(inputs, results):
    """`(t0, t1) -> t2` or `(t0) -> (t1, t2)`: an operation's operand and
    result types."""
    results = list(results)
    printed = ", ".join(map(str, results))
    if len(results) != 1:
        printed = f"({printed})"
    return f"({', '.join(map(str, inputs))}) -> {printed}"


# -- building ---------------------------------------------------------------


class Builder:
    """The operations of one function body, in order, each result a fresh
    `%vN`."""

    def __init__(self):
        self.lines = []
        # The module path of each line's op (`module` when it was built).
        self.modules = []
        self.module = ""
        self._count = 0

    def op(self, name, *syntax, types=None, results=()):
        """Appends `results = name syntax... [: types]`.

        `syntax` are the pieces of the op's custom form (values print their
        names, everything else as str); `types` the text after the colon
        (None: no colon, for forms that state types inline, as linalg's);
        `results` the result types. Returns the result Value, a list of them
        for several results, or None for none.
        """
        values = [self.fresh(t) for t in results]
        text = " ".join(str(piece) for piece in (name,) + syntax)
        if types is not None:
            text += f" : {types}"
        if values:
            text = f"{', '.join(v.name for v in values)} = {text}"
        self.lines.append(f"    {text}")
        self.modules.append(self.module)
        if not values:
            return None
        return values[0] if len(values) == 1 else values

    def fresh(self, type_):
        """A Value of `type_` with a name not used yet in the function (an
        op's result, or a block argument of a region written as text)."""
        self._count += 1
        return Value(f"%v{self._count}", type_)

    def body(self, located=False):
        """The ops as text; `located`: each op of a submodule with its
        module path as its location (`loc("h.0.attn")`), which Lamina's
        parser turns into a `lamina.module` attribute."""
        if not located:
            return "\n".join(self.lines)
        return "\n".join(
            f"{line} loc({_quoted(module)})" if module else line
            for line, module in zip(self.lines, self.modules))


def _quoted(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def function(name, arguments, results, body, world_size):
    """A module of one `func.func @name` for `world_size` ranks, returning
    the Values `results`."""
    signature = ", ".join(f"{a.name}: {a.type}" for a in arguments)
    types = ", ".join(str(r.type) for r in results)
    names = ", ".join(r.name for r in results)
    return ("module attributes "
            f"{{lamina.world_size = {world_size} : i64}} {{\n"
            f"  func.func @{name}({signature}) -> ({types}) {{\n{body}\n"
            f"    return {names} : {types}\n"
            "  }\n}\n")
