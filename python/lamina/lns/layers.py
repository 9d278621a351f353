"""LNS layers: LNSModule (the base of layers holding LNS parameters),
LNSLinear and LNSLazyLinear, bit-exact with the xlnstorch reference.

An LNS parameter `name` is registered the way the reference registers it:
its codes in a float64 Parameter `<name>_lns` (exact below 2^53), its base
in a buffer `<name>_base`, so that state_dict()/load_state_dict() keep both.
`module.name` reads back an LNSTensor on that Parameter; gradients reach the
Parameter's `.grad` as codes.
"""

import math
import warnings

import torch
from torch import nn
import torch.nn.functional as F

from .base import Base
from .graph import clear_gradient
from .tensor import LNSTensor, lnstensor

# Significand bits of the float types a layer may return.
SIGNIFICAND_BITS = {torch.float64: 53, torch.float32: 24, torch.float16: 11,
                     torch.bfloat16: 8}


class LNSPrecisionWarning(UserWarning):
    """A layer's float output cannot hold its LNS values exactly: chained
    LNS layers would re-encode other codes than the reference's."""


class LNSModule(nn.Module):
    """A module whose LNSTensor attributes are parameters (see the module
    docstring); :meth:`lns_parameters` gives the groups an LNS optimizer
    takes."""

    def register_parameter(self, name, param, requires_grad=True):
        if not isinstance(param, LNSTensor):
            return super().register_parameter(name, param)
        codes = nn.Parameter(param.lns.detach().clone(),
                             requires_grad=requires_grad)
        register_lns_codes(self, name, codes, param.base)
        return None

    def __getattr__(self, name):
        names = self.__dict__.get("_lns_names", ())
        if name in names:
            codes = self._parameters[name + "_lns"]
            base = Base.of(self._buffers[name + "_base"])
            codes._lns_base = base  # the base its gradients accumulate in
            return LNSTensor(codes, base)
        return super().__getattr__(name)

    def __setattr__(self, name, value):
        # Assigning to an LNS parameter replaces it (codes and base); any
        # other LNSTensor attribute stays a plain attribute, as in the
        # reference (parameters are registered explicitly).
        if isinstance(value, LNSTensor) and name in self.__dict__.get(
                "_lns_names", ()):
            self.register_parameter(name, value)
        else:
            super().__setattr__(name, value)

    def named_lns_parameters(self):
        """(name, LNSTensor) of every LNS parameter here and below."""
        for prefix, module in self.named_modules():
            for name in sorted(module.__dict__.get("_lns_names", ())):
                yield (f"{prefix}.{name}" if prefix else name,
                       getattr(module, name))

    def lns_parameters(self):
        """One group per LNS parameter, ``{"params": [codes], "base":
        base}`` (codes: the float64 Parameter; base: its 0-d buffer), in
        registration order: what LNSSGD and LNSAdam take. Empty before a
        lazy layer's first input."""
        return lns_parameter_groups(self)

    def parameter_groups(self):
        """The reference's name for :meth:`lns_parameters`."""
        return self.lns_parameters()

    def zero_grad(self, set_to_none=True):
        """Clears every parameter's gradient and the LNS gradients
        accumulated over earlier backward calls."""
        for p in self.parameters():
            clear_gradient(p, set_to_none)

    def _apply(self, fn, *args, **kwargs):
        # Codes and bases stay float64 under .float() / .half() / .to(dtype):
        # a conversion would change the codes; devices move as usual.
        protected = set()
        for name in self.__dict__.get("_lns_names", ()):
            codes = self._parameters[name + "_lns"]
            protected |= {id(codes), id(self._buffers[name + "_base"])}
            if codes.grad is not None:
                protected.add(id(codes.grad))

        def keep_codes(t):
            moved = fn(t)
            if id(t) in protected and moved.dtype != t.dtype:
                return t.to(device=moved.device)
            return moved

        return super()._apply(keep_codes, *args, **kwargs)


def _base(f, b, what):
    if f is not None and b is not None:
        raise ValueError(f"{what}_f and {what}_b are mutually exclusive")
    return f, b


def _check_round_trip(layer, dtype):
    """Warns once per layer when float outputs of `dtype` lose codes of the
    layer's base: a float of p significand bits holds every value of base
    2^(2^-f) only for f ≤ p − 2 (float32 keeps all codes up to f = 22)."""
    bits = SIGNIFICAND_BITS.get(dtype)
    base = layer.weight.lns_base
    f = base.f if base.f is not None else -math.log2(math.log2(base.b))
    if bits is None or f <= bits - 2 or layer._warned_dtype == dtype:
        return
    layer._warned_dtype = dtype
    warnings.warn(
        f"{type(layer).__name__} with f = {f:g} returns {dtype}, whose "
        f"{bits}-bit significand cannot hold every LNS value of that base: "
        f"the next LNS layer would encode other codes than the reference. "
        f"Pass LNS tensors (lamina.lns.lnstensor) or float64 between LNS "
        f"layers", LNSPrecisionWarning, stacklevel=3)


class _FloatBoundary(torch.autograd.Function):
    """A float input through an LNS layer, as a compiled program with the
    layer replaced by its LNS variant computes it: the input is encoded in
    the weight's base and the result decoded to the input's dtype. The
    backward encodes the float cotangent in that base, runs the LNS
    backward (the parameters' gradients accumulate in LNS) and returns the
    input's gradient decoded."""

    @staticmethod
    def forward(ctx, layer, x, *parameters):
        base = layer.weight.lns_base
        with torch.enable_grad():
            x_lns = lnstensor(x.detach(), b=base)
            if x.requires_grad:
                x_lns.requires_grad_()
            y = F.linear(x_lns, layer.weight, layer.bias)
        ctx.x_lns, ctx.y, ctx.dtype = x_lns, y, x.dtype
        return y.value.to(x.dtype)

    @staticmethod
    def backward(ctx, grad_output):
        x_lns, y = ctx.x_lns, ctx.y
        y.backward(lnstensor(grad_output.detach(), b=y.lns_base))
        ctx.x_lns = ctx.y = None
        grad_x = None
        if x_lns.requires_grad and x_lns.grad is not None:
            grad_x = x_lns.grad.value.to(ctx.dtype)
        return (None, grad_x) + (None,) * (len(ctx.needs_input_grad) - 2)


def register_lns_codes(module, name, codes, base):
    """Registers the LNS parameter `name` of `module` as the reference
    does: its codes (a float64 Parameter) as `<name>_lns`, its base (a 0-d
    tensor) as the buffer `<name>_base`, and `name` in the module's
    `_lns_names` (what lns_parameters() and LNSModule attribute access
    read). A float parameter or attribute of that name is replaced."""
    module.__dict__.pop(name, None)
    module._parameters.pop(name, None)
    nn.Module.register_parameter(module, name + "_lns", codes)
    module.register_buffer(name + "_base", base)
    module.__dict__.setdefault("_lns_names", set()).add(name)


def lns_parameter_groups(module):
    """One group per LNS parameter of `module` and its submodules (the
    LNSModules among them), ``{"params": [codes], "base": base}``, in
    registration order."""
    groups = []
    for child in module.modules():
        names = child.__dict__.get("_lns_names", ())
        for name, codes in child._parameters.items():
            if name.endswith("_lns") and name[:-4] in names:
                groups.append({"params": [codes],
                               "base": child._buffers[name[:-4] + "_base"]})
    return groups


class LNSLinear(LNSModule):
    """y = x·Wᵀ + b in LNS: the sequential dot products of the spec, the
    bias added once after them.

    An LNSTensor input gives an LNSTensor output in the input's base, with
    autograd (parameters in another base are converted, and so are their
    gradients). A float input is encoded in the weight's base and the
    result decoded to the input's dtype, as the compiled model computes
    it; its backward crosses the same boundary (the float cotangent
    encoded, the input's gradient decoded), the parameters' gradients in
    LNS. Weights and bias start as the reference draws them,
    (u·2 − 1)·√k with u uniform in [0, 1) and k = 1 / in_features, every
    step an LNS operation in ``weight_f``/``weight_b`` (default f = 23)
    and ``bias_f``/``bias_b`` (default: the weight's base).
    """

    def __init__(self, in_features, out_features, bias=True, device=None,
                 weight_f=None, weight_b=None, bias_f=None, bias_b=None):
        super().__init__()
        self.weight_f, self.weight_b = _base(weight_f, weight_b, "weight")
        self.bias_f, self.bias_b = _base(bias_f, bias_b, "bias")
        if (self.weight_f, self.weight_b) == (None, None):
            self.weight_f = Base().f
        if (self.bias_f, self.bias_b) == (None, None):
            self.bias_f, self.bias_b = self.weight_f, self.weight_b
        self._weight_base = Base(self.weight_f, self.weight_b)
        self._bias_base = Base(self.bias_f, self.bias_b)
        self.in_features = in_features
        self.out_features = out_features
        self._has_bias = bias
        self._warned_dtype = None
        if in_features is None:
            self.__dict__["weight"] = None
            self.__dict__["bias"] = None
        else:
            self._materialize(in_features, device)

    @classmethod
    def from_linear(cls, linear, weight_f=None, weight_b=None, bias_f=None,
                    bias_b=None):
        """An LNSLinear holding `linear`'s (an nn.Linear) weight and bias
        encoded in the given bases: the layer the importer's encoding of
        float weights computes with."""
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"from_linear takes an nn.Linear, got "
                            f"{type(linear).__name__}")
        layer = cls(linear.in_features, linear.out_features,
                    linear.bias is not None, linear.weight.device, weight_f,
                    weight_b, bias_f, bias_b)
        layer.weight = lnstensor(linear.weight.detach(),
                                 **layer._weight_base.kw())
        if linear.bias is not None:
            layer.bias = lnstensor(linear.bias.detach(),
                                   **layer._bias_base.kw())
        return layer

    def _materialize(self, in_features, device=None, initialise=True):
        """Creates the parameters as the reference draws them, (u·2 − 1)·√k
        in LNS arithmetic, weight then bias (so that a seed gives its
        codes), or zeros that a state dict is about to overwrite (no random
        numbers drawn)."""
        # Imported here: convolution builds on this module's LNSModule.
        from .convolution import reference_uniform
        self.in_features = in_features
        sqrt_k = (1.0 / in_features) ** 0.5 if in_features else 0.0

        def initial(shape, base):
            if initialise:
                return reference_uniform(shape, sqrt_k, base, device)
            return lnstensor(torch.zeros(*shape, dtype=torch.float64,
                                         device=device), **base.kw())

        self.register_parameter(
            "weight", initial((self.out_features, in_features),
                              self._weight_base))
        if self._has_bias:
            self.register_parameter(
                "bias", initial((self.out_features,), self._bias_base))
        else:
            self.__dict__["bias"] = None

    def forward(self, x):
        if x.shape[-1] != self.in_features:
            raise ValueError(f"{type(self).__name__} takes inputs of width "
                             f"{self.in_features}, got {x.shape[-1]}")
        if isinstance(x, LNSTensor):
            return F.linear(x, self.weight, self.bias)
        _check_round_trip(self, x.dtype)
        parameters = [p.lns for p in (self.weight, self.bias) if p is not None]
        if torch.is_grad_enabled() and (x.requires_grad or any(
                p.requires_grad for p in parameters)):
            return _FloatBoundary.apply(self, x, *parameters)
        with torch.no_grad():
            y = F.linear(lnstensor(x, b=self.weight.lns_base), self.weight,
                         self.bias)
        return y.value.to(x.dtype)

    def extra_repr(self):
        return (f"in_features={self.in_features}, "
                f"out_features={self.out_features}, "
                f"bias={self._has_bias}, base={self._weight_base}")


class LNSLazyLinear(LNSLinear):
    """LNSLinear whose in_features is taken from its first input; a later
    input of another width is an error."""

    def __init__(self, out_features, bias=True, device=None, weight_f=None,
                 weight_b=None, bias_f=None, bias_b=None):
        super().__init__(None, out_features, bias, device, weight_f,
                         weight_b, bias_f, bias_b)

    def forward(self, x):
        if self.weight is None:
            self._materialize(x.shape[-1], x.device)
        return super().forward(x)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # A state dict gives a layer that has seen no input its
        # in_features, as torch's lazy modules take their shapes from it.
        codes = state_dict.get(prefix + "weight_lns")
        if self.weight is None and codes is not None:
            self._materialize(codes.shape[-1], codes.device, initialise=False)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)


class LNSIdentity(LNSModule):
    """torch.nn.Identity among LNS layers: returns its input; arguments
    are accepted and ignored, as torch's are."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):  # noqa: A002 - torch's name
        return input


# The other LNS layers live in their own modules; they are named here too,
# where the reference has them (xlnstorch.layers). These modules import
# this one, so the import comes last.
from .bilinear import LNSBilinear  # noqa: E402,F401
from .convolution import LNSConv1d, LNSConv2d, LNSConv3d  # noqa: E402,F401
from .dropout import (LNSDropout, LNSDropout1d, LNSDropout2d,  # noqa: E402,F401
                      LNSDropout3d)
