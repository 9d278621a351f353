"""Attributes a model sets in its forward (llama2.c's ``self.last_loss =
loss``): recorded while it is traced, taken out of the model again (a trace
leaves no proxy behind), and set after every compiled call with the values
of that call.

An attribute whose traced value is a tensor computed by the model becomes
one more result of the program; any other value (``None``, a number, a
tensor that depends on no input) is set as it was traced.
"""

import contextlib

from torch import fx

_ABSENT = object()


class SideEffect:
    """`name` set on the module at `path` (``""``: the model): a program
    result when `node` is set (its index in `result`, filled in by the
    importer), else the constant `value`."""

    def __init__(self, path, name, node=None, value=None):
        self.path, self.name = path, name
        self.node, self.value = node, value
        self.result = None

    def apply(self, model, results):
        """Sets the attribute on `model`'s module with this call's value."""
        module = model.get_submodule(self.path) if self.path else model
        value = self.value if self.node is None else results[self.result]
        setattr(module, self.name, value)


def _tensor_node(proxy):
    """The graph node of a traced value that is a tensor, else None."""
    return proxy.node if "tensor_meta" in proxy.node.meta else None


@contextlib.contextmanager
def recorded_side_effects(model, effects):
    """Appends to `effects` a :class:`SideEffect` for each attribute the
    block sets or replaces on `model`'s modules. An attribute left holding a
    traced value is restored as it was before the block; one set to a plain
    value keeps it (what a lazy layer's first call sets stays set), and is
    an effect unless private (``_name``)."""
    before = {path: dict(module.__dict__)
              for path, module in model.named_modules()}
    try:
        yield
    finally:
        for path, module in model.named_modules():
            old = before.get(path, {})
            for name, value in list(module.__dict__.items()):
                if old.get(name, _ABSENT) is value or name.startswith("__"):
                    continue
                if not isinstance(value, fx.Proxy):
                    if not name.startswith("_"):
                        effects.append(SideEffect(path, name, value=value))
                    continue
                effects.append(SideEffect(
                    path, name, _tensor_node(value),
                    value.node.meta.get("lamina_value")))
                if name in old:
                    module.__dict__[name] = old[name]
                else:
                    del module.__dict__[name]
