"""LNS parameters of a compiled model: the number format's side of
``lamina.runtime.formats``.

A compiled model holds an LNS parameter as lamina.lns layers do: its codes
in a float64 Parameter ``<name>_lns``, its base in a buffer ``<name>_base``,
the name in the owner's ``_lns_names``. Its gradients arrive as int64 codes
and are added in LNS, as lamina.lns leaves' are (torch's engine would add
them as floats).
"""

import numpy as np
import torch
from torch import nn

from .base import Base
from .graph import accumulate
from .layers import register_lns_codes
from .tensor import lnstensor


class LnsParameters:
    """The LNS format of ``lamina.runtime.formats``."""

    @staticmethod
    def holds(parameter):
        """Whether `parameter` holds LNS codes."""
        return getattr(parameter, "_lns_base", None) is not None

    @staticmethod
    def registered_name(name):
        """The name the codes of the model's parameter `name` go under."""
        return f"{name}_lns"

    @staticmethod
    def copy_registration(module, model):
        """`model`'s LNS layers' names and bases, on the module tree of the
        compiled model that registered their codes under the same paths."""
        for path, owner in model.named_modules():
            for name in owner.__dict__.get("_lns_names", ()):
                target = module.get_submodule(path) if path else module
                target._buffers[f"{name}_base"] = \
                    owner._buffers[f"{name}_base"]
                target.__dict__.setdefault("_lns_names", set()).add(name)
                owner._parameters[f"{name}_lns"]._lns_base = \
                    getattr(owner, name).lns_base

    @staticmethod
    def register(module, name, tensor, base):
        """The codes of float `tensor` (the model's parameter `name`) in
        `base` (an argument_lns_bases entry: ("f", f) or ("b", b)),
        registered on `module`'s tree in its place; False when `tensor` is
        not a float parameter to convert (codes already, or no base)."""
        if base is None or LnsParameters.holds(tensor):
            return False
        kind, value = base
        base = Base(f=value) if kind == "f" else Base(b=value)
        *path, leaf = name.split(".")
        owner = module.get_submodule(".".join(path)) if path else module
        codes = nn.Parameter(lnstensor(tensor.detach(), **base.kw()).lns,
                             requires_grad=tensor.requires_grad)
        codes._lns_base = base  # the base its gradients accumulate in
        register_lns_codes(owner, leaf, codes, base.tensor())
        return True

    @staticmethod
    def accumulate(parameter, gradient):
        """Adds the codes `gradient` (NumPy int64) to `parameter.grad` in
        LNS; None: nothing is left for autograd to add."""
        accumulate(parameter, torch.from_numpy(
            np.asarray(gradient, dtype=np.int64).astype(np.float64)))
        return None
