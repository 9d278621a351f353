"""The importer's converter tables: how each traced torch.fx node becomes
lamina IR.

Three tables, filled by the :func:`converts` decorator in the family modules
of this package (one module per op family, one converter per op; every
module here is imported with the package):

- :data:`MODULES` — ``call_module`` nodes, by module class (a subclass takes
  its nearest registered base's converter), called as
  ``convert(emitter, node, module, path)``;
- :data:`FUNCTIONS` — ``call_function`` nodes, by target
  (``torch.matmul``, ``operator.add`` ...), called as
  ``convert(emitter, node)``;
- :data:`METHODS` — ``call_method`` nodes, by Tensor method name, called as
  ``convert(emitter, node)``.

A converter returns the node's Value (a list of Values for a layer with
several results, None for shape arithmetic) and reports what it cannot
import through ``emitter.fail``. Every registered module class is traced as a
leaf. ``docs/importer-coverage.md`` is generated from these tables
(``utils/gen-importer-coverage.py``).
"""

import dataclasses
import importlib
import inspect
import pkgutil

from torch import nn


@dataclasses.dataclass(frozen=True)
class Converter:
    """One registered converter: the function, its family (the module it is
    written in) and, for module classes, how many results the layer has and
    whether it imports as one layer op (the ops schedules address)."""

    convert: object
    family: str
    results: int = 1
    layer: bool = False

    @property
    def summary(self):
        """The first paragraph of the converter's docstring, on one line."""
        paragraph = inspect.getdoc(self.convert).split("\n\n")[0]
        return " ".join(paragraph.split())

    def __call__(self, *args):
        return self.convert(*args)


MODULES = {}
FUNCTIONS = {}
METHODS = {}


def converts(*keys, results=1, layer=False):
    """Registers the decorated converter for each key: an nn.Module class, a
    Tensor method name (a str) or a function. `results`: how many tensors a
    module returns (a FusedQKV returns q, k, v); `layer`: the module imports
    as one lamina layer op (LaminaLayerOpInterface), which schedule
    primitives address by the module's path."""

    def register(convert):
        if not inspect.getdoc(convert):
            raise TypeError(f"converter {convert.__name__} needs a docstring "
                            "(its line in the coverage table)")
        converter = Converter(convert, convert.__module__.rsplit(".", 1)[-1],
                              results, layer)
        for key in keys:
            if isinstance(key, str):
                table = METHODS
            elif isinstance(key, type) and issubclass(key, nn.Module):
                table = MODULES
            else:
                table = FUNCTIONS
            if key in table:
                raise ValueError(f"{key!r} has two converters")
            table[key] = converter
        return convert

    return register


def module_converter(module_class):
    """The converter of `module_class` or of its nearest registered base;
    None if there is none."""
    for base in module_class.__mro__:
        if base in MODULES:
            return MODULES[base]
    return None


def is_layer(module):
    """Whether the importer maps `module` to one layer op: the one list of
    what a layer is (the converters registered with ``layer=True``)."""
    converter = module_converter(type(module))
    return converter is not None and converter.layer


def leaf_classes():
    """The module classes the tracer keeps whole (every registered one)."""
    return tuple(MODULES)


def _import_families():
    """Imports every module of this package: each family registers its
    converters as it loads, so a new family is just a new file."""
    for family in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{family.name}")


_import_families()
