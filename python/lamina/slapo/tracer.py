"""torch.fx tracing with Slapo's module hierarchy: torch.nn's own modules
and Lamina's layers stay leaves, and unless flattened every submodule is
traced into its own GraphModule in its place."""

from torch import fx, nn

from ..importer import converters
from . import pattern


def _is_torch_leaf(module):
    origin = type(module).__module__
    if getattr(module, "traceable", True) is False:
        return True  # Slapo's mark of a module kept whole (op.Print)
    return origin.startswith(("torch.nn", "torch.ao.nn")) and \
        not isinstance(module, (nn.Sequential, nn.ModuleList))


class _Tracer(fx.Tracer):
    def __init__(self, leaf_paths):
        super().__init__()
        self.leaf_paths = set(leaf_paths)

    def is_leaf_module(self, module, qualified_name):
        return qualified_name in self.leaf_paths or \
            isinstance(module, (fx.GraphModule, pattern.ModulePattern)) or \
            isinstance(module, converters.leaf_classes()) or \
            _is_torch_leaf(module)


def _children_paths(module):
    """The direct children's paths, a ModuleList's elements by index."""
    for name, child in module.named_children():
        if isinstance(child, nn.ModuleList):
            for index, element in child.named_children():
                yield f"{name}.{index}", element
        else:
            yield name, child


def trace_module(module, flatten=False, leaf_modules=(), concrete_args=None):
    """`module` as an fx.GraphModule. Unflattened, its non-leaf children are
    traced first (recursively) and stay calls of their own GraphModules; a
    child named in `leaf_modules` (its path from `module`, or its name at
    any depth, as Slapo's trace_until gives them) stays untraced."""
    leaves = list(leaf_modules)
    if not flatten:
        for path, child in _children_paths(module):
            if path in leaves or isinstance(child, fx.GraphModule):
                continue
            if not _is_torch_leaf(child) and \
                    not isinstance(child, converters.leaf_classes()):
                inner = [p[len(path) + 1:] for p in leaves
                         if p.startswith(path + ".")]
                inner += [p for p in leaves if "." not in p]
                try:
                    traced = trace_module(child, False, inner)
                except Exception:  # noqa: BLE001 (torch.fx raises anything)
                    # Slapo's fallback: a child torch.fx cannot trace
                    # (control flow on its input) stays a module call.
                    leaves.append(path)
                    continue
                owner_name, _, index = path.partition(".")
                if index:
                    getattr(module, owner_name)[int(index)] = traced
                else:
                    setattr(module, owner_name, traced)
            leaves.append(path)
    graph = _Tracer(leaves).trace(module, concrete_args=concrete_args)
    traced = fx.GraphModule(module, graph, type(module).__name__)
    return traced
