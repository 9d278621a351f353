"""Tracing a model with torch.fx at its example inputs, with concrete
values.

Every proxy carries the value its op computes on the example inputs (as
HuggingFace's fx tracer does), so the model's shape code runs as plain
Python: ``B, T, C = x.size()``, ``C // n_head``, ``math.sqrt(k.size(-1))``,
``assert t <= block_size`` and slicing bounds are numbers, not graph nodes.
What computes on tensors becomes a node; what computes on sizes and on
tensors that depend on no input (a causal mask sliced from a buffer,
``torch.arange(t)``) runs eagerly, and such tensors enter the graph as
constants (``get_attr`` nodes holding their value).

Every module class with a converter is a leaf (Lamina's layers stay whole);
every node records the path of the module it is in (``lamina_path``) and
its value (``lamina_value``, plus ``tensor_meta`` for a tensor).
"""

import contextlib
import inspect

import torch
from torch import fx, nn
from torch.fx.passes.shape_prop import _extract_tensor_metadata

from .. import op as lamina_op
from . import converters
from ..errors import UnsupportedOperationError

# The attributes holding a module's Python hooks, by kind.
_HOOKS = {"forward pre": "_forward_pre_hooks", "forward": "_forward_hooks",
          "backward": "_backward_hooks"}


def _hooks_of(module):
    """The kinds of Python hooks `module` holds ("forward pre and ...")."""
    return " and ".join(kind for kind, attribute in _HOOKS.items()
                        if getattr(module, attribute, None))

# Tensor methods whose result depends on the data, not on shapes: a trace
# cannot depend on them and stay right for other inputs.
_DATA_DEPENDENT = {"item", "tolist", "numpy", "__bool__", "__int__",
                   "__float__", "__index__"}


def _contains_tensor(value):
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (list, tuple)):
        return any(_contains_tensor(v) for v in value)
    return False


def _value_of(argument):
    """`argument` (any nesting of proxies, nodes and Python values) with
    every proxy replaced by its concrete value."""
    if isinstance(argument, fx.Proxy):
        return argument.node.meta["lamina_value"]
    if isinstance(argument, fx.Node):
        return argument.meta["lamina_value"]
    if isinstance(argument, torch.Size):
        return argument
    if isinstance(argument, tuple) and hasattr(argument, "_fields"):
        return type(argument)(*(_value_of(a) for a in argument))
    if isinstance(argument, (list, tuple)):
        return type(argument)(_value_of(a) for a in argument)
    if isinstance(argument, dict):
        return {k: _value_of(v) for k, v in argument.items()}
    if isinstance(argument, slice):
        return slice(_value_of(argument.start), _value_of(argument.stop),
                     _value_of(argument.step))
    return argument


def run_node(root, kind, target, args, kwargs):
    """What a node of kind `kind` computes on concrete `args` and `kwargs`,
    its attributes and submodules those of `root` (None for a placeholder
    or an output)."""
    if kind == "get_attr":
        value = root
        for part in target.split("."):
            value = getattr(value, part)
        return value
    if kind == "call_function":
        return target(*args, **kwargs)
    if kind == "call_method":
        return getattr(args[0], target)(*args[1:], **kwargs)
    if kind == "call_module":
        return root.get_submodule(target)(*args, **kwargs)
    return None


class ConcreteProxy(fx.Proxy):
    """A proxy that answers questions about its value's metadata (shape,
    dtype, device, ndim, len) with the example's, instead of recording
    them."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = getattr(self.node.meta["lamina_value"], name)
        if callable(value) or _contains_tensor(value):
            return fx.proxy.Attribute(self, name)
        return value

    def __len__(self):
        return len(self.node.meta["lamina_value"])

    def __iter__(self):
        # fx's own __iter__ reads the caller's bytecode, which it cannot
        # index on Python 3.11; the value knows its length.
        return self.tracer.iter(self)


class Tracer(fx.Tracer):
    """Keeps Lamina's layers whole, records the module path of every node
    and computes every node's value on the example inputs. Without example
    inputs it traces symbolically, as torch.fx does (the graph's structure
    only: a schedule asking where a block's values cross its boundary)."""

    def __init__(self, example_inputs=None):
        super().__init__()
        self._paths = [""]
        self._concrete = example_inputs is not None
        self._inputs = list(example_inputs or ())
        self._constants = {}      # id(tensor) → its get_attr node
        self._evaluating = False  # running a leaf module's forward eagerly

    # -- module paths and leaves --------------------------------------------

    def is_leaf_module(self, module, qualified_name):
        return isinstance(module, converters.leaf_classes()) or \
            super().is_leaf_module(module, qualified_name)

    def call_module(self, module, forward, args, kwargs):
        if self._evaluating:
            return forward(*args, **kwargs)
        hooks = _hooks_of(module)
        if hooks:
            # torch.fx calls forward itself: the hooks would be dropped.
            self._fail(f"module '{self.path_of_module(module)}' with Python "
                       f"{hooks} hooks (compiled code cannot "
                       "call Python; express a sync hook as a schedule "
                       "primitive)")
        self._paths.append(self.path_of_module(module))
        try:
            return super().call_module(module, forward, args, kwargs)
        finally:
            self._paths.pop()

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        if self._evaluating:
            return attr_val
        return super().getattr(attr, attr_val, parameter_proxy_cache)

    # -- values --------------------------------------------------------------

    def _evaluate(self, kind, target, args, kwargs):
        if kind == "placeholder":
            if self._inputs:
                return self._inputs.pop(0)
            return args[0] if args else None  # a specialised default
        # Module attributes and calls as in eager mode, not traced again.
        self._evaluating = True
        try:
            return run_node(self.root, kind, target, _value_of(args),
                            _value_of(kwargs))
        finally:
            self._evaluating = False

    def create_proxy(self, kind, target, args, kwargs, name=None,
                     type_expr=None, proxy_factory_fn=None):
        if kind == "output" or not self._concrete:
            return super().create_proxy(kind, target, args, kwargs, name,
                                        type_expr, proxy_factory_fn)
        if kind == "call_method" and target in _DATA_DEPENDENT:
            self._fail(f"Tensor.{target}() (the trace would depend on the "
                       "example's values)")
        try:
            value = self._evaluate(kind, target, args, kwargs)
        except UnsupportedOperationError:
            raise
        except Exception as error:  # the op itself rejects its operands
            what = getattr(target, "__name__", str(target))
            self._fail(f"{what} ({type(error).__name__}: {error})")
        if kind != "placeholder" and not _contains_tensor(value):
            return value  # shape arithmetic: a plain Python value
        proxy = super().create_proxy(kind, target, args, kwargs, name,
                                     type_expr, proxy_factory_fn)
        self._record(proxy.node, value)
        return proxy

    def create_node(self, *args, **kwargs):
        node = super().create_node(*args, **kwargs)
        node.meta["lamina_path"] = self._paths[-1]
        return node

    def proxy(self, node):
        return ConcreteProxy(node, self) if self._concrete else \
            super().proxy(node)

    def create_arg(self, a):
        # A tensor that depends on no input (a mask sliced from a buffer,
        # torch.arange(t)): a constant node holding its value.
        if self._concrete and isinstance(a, torch.Tensor) and \
                not isinstance(a, nn.Parameter):
            node = self._constants.get(id(a))
            if node is None:
                name = next((n for n, b in self.root.named_buffers()
                             if b is a), None)
                node = self.create_node(
                    "get_attr", name or f"_lamina_constant{len(self._constants)}",
                    (), {})
                node.meta["lamina_constant"] = True
                self._record(node, a)
                self._constants[id(a)] = (node, a)  # keeps `a` alive
                return node
            return node[0]
        return super().create_arg(a)

    @staticmethod
    def _record(node, value):
        node.meta["lamina_value"] = value
        if isinstance(value, torch.Tensor):
            node.meta["tensor_meta"] = _extract_tensor_metadata(value)

    # -- Python control flow on traced values ---------------------------------

    def iter(self, obj):
        # q, k, v = x.split(C, dim=2), or a layer's several results.
        if self._concrete:
            return iter([obj[i] for i in range(len(_value_of(obj)))])
        node = obj.node
        if node.op == "call_module":
            converter = converters.module_converter(
                type(self.root.get_submodule(node.target)))
            if converter is not None and converter.results > 1:
                return iter([obj[i] for i in range(converter.results)])
        return super().iter(obj)

    def to_bool(self, obj):
        if not self._concrete:
            return super().to_bool(obj)
        self._fail("Python control flow on a tensor's values (`if`, "
                   "`while` or `assert` on a tensor)")

    def keys(self, obj):
        if not self._concrete:
            return super().keys(obj)
        self._fail("** unpacking of a tensor")

    def _fail(self, what):
        path = self._paths[-1]
        where = f"module '{path}'" if path else "the model's forward"
        raise UnsupportedOperationError(f"{what} in {where} is not supported "
                                        "by Lamina's importer")


class _Root(nn.Module):
    """Holds a model that is itself one layer, so that it is traced as a
    call of that layer (whose path is "")."""

    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, x):
        return self.layer(x)


@contextlib.contextmanager
def unsharded_fused_qkv(model):
    """Runs every FusedQKV of `model` as its unsharded twin (world_size 1)
    inside the block: with world_size > 1 a FusedQKV only runs eagerly on a
    sharded weight, so shapes (and eager references) come from the twin."""
    layers = [m for m in model.modules() if isinstance(m, lamina_op.FusedQKV)]
    saved = [m.world_size for m in layers]
    for m in layers:
        m.world_size = 1
    try:
        yield
    finally:
        for m, size in zip(layers, saved):
            m.world_size = size


def _specialised_arguments(model, example_inputs):
    """The forward's parameters that are not tensors: example inputs that
    are not (``None``), and the parameters after the example inputs bound
    to their defaults (``targets=None``). The trace takes their branch."""
    try:
        parameters = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        return {}
    named = [p for p in parameters
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    specialised = {p.name: x for p, x in zip(named, example_inputs)
                   if not isinstance(x, torch.Tensor)}
    specialised.update({p.name: p.default
                        for p in named[len(example_inputs):]
                        if p.default is not inspect.Parameter.empty})
    return specialised


def trace(model, example_inputs):
    """The fx graph of `model` on `example_inputs` (tensors), every node
    holding its value."""
    traced = _Root(model) if isinstance(model, converters.leaf_classes()) \
        else model
    hooks = _hooks_of(model)
    if hooks and traced is model:
        raise UnsupportedOperationError(
            f"the model has Python {hooks} hooks, which "
            "Lamina's importer does not support (compiled code cannot call "
            "Python)")
    with unsharded_fused_qkv(model), torch.no_grad(), \
            torch.random.fork_rng(devices=[]):
        # The model's own errors on these inputs are the user's: they show
        # as in eager mode. Lazy layers take their input width here too.
        model(*example_inputs)
        tracer = Tracer([x for x in example_inputs
                         if isinstance(x, torch.Tensor)])
        graph = tracer.trace(
            traced, concrete_args=_specialised_arguments(traced,
                                                         example_inputs))
    for node in list(graph.nodes):
        # The placeholders fx adds for the specialised defaults.
        if node.op == "placeholder" and not node.users and \
                not isinstance(node.meta.get("lamina_value"), torch.Tensor):
            graph.erase_node(node)
    if traced is not model:
        for node in graph.nodes:
            if node.op == "call_module" and node.target == "layer":
                node.meta["lamina_module"] = model
    return graph
