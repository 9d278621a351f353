"""Walks a traced, shape-propagated torch.fx graph and emits its lamina IR
through the converter tables.

The emitter keeps what the converters share: the Value of every node, the
function's arguments (inputs as traced, then each parameter at its first
use, then the dropout seed), the offsets of the dropout ops, and the error
messages naming the op and its module.
"""

from torch import fx, nn

from . import converters, ir
from ..errors import UnsupportedOperationError


class Emitter:
    """The state of one import; converters call its methods."""

    def __init__(self, model):
        self.modules = dict(model.named_modules())
        self.builder = ir.Builder()
        self.values = {}            # fx node → Value, list of Values or None
        self.inputs = []            # Values of the model's inputs
        self.parameters = []        # (name, tensor), in argument order
        self.parameter_values = []  # their Values
        self._parameter_index = {}  # id(tensor) → its Value
        self._dropouts = 0
        self.seed_value = None      # the i64 seed, once a dropout is active
        self._input_nodes = {}      # placeholder node → its input position
        # (input position, bound, ignored index, what) of the int64 inputs
        # used as indices: checked before each call.
        self.index_bounds = []

    # -- errors ----------------------------------------------------------

    def fail(self, node, what):
        """Raises UnsupportedOperationError: `what` in the node's module."""
        path = node.meta.get("lamina_path", "")
        where = f"module '{path}'" if path else "the model's forward"
        raise UnsupportedOperationError(f"{what} in {where} is not supported "
                                        "by Lamina's importer")

    # -- nodes -----------------------------------------------------------

    def path(self, node):
        """The module path a node's op gets: its module's for a layer call
        (a model that is one layer has the path ""), the enclosing module's
        otherwise."""
        if node.op == "call_module":
            return "" if "lamina_module" in node.meta else node.target
        return node.meta.get("lamina_path", "")

    @staticmethod
    def shape(node):
        return tuple(node.meta["tensor_meta"].shape)

    def result_type(self, node):
        """The TensorType of a node's tensor result."""
        meta = node.meta["tensor_meta"]
        element = ir.element_type(meta.dtype)
        if element is None:
            self.fail(node, f"element type {meta.dtype}")
        return ir.TensorType(meta.shape, element)

    def value(self, node, arg):
        """The Value of `arg`, an operand of `node`."""
        if not isinstance(arg, fx.Node) or arg not in self.values:
            self.fail(node, f"operand {arg!r} of {node.target}")
        value = self.values[arg]
        if isinstance(value, list):
            self.fail(node, f"a list of values as operand of {node.target}")
        if value is None:
            self.fail(node, f"operand {arg!r} of {node.target}")
        return value

    def float_value(self, node, arg):
        """The Value of `arg`, which `node` computes on as floats."""
        value = self.value(node, arg)
        if not value.type.element.is_float:
            name = getattr(node.target, "__name__", str(node.target))
            self.fail(node, f"an {value.type.element} operand of {name}")
        return value

    @staticmethod
    def argument(node, index, name, default=None):
        """The call's argument `name`, passed at position `index` (counting
        the first operand as 0) or by keyword; `default` when absent."""
        if name in node.kwargs:
            return node.kwargs[name]
        if index is not None and index < len(node.args):
            return node.args[index]
        return default

    # -- arguments -------------------------------------------------------

    def input(self, node):
        """A placeholder: the next input argument `%xN`."""
        if "tensor_meta" not in node.meta:
            self.fail(node, f"input '{node.target}' that is not a tensor")
        value = ir.Value(f"%x{len(self.inputs)}", self.result_type(node))
        self._input_nodes[node] = len(self.inputs)
        self.inputs.append(value)
        return value

    _RESHAPES = {"view", "reshape", "flatten", "contiguous", "unsqueeze",
                 "squeeze"}

    def index_bound(self, node, argument, bound, what, ignored=None):
        """Records that the int64 tensor `argument` of `node` indexes
        `bound` rows (or classes; `ignored` is allowed too): when it is an
        input, or an input reshaped, each call checks it first."""
        source = argument
        while isinstance(source, fx.Node) and source not in self._input_nodes:
            if source.target not in self._RESHAPES or not source.args:
                return  # computed in the program, or a checked constant
            source = source.args[0]
        if isinstance(source, fx.Node):
            self.index_bounds.append((self._input_nodes[source], bound,
                                      ignored, what))

    def parameter(self, node, name, tensor, element=None):
        """The argument `%pN` holding parameter `tensor` (one per tensor,
        however often it is used); `element` overrides the element type of
        its dtype (LNS codes: an ir.LnsNumber over int64)."""
        key = id(tensor)
        if key not in self._parameter_index:
            element = element or ir.element_type(tensor.dtype)
            if element is None:
                self.fail(node, f"parameter '{name}' of element type "
                          f"{tensor.dtype}")
            value = ir.Value(f"%p{len(self.parameters)}",
                             ir.TensorType(tensor.shape, element))
            self.parameters.append((name, tensor))
            self.parameter_values.append(value)
            self._parameter_index[key] = value
        return self._parameter_index[key]

    def dropout(self, p, training):
        """The `#lamina.dropout` settings of the next dropout op (its offset
        in the program's random stream) and the seed it draws from, or None
        when it drops nothing."""
        offset = self._dropouts
        self._dropouts += 1
        active = training and p > 0
        parts = [f"p = {ir.float_literal(p)}"]
        if active:
            parts.append("training")
        if offset:
            parts.append(f"offset = {offset}")
        if active and self.seed_value is None:
            self.seed_value = ir.Value("%seed", ir.I64)
        return "<" + ", ".join(parts) + ">", (self.seed_value if active
                                              else None)

    def arguments(self):
        """Inputs, then parameters, then the seed."""
        seed = [self.seed_value] if self.seed_value is not None else []
        return self.inputs + self.parameter_values + seed

    # -- dispatch --------------------------------------------------------

    def visit(self, node):
        """Emits `node` and records its Value; its ops record the module
        whose forward the node is in."""
        self.builder.module = node.meta.get("lamina_path", "")
        self.values[node] = self._convert(node)

    def _convert(self, node):
        if node.op == "placeholder":
            return self.input(node)
        if node.op == "call_module":
            module = node.meta.get("lamina_module") or \
                self.modules[node.target]
            path = self.path(node)
            converter = converters.module_converter(type(module))
            if converter is None:
                self.fail(node, f"{type(module).__name__} '{path}'")
            return converter(self, node, module, path)
        if node.op == "call_function":
            converter = converters.FUNCTIONS.get(node.target)
            if converter is None:
                name = getattr(node.target, "__name__", str(node.target))
                self.fail(node, f"function {name}")
            return converter(self, node)
        if node.op == "call_method":
            converter = converters.METHODS.get(node.target)
            if converter is None:
                self.fail(node, f"method Tensor.{node.target}")
            return converter(self, node)
        if node.op == "get_attr":
            return self.attribute(node)
        self.fail(node, f"{node.op} {node.target}")

    def attribute(self, node):
        """A parameter read as an attribute (`self.weight`), or a tensor
        that depends on no input (a buffer, a mask sliced from one,
        `torch.arange(t)`): a constant."""
        tensor = node.meta["lamina_value"]
        if isinstance(tensor, nn.Parameter):
            return self.parameter(node, node.target, tensor)
        if ir.element_type(tensor.dtype) is None:
            self.fail(node, f"constant '{node.target}' of element type "
                      f"{tensor.dtype}")
        return self.constant(tensor)

    def constant(self, tensor):
        """`arith.constant` holding `tensor`'s values (of a dtype Lamina
        imports)."""
        type_ = ir.TensorType(tensor.shape, ir.element_type(tensor.dtype))
        return self.builder.op("arith.constant", ir.dense_literal(tensor),
                               types=type_, results=[type_])

    def results(self, output):
        """The Values the graph's output node returns, in order, and the
        structure the model returns them in: the index of each tensor
        result in that list, nested in the model's tuples and lists, None
        where the model returns None (`(logits, None)`)."""
        results = []
        # The graph node each result comes from.
        self.result_nodes = []

        def visit(item):
            if item is None:
                return None
            if isinstance(item, (tuple, list)):
                return type(item)(visit(i) for i in item)
            value = self.values.get(item) if isinstance(item, fx.Node) \
                else None
            if isinstance(value, list):
                results.extend(value)
                self.result_nodes.extend([item] * len(value))
                return tuple(range(len(results) - len(value), len(results)))
            if value is None:
                self.fail(output, f"a result that is not a tensor ({item!r})")
            for index, seen in enumerate(results):
                if seen is value:
                    return index  # returned twice: one result
            results.append(value)
            self.result_nodes.append(item)
            return len(results) - 1

        return results, visit(output.args[0])
