"""The model's face on the compiled module: what the compiled module does
not define itself resolves on the model, as on ``torch.compile``'s wrapper,
and the model's own methods run with the compiled module as ``self``, so
that their ``self(...)`` calls (``generate``) run the compiled forward.

The compiled module's tree (:class:`Parameters` nodes holding the
parameters the program takes) falls through the same way to the model's
module at the same path: ``compiled.transformer.wte(idx)`` runs the model's
embedding, ``compiled.transformer.h[0].attn.bias`` is the model's buffer,
and assigning an attribute the node does not hold assigns it on the model's
module (``crop_block_size``).
"""

import inspect
import types

from torch import nn

_MISSING = object()


def model_attribute(owner, original, name):
    """`original`'s attribute `name` as seen from `owner`: a method defined
    by the model's class is bound to `owner` (its ``self(...)`` is the
    compiled module), a property is read on `owner`; anything else is the
    model's own (its submodules, buffers, config)."""
    try:
        static = inspect.getattr_static(original, name)
    except AttributeError:
        static = _MISSING
    if isinstance(static, types.FunctionType) and \
            name not in original.__dict__:
        return types.MethodType(static, owner)
    if isinstance(static, property):
        return static.__get__(owner)
    return getattr(original, name)


def owns(module, name):
    """Whether `name` is `module`'s own: a parameter, buffer or submodule
    it holds, an instance attribute, or an attribute of its class."""
    return (name in module.__dict__ or
            name in module.__dict__.get("_parameters", ()) or
            name in module.__dict__.get("_buffers", ()) or
            name in module.__dict__.get("_modules", ()) or
            hasattr(type(module), name))


def set_through(module, original, name, value):
    """Assigns `name` on the compiled tree's `module` and on the model's
    `original`: a parameter `module` holds is replaced on both (the next
    call computes with the new one); an attribute `module` does not hold is
    the model's alone (the compiled module reads it through)."""
    if original is None or name.startswith("_"):
        return False
    if name in module.__dict__.get("_parameters", ()):
        if isinstance(value, nn.Parameter) and \
                name in original._parameters:
            setattr(original, name, value)
        return False
    if owns(module, name) or not hasattr(original, name):
        return False
    setattr(original, name, value)
    return True


class Face:
    """Mixin of a compiled module (or a node of its tree) whose original is
    ``self._face_original()``."""

    def _face_original(self):
        raise NotImplementedError

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            original = self._face_original()
            if original is None or name.startswith("__"):
                raise
        return model_attribute(self, original, name)

    def __setattr__(self, name, value):
        if not set_through(self, self._face_original(), name, value):
            super().__setattr__(name, value)

    def __dir__(self):
        original = self._face_original()
        return sorted(set(super().__dir__()) |
                      set(dir(original) if original is not None else ()))

    # A container of the model (nn.ModuleList, nn.Sequential, nn.ModuleDict)
    # indexes and iterates here as there, yielding the compiled tree's nodes
    # (the model's modules where the tree has none).

    def _child(self, name):
        node = self._modules.get(name)
        return node if node is not None else \
            self._face_original()._modules[name]

    def __bool__(self):
        return True

    def __iter__(self):
        original = self._face_original()
        if not isinstance(original, (nn.ModuleList, nn.Sequential)):
            raise TypeError(f"'{type(original).__name__}' is not iterable")
        return iter([self._child(name) for name in original._modules])

    def __len__(self):
        return len(self._face_original())

    def __getitem__(self, index):
        original = self._face_original()
        names = list(original._modules)
        if isinstance(original, nn.ModuleDict):
            return self._child(index)
        if isinstance(index, slice):
            return [self._child(name) for name in names[index]]
        return self._child(names[index])
