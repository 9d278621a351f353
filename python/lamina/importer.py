"""PyTorch models → lamina IR, through torch.fx.

Supported: nn.Linear and the lamina.op classes (the Slapo linear family),
nn.GELU / F.gelu (erf and tanh), nn.ReLU / F.relu / torch.relu, nn.Dropout /
F.dropout, residual adds of equal shapes, tensors scaled by numbers,
torch.matmul of equal batch dims, softmax, nn.LayerNorm over the last dim,
view / reshape that split or merge dimensions (heads), permute / transpose,
contiguous, and lamina.lns's LNSLinear / LNSLazyLinear. Anything else is an UnsupportedOperationError
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

_LEAVES = (nn.Linear, nn.Dropout, nn.GELU, nn.ReLU, nn.Softmax, nn.LayerNorm,
           lamina_op.FusedQKV,
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
    """A float literal MLIR parses (1e-05 must read 1.0e-05)."""
    text = repr(float(value))
    mantissa, exponent = (text.split("e") + [None])[:2]
    if exponent is not None and "." not in mantissa:
        text = f"{mantissa}.0e{exponent}"
    return text


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
    def __init__(self, model):
        self.model = model
        self.modules = dict(model.named_modules())
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
        # The input is encoded in the weight's base; a bias in another base
        # is converted by the spec's mixed-base rule in the layer.
        num = lns_module.num_type(f=module.weight_f, b=module.weight_b)
        bias_num = lns_module.num_type(f=module.bias_f, b=module.bias_b)
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
            lns_b = _tensor_type(tuple(module.bias.shape), bias_num)
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

    # -- attention and normalization ------------------------------------

    def constant_like(self, type_, value):
        return self.emit(f"arith.constant dense<{_float(value)}> : {type_}",
                         type_)

    def scale(self, node):
        """x * c or x / c with a Python number c."""
        a, b = node.args[:2]
        if not isinstance(a, fx.Node) or isinstance(b, fx.Node) or \
                not isinstance(b, (int, float)):
            self.fail(node, "a product or quotient that is not a tensor "
                      "scaled by a number")
        x = self.value(node, a)
        factor = 1.0 / b if node.target in (operator.truediv, torch.div) \
            else float(b)
        c = self.constant_like(self.types[x], factor)
        return self.emit(f"arith.mulf {x}, {c} : {self.types[x]}",
                         self.types[x])

    def matmul(self, node):
        """a @ b on float tensors of equal batch dims: linalg.batch_matmul
        over the flattened batch (linalg.matmul for matrices)."""
        a, b = node.args[:2]
        shape_a, shape_b = self.shape(a), self.shape(b)
        out_type = self.result_type(node)
        element = out_type[out_type.rindex("x") + 1:-1]
        if len(shape_a) < 2 or shape_a[:-2] != shape_b[:-2] or \
                len(shape_a) != len(shape_b):
            self.fail(node, "a matmul of tensors with different batch dims")
        x, y = self.value(node, a), self.value(node, b)
        batch = math.prod(shape_a[:-2])
        m, k = shape_a[-2:]
        n = shape_b[-1]
        zero = self.emit(f"arith.constant 0.0 : {element}")
        if len(shape_a) == 2:
            init = self.emit(f"tensor.empty() : {out_type}", out_type)
            acc = self.emit(f"linalg.fill ins({zero} : {element}) outs({init} "
                            f": {out_type}) -> {out_type}", out_type)
            return self.emit(
                f"linalg.matmul ins({x}, {y} : {self.types[x]}, "
                f"{self.types[y]}) outs({acc} : {out_type}) -> {out_type}",
                out_type)
        groups = "[" + ", ".join(str(i) for i in range(len(shape_a) - 2))
        groups = f"[{groups}], [{len(shape_a) - 2}], [{len(shape_a) - 1}]]"
        flat = lambda r, c: _tensor_type((batch, r, c), element)
        xa = self.emit(f"tensor.collapse_shape {x} {groups} : "
                       f"{self.types[x]} into {flat(m, k)}", flat(m, k))
        yb = self.emit(f"tensor.collapse_shape {y} {groups} : "
                       f"{self.types[y]} into {flat(k, n)}", flat(k, n))
        init = self.emit(f"tensor.empty() : {flat(m, n)}", flat(m, n))
        acc = self.emit(f"linalg.fill ins({zero} : {element}) outs({init} : "
                        f"{flat(m, n)}) -> {flat(m, n)}", flat(m, n))
        product = self.emit(
            f"linalg.batch_matmul ins({xa}, {yb} : {flat(m, k)}, "
            f"{flat(k, n)}) outs({acc} : {flat(m, n)}) -> {flat(m, n)}",
            flat(m, n))
        shape = self.shape(node)
        return self.emit(
            f"tensor.expand_shape {product} {groups} output_shape "
            f"[{', '.join(map(str, shape))}] : {flat(m, n)} into {out_type}",
            out_type)

    def softmax(self, node, x, dim):
        if dim is None:
            self.fail(node, "a softmax without dim")
        rank = len(self.shape(node))
        type_ = self.types[x]
        init = self.emit(f"tensor.empty() : {type_}", type_)
        return self.emit(f"linalg.softmax dimension({dim % rank}) ins({x} : "
                         f"{type_}) outs({init} : {type_}) -> {type_}", type_)

    def layer_norm(self, node, x, module, path):
        """(x − mean) / sqrt(var + eps) · weight + bias over the last dim
        (the biased variance, as nn.LayerNorm), as three linalg generics:
        row sums, row sums of squared deviations, the normalization."""
        shape = self.shape(node)
        if tuple(module.normalized_shape) != shape[-1:]:
            self.fail(node, f"LayerNorm '{path}' over more than the last dim")
        type_ = self.types[x]
        if not type_.endswith("xf32>"):
            self.fail(node, f"LayerNorm '{path}' on {type_}")
        rank = len(shape)
        rows = _tensor_type(shape[:-1], "f32")
        dims = ", ".join(f"d{i}" for i in range(rank))
        outer = ", ".join(f"d{i}" for i in range(rank - 1))
        full = f"affine_map<({dims}) -> ({dims})>"
        row = f"affine_map<({dims}) -> ({outer})>"
        last = f"affine_map<({dims}) -> (d{rank - 1})>"
        reduction = ", ".join(['"parallel"'] * (rank - 1) + ['"reduction"'])
        parallel = ", ".join(['"parallel"'] * rank)
        count = _float(shape[-1])

        def row_sums(mean=None):
            """Σ x over the last dim, or Σ (x − mean)² given the mean."""
            zero = self.emit("arith.constant 0.0 : f32")
            init = self.emit(f"tensor.empty() : {rows}", rows)
            acc = self.emit(f"linalg.fill ins({zero} : f32) outs({init} : "
                            f"{rows}) -> {rows}", rows)
            if mean is None:
                ins, types, maps = x, type_, f"{full}, {row}"
                body = ("^bb0(%a: f32, %s: f32):\n"
                        "      %t = arith.addf %s, %a : f32\n")
            else:
                ins, types = f"{x}, {mean}", f"{type_}, {rows}"
                maps = f"{full}, {row}, {row}"
                body = ("^bb0(%a: f32, %m: f32, %s: f32):\n"
                        "      %d = arith.subf %a, %m : f32\n"
                        "      %d2 = arith.mulf %d, %d : f32\n"
                        "      %t = arith.addf %s, %d2 : f32\n")
            return self.emit(
                f"linalg.generic {{indexing_maps = [{maps}], iterator_types "
                f"= [{reduction}]}} ins({ins} : {types}) outs({acc} : {rows}) "
                f"{{\n    {body}      linalg.yield %t : f32\n    }} -> {rows}",
                rows)

        sums = row_sums()
        per_row = f"affine_map<({outer}) -> ({outer})>"
        row_parallel = ", ".join(['"parallel"'] * (rank - 1))
        mean = self.emit(
            f"linalg.generic {{indexing_maps = [{per_row}, {per_row}], "
            f"iterator_types = [{row_parallel}]}} "
            f"ins({sums} : {rows}) outs({sums} : {rows}) {{\n"
            "    ^bb0(%s: f32, %o: f32):\n"
            f"      %n = arith.constant {count} : f32\n"
            "      %r = arith.divf %s, %n : f32\n"
            f"      linalg.yield %r : f32\n    }} -> {rows}", rows)
        squares = row_sums(mean)

        affine = module.elementwise_affine
        weight = self.parameter(f"{path}.weight", module.weight) \
            if affine else None
        bias = self.parameter(f"{path}.bias", module.bias) \
            if affine and module.bias is not None else None
        params = [v for v in (weight, bias) if v]
        init = self.emit(f"tensor.empty() : {type_}", type_)
        ins = ", ".join([x, mean, squares] + params)
        types = ", ".join([type_, rows, rows] + [self.types[v] for v in params])
        maps = ", ".join([full, row, row] + [last] * len(params) + [full])
        block = "%a: f32, %m: f32, %q: f32" + \
            (", %w: f32" if weight else "") + (", %b: f32" if bias else "")
        tail, result = "", "%y"
        if weight:
            tail += "      %yw = arith.mulf %y, %w : f32\n"
            result = "%yw"
        if bias:
            tail += f"      %yb = arith.addf {result}, %b : f32\n"
            result = "%yb"
        return self.emit(
            f"linalg.generic {{indexing_maps = [{maps}], iterator_types = "
            f"[{parallel}]}} ins({ins} : {types}) outs({init} : {type_}) {{\n"
            f"    ^bb0({block}, %o: f32):\n"
            f"      %n = arith.constant {count} : f32\n"
            f"      %eps = arith.constant {_float(module.eps)} : f32\n"
            "      %var = arith.divf %q, %n : f32\n"
            "      %ve = arith.addf %var, %eps : f32\n"
            "      %r = math.rsqrt %ve : f32\n"
            "      %d = arith.subf %a, %m : f32\n"
            f"      %y = arith.mulf %d, %r : f32\n{tail}"
            f"      linalg.yield {result} : f32\n    }} -> {type_}", type_)

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
            if isinstance(module, nn.Softmax):
                return self.softmax(node, x, module.dim)
            if isinstance(module, nn.LayerNorm):
                return self.layer_norm(node, x, module, path)
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
        if target in (operator.mul, torch.mul, operator.truediv, torch.div):
            return self.scale(node)
        if target in (operator.matmul, torch.matmul):
            return self.matmul(node)
        if target in (F.softmax, torch.softmax):
            dim = node.kwargs.get("dim", node.args[1] if len(node.args) > 1
                                  else None)
            return self.softmax(node, self.value(node, node.args[0]), dim)
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
        if method == "softmax":
            dim = node.kwargs.get("dim", node.args[1] if len(node.args) > 1
                                  else None)
            return self.softmax(node, x, dim)
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
    emitter = _Emitter(model)
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
