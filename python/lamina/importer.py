"""PyTorch models → lamina IR, through torch.fx.

Supported: nn.Linear and the lamina.op classes (the Slapo linear family),
nn.GELU / F.gelu (erf and tanh), nn.ReLU / F.relu / torch.relu, nn.Dropout /
F.dropout, residual adds of equal shapes, view / reshape that split or merge
dimensions (heads), permute / transpose, contiguous, and lamina.lns's
LNSLinear / LNSLazyLinear. Anything else is an UnsupportedOperationError
naming the op and the module it is in.

Every parameter becomes an argument of the imported function, after the
model's inputs, in the order of first use; a program with an active dropout
takes the dropout seed (i64) last. Module paths are `named_modules` names.
"""

import math
import operator

import torch
import torch.nn.functional as F
from torch import fx, nn
from torch.fx.passes.shape_prop import ShapeProp

from . import lns as lns_module
from . import op as lamina_op


class UnsupportedOperationError(ValueError):
    """The model uses an operation the importer does not map to lamina IR."""


_ELEMENT = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}

_LEAVES = (nn.Linear, nn.Dropout, nn.GELU, nn.ReLU, lamina_op.FusedQKV,
           lns_module.LNSLinear, lns_module.LNSLazyLinear)


class _Tracer(fx.Tracer):
    """Keeps Lamina's layers whole and records the module path of every
    node (for error messages and layer paths)."""

    def __init__(self):
        super().__init__()
        self._paths = [""]

    def is_leaf_module(self, module, qualified_name):
        return isinstance(module, _LEAVES) or super().is_leaf_module(
            module, qualified_name)

    def call_module(self, module, forward, args, kwargs):
        self._paths.append(self.path_of_module(module))
        try:
            return super().call_module(module, forward, args, kwargs)
        finally:
            self._paths.pop()

    def iter(self, obj):
        # q, k, v = qkv(x): a FusedQKV returns three values.
        node = obj.node
        if node.op == "call_module" and isinstance(
                self.root.get_submodule(node.target), lamina_op.FusedQKV):
            return iter([obj[i] for i in range(3)])
        return super().iter(obj)

    def create_node(self, *args, **kwargs):
        node = super().create_node(*args, **kwargs)
        node.meta["lamina_path"] = self._paths[-1]
        return node


def _tensor_type(shape, element):
    return "tensor<" + "".join(f"{s}x" for s in shape) + element + ">"


def _float(value):
    return repr(float(value))


class ImportedModel:
    """The result of importing: the IR text and how to call it."""

    def __init__(self, text, entry, parameters, num_inputs, has_seed,
                 num_results, single_result):
        self.text = text
        self.entry = entry
        # (name, tensor) of each parameter argument, in argument order.
        self.parameters = parameters
        self.num_inputs = num_inputs
        self.has_seed = has_seed
        self.num_results = num_results
        self.single_result = single_result


class _Emitter:
    def __init__(self, model, world_size):
        self.model = model
        self.modules = dict(model.named_modules())
        self.world_size = world_size
        self.lines = []
        self.values = {}        # fx node → SSA name or list of SSA names
        self.types = {}         # SSA name → MLIR type
        self.arguments = []     # (SSA name, MLIR type)
        self.parameters = []    # (name, tensor)
        self.parameter_values = {}  # id(tensor) → SSA name
        self.next_value = 0
        self.dropouts = 0
        self.needs_seed = False

    # -- helpers -----------------------------------------------------------

    def fresh(self):
        self.next_value += 1
        return f"%v{self.next_value}"

    def emit(self, text, result_type=None):
        name = self.fresh()
        self.lines.append(f"    {name} = {text}")
        if result_type:
            self.types[name] = result_type
        return name

    def fail(self, node, what):
        path = node.meta.get("lamina_path", "")
        where = f"module '{path}'" if path else "the model's forward"
        raise UnsupportedOperationError(f"{what} in {where} is not supported "
                                        "by Lamina's importer")

    def parameter(self, name, tensor):
        key = id(tensor)
        if key not in self.parameter_values:
            ssa = f"%p{len(self.parameters)}"
            element = _ELEMENT.get(tensor.dtype)
            type_ = _tensor_type(tuple(tensor.shape), element)
            self.arguments.append((ssa, type_))
            self.parameters.append((name, tensor))
            self.parameter_values[key] = ssa
            self.types[ssa] = type_
        return self.parameter_values[key]

    def seed(self):
        self.needs_seed = True
        return "%seed"

    def dropout_attr(self, p, training):
        offset = self.dropouts
        self.dropouts += 1
        parts = [f"p = {_float(p)}"]
        if training and p > 0:
            parts.append("training")
        if offset:
            parts.append(f"offset = {offset}")
        active = training and p > 0
        return "<" + ", ".join(parts) + ">", active

    @staticmethod
    def shape(node):
        return tuple(node.meta["tensor_meta"].shape)

    def result_type(self, node):
        meta = node.meta["tensor_meta"]
        element = _ELEMENT.get(meta.dtype)
        if element is None:
            self.fail(node, f"element type {meta.dtype}")
        return _tensor_type(tuple(meta.shape), element)

    def value(self, node, arg):
        if not isinstance(arg, fx.Node) or arg not in self.values:
            self.fail(node, f"operand {arg!r} of {node.target}")
        value = self.values[arg]
        if isinstance(value, list):
            self.fail(node, f"a list of values as operand of {node.target}")
        return value

    # -- layers ------------------------------------------------------------

    def linear_layer(self, node, module, path):
        x = self.value(node, node.args[0])
        out_type = self.result_type(node)
        w = self.parameter(f"{path}.weight", module.weight)
        has_bias = module.bias is not None
        b = self.parameter(f"{path}.bias", module.bias) if has_bias else None
        operands = [self.types[x], self.types[w]] + ([self.types[b]] if b else [])
        bias = f" bias {b}" if b else ""
        if isinstance(module, lamina_op.LinearWithAct):
            op = f'lamina.linear_act "{path}" {x}, {w}{bias} activation gelu_tanh'
        elif isinstance(module, lamina_op.LinearWithDropout):
            attr, active = self.dropout_attr(module.p, module.training)
            seed = f" seed {self.seed()}" if active else ""
            if active:
                operands.append("i64")
            op = (f'lamina.linear_dropout "{path}" {x}, {w}{bias} dropout '
                  f"{attr}{seed}")
        elif isinstance(module, lamina_op.LinearWithSeparateBias):
            op = f'lamina.linear_separate_bias "{path}" {x}, {w}{bias}'
        elif isinstance(module, lamina_op.LinearWithSyncFunc):
            op = f'lamina.linear_sync "{path}" {x}, {w}{bias}'
        else:
            op = f'lamina.linear "{path}" {x}, {w}{bias}'
        if getattr(module, "sync_fn", None) is not None:
            raise UnsupportedOperationError(
                f"module '{path}' has a Python sync_fn; Lamina compiles "
                "collectives given by name: use sch[...].sync(mode, "
                "\"all_reduce\" | \"all_gather\" | ...)")
        text = f"{op} : ({', '.join(operands)}) -> {out_type}"
        return self.emit(text, out_type)

    def fused_qkv(self, node, module, path):
        x = self.value(node, node.args[0])
        w = self.parameter(f"{path}.fused_linear.weight",
                           module.fused_linear.weight)
        b = self.parameter(f"{path}.fused_linear.bias",
                           module.fused_linear.bias)
        # The whole-tensor form: every head; sharding the weight by heads
        # (axis 0) hands each rank num_heads / world_size of them.
        shape = self.shape(node.args[0])
        element = self.types[x][self.types[x].rindex("x") + 1:-1]
        out_type = _tensor_type(shape[:-1] + (module.num_heads,
                                              module.head_size), element)
        names = [self.fresh() for _ in range(3)]
        self.lines.append(
            f"    {', '.join(names)} = lamina.fused_qkv \"{path}\" {x}, {w} "
            f"bias {b} num_heads {module.num_heads} world_size "
            f"{module.world_size} : ({self.types[x]}, {self.types[w]}, "
            f"{self.types[b]}) -> ({out_type}, {out_type}, {out_type})")
        for name in names:
            self.types[name] = out_type
        return names

    def lns_linear(self, node, module, path):
        x = self.value(node, node.args[0])
        x_type = self.types[x]
        out_type = self.result_type(node)
        if module.weight is None:
            self.fail(node, "an LNSLazyLinear that has not seen an input")
        num = lns_module.num_type(f=module.weight_f, b=module.weight_b)
        bias_num = lns_module.num_type(f=module.bias_f, b=module.bias_b)
        if module.bias is not None and bias_num != num:
            self.fail(node, "an LNS bias in another base than the weight")
        shape_x = self.shape(node.args[0])
        lns_x = _tensor_type(shape_x, num)
        w = self.parameter(f"{path}.weight", module.weight)
        lns_w = _tensor_type(tuple(module.weight.shape), num)
        ex = self.emit(f"lns.encode {x} : {x_type} -> {lns_x}", lns_x)
        ew = self.emit(f"lns.encode {w} : {self.types[w]} -> {lns_w}", lns_w)
        operands = [lns_x, lns_w]
        bias = ""
        if module.bias is not None:
            b = self.parameter(f"{path}.bias", module.bias)
            lns_b = _tensor_type(tuple(module.bias.shape), num)
            eb = self.emit(f"lns.encode {b} : {self.types[b]} -> {lns_b}",
                           lns_b)
            operands.append(lns_b)
            bias = f" bias {eb}"
        lns_out = _tensor_type(self.shape(node), num)
        y = self.emit(f'lamina.linear "{path}" {ex}, {ew}{bias} : '
                      f"({', '.join(operands)}) -> {lns_out}", lns_out)
        return self.emit(f"lns.decode {y} : {lns_out} -> {out_type}", out_type)

    def activation(self, node, kind, x):
        type_ = self.types[x]
        path = _node_path(node)
        named = f'"{path}" ' if path else ""
        return self.emit(f"lamina.activation {named}{kind} {x} : {type_}",
                         type_)

    def dropout(self, node, x, p, training):
        attr, active = self.dropout_attr(p, training)
        seed = f" seed {self.seed()}" if active else ""
        type_ = self.types[x]
        path = _node_path(node)
        named = f'"{path}" ' if path else ""
        return self.emit(f"lamina.dropout {named}{x} {attr}{seed} : {type_}",
                         type_)

    # -- shapes ------------------------------------------------------------

    def reshape(self, node, x):
        source = self.shape(node.args[0])
        target = self.shape(node)
        out_type = self.result_type(node)
        if source == target:
            return x
        groups = _reassociation(source, target)
        if groups is None:
            self.fail(node, f"reshape {list(source)} → {list(target)} (only "
                      "splitting or merging neighbouring dimensions)")
        op, small = (("tensor.expand_shape", source) if len(target) >
                     len(source) else ("tensor.collapse_shape", target))
        text = "[" + ", ".join("[" + ", ".join(map(str, g)) + "]"
                               for g in groups) + "]"
        if op == "tensor.expand_shape":
            return self.emit(
                f"{op} {x} {text} output_shape [{', '.join(map(str, target))}]"
                f" : {self.types[x]} into {out_type}", out_type)
        return self.emit(f"{op} {x} {text} : {self.types[x]} into {out_type}",
                         out_type)

    def transpose(self, node, x, permutation):
        out_type = self.result_type(node)
        if list(permutation) == sorted(permutation):
            return x
        empty = self.emit(f"tensor.empty() : {out_type}", out_type)
        return self.emit(
            f"linalg.transpose ins({x} : {self.types[x]}) outs({empty} : "
            f"{out_type}) permutation = [{', '.join(map(str, permutation))}]",
            out_type)

    # -- nodes -------------------------------------------------------------

    def visit(self, node):
        if node.op == "placeholder":
            if "tensor_meta" not in node.meta:
                self.fail(node, f"input '{node.target}' that is not a tensor")
            ssa = f"%x{len(self.arguments)}"
            type_ = self.result_type(node)
            self.arguments.append((ssa, type_))
            self.types[ssa] = type_
            return ssa
        if node.op == "call_module":
            # A model that is one layer has the path "".
            module = node.meta.get("lamina_module") or \
                self.modules[node.target]
            path = "" if "lamina_module" in node.meta else node.target
            if isinstance(module, (lns_module.LNSLinear,
                                   lns_module.LNSLazyLinear)):
                return self.lns_linear(node, module, path)
            if isinstance(module, nn.Linear):
                return self.linear_layer(node, module, path)
            if isinstance(module, lamina_op.FusedQKV):
                return self.fused_qkv(node, module, path)
            x = self.value(node, node.args[0])
            if isinstance(module, nn.GELU):
                kind = "gelu_tanh" if module.approximate == "tanh" else "gelu_erf"
                return self.activation(node, kind, x)
            if isinstance(module, nn.ReLU):
                return self.activation(node, "relu", x)
            if isinstance(module, nn.Dropout):
                return self.dropout(node, x, module.p, module.training)
            self.fail(node, f"{type(module).__name__} '{path}'")
        if node.op == "call_function":
            return self.call_function(node)
        if node.op == "call_method":
            return self.call_method(node)
        if node.op == "get_attr":
            self.fail(node, f"direct use of attribute '{node.target}'")
        self.fail(node, f"{node.op} {node.target}")

    def call_function(self, node):
        target = node.target
        if target in (getattr, operator.getitem) and \
                "tensor_meta" not in node.meta:
            base = node.args[0]
            if target is operator.getitem and isinstance(
                    self.values.get(base), list):
                return self.values[base][node.args[1]]
            return None  # shape arithmetic: the consumers' shapes suffice
        if target is operator.getitem:
            base = self.values.get(node.args[0])
            if isinstance(base, list):
                return base[node.args[1]]
        if target in (operator.add, torch.add):
            a, b = node.args[:2]
            if not (isinstance(a, fx.Node) and isinstance(b, fx.Node)) or \
                    self.shape(a) != self.shape(b) or node.kwargs:
                self.fail(node, "an add that is not of two equally shaped "
                          "tensors")
            x, y = self.value(node, a), self.value(node, b)
            return self.emit(f"arith.addf {x}, {y} : {self.types[x]}",
                             self.types[x])
        if target in (F.gelu,):
            x = self.value(node, node.args[0])
            approximate = node.kwargs.get("approximate", "none")
            return self.activation(
                node, "gelu_tanh" if approximate == "tanh" else "gelu_erf", x)
        if target in (F.relu, torch.relu):
            return self.activation(node, "relu",
                                   self.value(node, node.args[0]))
        if target is F.dropout:
            x = self.value(node, node.args[0])
            args = list(node.args[1:])
            p = node.kwargs.get("p", args[0] if args else 0.5)
            training = node.kwargs.get("training",
                                       args[1] if len(args) > 1 else True)
            return self.dropout(node, x, p, training)
        name = getattr(target, "__name__", str(target))
        self.fail(node, f"function {name}")

    def call_method(self, node):
        method = node.target
        if method in ("size", "dim") or "tensor_meta" not in node.meta:
            return None
        x = self.value(node, node.args[0])
        if method in ("view", "reshape"):
            return self.reshape(node, x)
        if method == "contiguous":
            return x
        if method == "permute":
            dims = node.args[1:]
            if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
                dims = dims[0]
            return self.transpose(node, x, list(dims))
        if method == "transpose":
            rank = len(self.shape(node.args[0]))
            d0, d1 = (d % rank for d in node.args[1:3])
            permutation = list(range(rank))
            permutation[d0], permutation[d1] = permutation[d1], permutation[d0]
            return self.transpose(node, x, permutation)
        self.fail(node, f"method Tensor.{method}")


def _node_path(node):
    """The module path a node's op gets: its module's for a layer call,
    the enclosing module's otherwise."""
    if node.op == "call_module":
        return "" if "lamina_module" in node.meta else node.target
    return node.meta.get("lamina_path", "")


def _reassociation(source, target):
    """Groups of `target` dims forming each `source` dim (expand), or of
    `source` dims forming each `target` dim (collapse); None otherwise."""
    expand = len(target) > len(source)
    big, small = (target, source) if expand else (source, target)
    groups, index = [], 0
    for size in small:
        group, product = [], 1
        while index < len(big) and (product < size or not group):
            group.append(index)
            product *= big[index]
            index += 1
        # Trailing unit dims join the last group.
        if product != size:
            return None
        groups.append(group)
    while index < len(big) and big[index] == 1 and groups:
        groups[-1].append(index)
        index += 1
    if index != len(big):
        return None
    return groups


class _TwinQKV:
    """FusedQKV with world_size > 1 only runs eagerly on a sharded weight:
    its shapes are propagated through the unsharded twin (world_size 1)."""

    def __init__(self, model):
        self.modules = [m for m in model.modules()
                        if isinstance(m, lamina_op.FusedQKV)]

    def __enter__(self):
        self.saved = [m.world_size for m in self.modules]
        for m in self.modules:
            m.world_size = 1

    def __exit__(self, *exc):
        for m, size in zip(self.modules, self.saved):
            m.world_size = size


class _Root(nn.Module):
    """Holds a model that is itself one layer, so that it is traced as a
    call of that layer (whose path is "")."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x)


def import_model(model, example_inputs, world_size=1):
    """Traces `model` on `example_inputs` (tensors fixing the shapes) into
    a lamina module declaring `world_size` ranks."""
    traced = _Root(model) if isinstance(model, _LEAVES) else model
    tracer = _Tracer()
    graph = tracer.trace(traced)
    module = fx.GraphModule(traced, graph)
    if traced is not model:
        for node in graph.nodes:
            if node.op == "call_module" and node.target == "layer":
                node.meta["lamina_module"] = model
    with _TwinQKV(model), torch.no_grad():
        # Lazy layers take their input width from the first call.
        model(*example_inputs)
        ShapeProp(module).propagate(*example_inputs)
    emitter = _Emitter(model, world_size)
    output = None
    for node in graph.nodes:
        if node.op == "output":
            output = node
            continue
        emitter.values[node] = emitter.visit(node)
    returned = output.args[0]
    single = isinstance(returned, fx.Node)
    flat = [returned] if single else list(returned)
    results = []
    for item in flat:
        value = emitter.values.get(item)
        if isinstance(value, list):
            results.extend(value)
        elif value is None:
            emitter.fail(item, "a non-tensor result")
        else:
            results.append(value)
    # Inputs first (as traced), then parameters, then the seed.
    inputs = [a for a in emitter.arguments if a[0].startswith("%x")]
    params = [a for a in emitter.arguments if a[0].startswith("%p")]
    arguments = inputs + params + ([("%seed", "i64")] if emitter.needs_seed
                                   else [])
    signature = ", ".join(f"{name}: {type_}" for name, type_ in arguments)
    result_types = [emitter.types[r] for r in results]
    body = "\n".join(emitter.lines)
    text = (f"module attributes {{lamina.world_size = {world_size} : i64}} {{\n"
            f"  func.func @forward({signature}) -> "
            f"({', '.join(result_types)}) {{\n{body}\n"
            f"    return {', '.join(results)} : {', '.join(result_types)}\n"
            "  }\n}\n")
    return ImportedModel(text, "forward", emitter.parameters, len(inputs),
                         emitter.needs_seed, len(results),
                         single and len(results) == 1)
