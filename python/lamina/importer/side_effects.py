"""What a model's forward does besides computing its results, replayed on
the host after every compiled call with the values of that call:

- attributes it sets (llama2.c's ``self.last_loss = loss``): recorded while
  it is traced and taken out of the model again (a trace leaves no proxy
  behind);
- what it prints through a module that records a :class:`Printed` while it
  is traced (Slapo's ``op.Print``).

A tensor the model computes becomes one more result of the program; any
other value (``None``, a number, a string, a shape, a tensor that depends
on no input) is kept as it was traced.
"""

import contextlib
import threading

from torch import fx

_ABSENT = object()
_recording = threading.local()


def record(effect):
    """Adds `effect` to those of the model being traced; False when no
    trace records effects (the caller then acts eagerly)."""
    effects = getattr(_recording, "effects", None)
    if effects is None:
        return False
    effects.append(effect)
    return True


class Printed:
    """A print of `items` (traced values) with print's keyword arguments,
    done after each call."""

    def __init__(self, items, **settings):
        self.items = [(_tensor_node(i), i) if isinstance(i, fx.Proxy)
                      else (None, i) for i in items]
        self.settings = settings
        self.results = []

    @property
    def nodes(self):
        return [node for node, _ in self.items if node is not None]

    def apply(self, model, results):
        indices = iter(self.results)
        values = [results[next(indices)] if node is not None else value
                  for node, value in self.items]
        print(*values, **self.settings)


class SideEffect:
    """`name` set on the module at `path` (``""``: the model): a program
    result when `node` is set (its index in `result`, filled in by the
    importer), else the constant `value`."""

    def __init__(self, path, name, node=None, value=None):
        self.path, self.name = path, name
        self.node, self.value = node, value
        self.results = []

    @property
    def nodes(self):
        """The graph nodes whose values the effect needs from each call."""
        return [self.node] if self.node is not None else []

    def apply(self, model, results):
        """Sets the attribute on `model`'s module with this call's value."""
        module = model.get_submodule(self.path) if self.path else model
        value = self.value if self.node is None else results[self.results[0]]
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
    _recording.effects = effects
    try:
        yield
    finally:
        _recording.effects = None
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
