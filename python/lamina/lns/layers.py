"""LNSLinear and LNSLazyLinear: torch layers computing in LNS through the
kernels of :mod:`lamina.lns.kernels`, bit-exact with the xlnstorch
reference."""

import math
import warnings

import torch
from torch import nn

from .kernels import DEFAULT_F, decode, encode, linear, num_type

# Significand bits of the float types a layer may return.
_SIGNIFICAND_BITS = {torch.float64: 53, torch.float32: 24, torch.float16: 11,
                     torch.bfloat16: 8}


class LNSPrecisionWarning(UserWarning):
    """A layer's float output cannot hold its LNS values exactly: chained
    LNS layers would re-encode other codes than the reference's."""


def _fractional_bits(f, b):
    """The base's fractional bits: f, or log2(1 / log2(b)) for b."""
    return f if f is not None else -math.log2(math.log2(b))


def _check_round_trip(layer, dtype):
    """Warns once per layer when `dtype` loses codes of the layer's base:
    a float of p significand bits holds every value of base 2^(2^-f) only
    for f ≤ p − 2 (measured: float32 keeps all codes up to f = 22, loses
    8% at f = 23)."""
    bits = _SIGNIFICAND_BITS.get(dtype)
    f = _fractional_bits(layer.weight_f, layer.weight_b)
    if bits is None or f <= bits - 2 or layer._warned_dtype == dtype:
        return
    layer._warned_dtype = dtype
    warnings.warn(
        f"{type(layer).__name__} with f = {f:g} returns {dtype}, whose "
        f"{bits}-bit significand cannot hold every LNS value of that base: "
        f"the next LNS layer would encode other codes than the reference. "
        f"Pass float64 inputs (x.double()) between LNS layers",
        LNSPrecisionWarning, stacklevel=3)


def _base(f, b, what):
    if f is not None and b is not None:
        raise ValueError(f"{what}_f and {what}_b are mutually exclusive")
    return f, b


class LNSLinear(nn.Module):
    """y = x·Wᵀ + b computed in LNS: the input encoded in the weight's base,
    the sequential dot products of the spec, the bias (in its own base,
    converted by the mixed-base rule) added once, the result decoded.

    Parameters are float tensors initialised as nn.Linear's;
    :meth:`lns_parameters` gives their LNS codes. The weight's base is
    ``weight_f`` or ``weight_b`` (default f = 23); the bias's defaults to
    the weight's.
    """

    def __init__(self, in_features, out_features, bias=True, device=None,
                 weight_f=None, weight_b=None, bias_f=None, bias_b=None):
        super().__init__()
        self.weight_f, self.weight_b = _base(weight_f, weight_b, "weight")
        self.bias_f, self.bias_b = _base(bias_f, bias_b, "bias")
        if (self.weight_f, self.weight_b) == (None, None):
            self.weight_f = DEFAULT_F
        if (self.bias_f, self.bias_b) == (None, None):
            self.bias_f, self.bias_b = self.weight_f, self.weight_b
        num_type(self.weight_f, self.weight_b)  # validates b > 1
        num_type(self.bias_f, self.bias_b)
        self.in_features = in_features
        self.out_features = out_features
        self._warned_dtype = None
        self.weight = None
        self.bias = None
        self._has_bias = bias
        if in_features is not None:
            self._materialize(in_features, device)

    def _materialize(self, in_features, device=None):
        self.in_features = in_features
        self.weight = nn.Parameter(torch.empty(self.out_features, in_features,
                                               device=device))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self._has_bias:
            self.bias = nn.Parameter(torch.empty(self.out_features,
                                                 device=device))
            bound = 1.0 / math.sqrt(in_features) if in_features else 0.0
            nn.init.uniform_(self.bias, -bound, bound)

    def lns_parameters(self):
        """The parameters as LNS codes (int64 NumPy arrays), by name."""
        codes = {"weight": encode(self.weight.detach().double().numpy(),
                                  f=self.weight_f, b=self.weight_b)}
        if self.bias is not None:
            codes["bias"] = encode(self.bias.detach().double().numpy(),
                                   f=self.bias_f, b=self.bias_b)
        return codes

    def forward(self, x):
        if x.shape[-1] != self.in_features:
            raise ValueError(f"{type(self).__name__} takes inputs of width "
                             f"{self.in_features}, got {x.shape[-1]}")
        codes = self.lns_parameters()
        x_codes = encode(x.detach().double().numpy(), f=self.weight_f,
                         b=self.weight_b)
        y = linear(x_codes, codes["weight"], codes.get("bias"),
                   f=self.weight_f, b=self.weight_b, bias_f=self.bias_f,
                   bias_b=self.bias_b)
        _check_round_trip(self, x.dtype)
        return torch.from_numpy(
            decode(y, f=self.weight_f, b=self.weight_b)).to(x.dtype)


class LNSLazyLinear(LNSLinear):
    """LNSLinear whose in_features is taken from its first input; a later
    input of another width is an error."""

    def __init__(self, out_features, bias=True, device=None, weight_f=None,
                 weight_b=None, bias_f=None, bias_b=None):
        super().__init__(None, out_features, bias, device, weight_f,
                         weight_b, bias_f, bias_b)

    def lns_parameters(self):
        if self.weight is None:
            raise ValueError("LNSLazyLinear has no parameters before its "
                             "first input")
        return super().lns_parameters()

    def forward(self, x):
        if self.weight is None:
            self._materialize(x.shape[-1], x.device)
        return super().forward(x)
