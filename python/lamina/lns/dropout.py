"""LNS channel dropout: F.dropout1d/2d/3d on LNS tensors and the
LNSDropout, LNSDropout1d/2d/3d layers.

Each channel (batched input: per sample and channel) is kept with
probability 1 − p; the keep mask is drawn as the xlnstorch reference draws
it, ``torch.bernoulli(torch.full(mask_shape, 1 - p, dtype=torch.float64))``
with one entry per channel, so a torch seed keeps the reference's channels.
As in F.dropout (and torch), the kept elements are multiplied by
enc(1 / (1 − p)) and the dropped ones become Z: one LNS multiplication by a
mask of codes, whose gradient is mul(g, mask). The reference leaves kept
elements unscaled in the forward yet scales their gradient; Lamina scales
both.
"""

import warnings

import torch
import torch.nn.functional as F

from . import autograd as A
from .functional import _result, implements
from .layers import LNSModule

_SPATIAL = {"dropout1d": 1, "dropout2d": 2, "dropout3d": 3}


def _check_probability(p):
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, "
                         f"but got {p}")


def _mask(shape, channel_dims, p, base):
    """Codes enc(1 / (1 − p)) for kept channels and Z for dropped ones,
    expanded to `shape`; one Bernoulli draw per channel."""
    spatial = len(shape) - channel_dims
    mask_shape = tuple(shape[:channel_dims]) + (1,) * spatial
    keep = torch.bernoulli(torch.full(mask_shape, 1 - p, dtype=torch.float64))
    scale = float(A.ZERO) if p == 1.0 else float(A.constant(1.0 / (1.0 - p),
                                                            base))
    mask = torch.where(keep == 1, torch.tensor(scale, dtype=torch.float64),
                       torch.tensor(float(A.ZERO), dtype=torch.float64))
    return mask.expand(shape).contiguous()


def _channel_dropout(name, input, p, training, inplace):  # noqa: A002
    _check_probability(p)
    spatial = _SPATIAL[name]
    if input.ndim not in (spatial + 1, spatial + 2):
        raise ValueError(f"{name} expects a {spatial + 1}-D (unbatched) or "
                         f"{spatial + 2}-D (batched) input, got one of "
                         f"{input.ndim} dimensions (shape "
                         f"{list(input.shape)})")
    if name == "dropout2d" and input.ndim == 3:
        warnings.warn("dropout2d: a 3-D input is taken as (N, C, L) and gets "
                      "channel-wise 1-D dropout, as torch does; use dropout1d "
                      "for that", UserWarning, stacklevel=3)
        name, spatial = "dropout1d", 1
    if not training or p == 0.0:
        return input
    base = input.lns_base
    channel_dims = input.ndim - spatial
    mask = _mask(tuple(input.shape), channel_dims, p, base)
    result = _result(A.Mul.apply(input.lns, mask, base), base, name,
                     (input.lns,), p=p)
    if inplace:
        input._lns = result.lns
        return input
    return result


@implements(F.dropout1d)
def dropout1d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zeroes whole channels of an (N, C, L) or (C, L) input."""
    return _channel_dropout("dropout1d", input, p, training, inplace)


@implements(F.dropout2d)
def dropout2d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zeroes whole channels of an (N, C, H, W) or (C, H, W) input; a 3-D
    input is taken as (N, C, L) with a warning, as torch does."""
    return _channel_dropout("dropout2d", input, p, training, inplace)


@implements(F.dropout3d)
def dropout3d(input, p=0.5, training=True, inplace=False):  # noqa: A002
    """Zeroes whole channels of an (N, C, D, H, W) or (C, D, H, W) input."""
    return _channel_dropout("dropout3d", input, p, training, inplace)


class _LNSDropoutNd(LNSModule):
    """A dropout layer: `function` in training mode, the identity in eval
    mode."""

    function = None

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        _check_probability(p)
        self.p, self.inplace = p, inplace

    def forward(self, x):
        return self.function(x, self.p, self.training, self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class LNSDropout(_LNSDropoutNd):
    """torch.nn.Dropout for LNS tensors (F.dropout: element-wise)."""

    function = staticmethod(F.dropout)


class LNSDropout1d(_LNSDropoutNd):
    """torch.nn.Dropout1d for LNS tensors."""

    function = staticmethod(F.dropout1d)


class LNSDropout2d(_LNSDropoutNd):
    """torch.nn.Dropout2d for LNS tensors."""

    function = staticmethod(F.dropout2d)


class LNSDropout3d(_LNSDropoutNd):
    """torch.nn.Dropout3d for LNS tensors."""

    function = staticmethod(F.dropout3d)
