"""Tracing a model with torch.fx at its example inputs' shapes.

Every module class with a converter is a leaf (Lamina's layers stay whole);
every node records the path of the module it is in (``lamina_path``), for
error messages and the paths of the ops it becomes.
"""

import contextlib

import torch
from torch import fx, nn
from torch.fx.passes.shape_prop import ShapeProp

from .. import op as lamina_op
from . import converters


class Tracer(fx.Tracer):
    """Keeps Lamina's layers whole and records the module path of every
    node."""

    def __init__(self):
        super().__init__()
        self._paths = [""]

    def is_leaf_module(self, module, qualified_name):
        return isinstance(module, converters.leaf_classes()) or \
            super().is_leaf_module(module, qualified_name)

    def call_module(self, module, forward, args, kwargs):
        self._paths.append(self.path_of_module(module))
        try:
            return super().call_module(module, forward, args, kwargs)
        finally:
            self._paths.pop()

    def iter(self, obj):
        # q, k, v = qkv(x): a layer with several results unpacks into them.
        node = obj.node
        if node.op == "call_module":
            converter = converters.module_converter(
                type(self.root.get_submodule(node.target)))
            if converter is not None and converter.results > 1:
                return iter([obj[i] for i in range(converter.results)])
        return super().iter(obj)

    def create_node(self, *args, **kwargs):
        node = super().create_node(*args, **kwargs)
        node.meta["lamina_path"] = self._paths[-1]
        return node


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


def trace(model, example_inputs):
    """The fx graph of `model`, each node's ``tensor_meta`` propagated from
    `example_inputs`."""
    traced = _Root(model) if isinstance(model, converters.leaf_classes()) \
        else model
    graph = Tracer().trace(traced)
    module = fx.GraphModule(traced, graph)
    if traced is not model:
        for node in graph.nodes:
            if node.op == "call_module" and node.target == "layer":
                node.meta["lamina_module"] = model
    with unsharded_fused_qkv(model), torch.no_grad():
        # Lazy layers take their input width from the first call.
        model(*example_inputs)
        ShapeProp(module).propagate(*example_inputs)
    return graph
