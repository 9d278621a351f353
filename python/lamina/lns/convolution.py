"""LNS convolutions: F.conv1d/conv2d/conv3d on LNS tensors and the
LNSConv1d/2d/3d layers, bit-exact with the xlnstorch reference.

LNS addition is not associative, so the order of every sum is part of the
result. The reference computes each output as one sequential sum over its
window (input channels of the group, then kernel positions, row-major) and
adds the bias after it; each input-gradient element sums over the output
channels of its group, then kernel positions; each weight-gradient element
sums over the batch, then output positions. Here every such sum is a row of
one :func:`lamina.lns.kernels.linear` call over gathered windows, whose
sequential dot product adds in exactly that order. Positions a window does
not reach contribute the zero code Z, which leaves a sequential sum
unchanged bit for bit (``add(acc, Z) == acc``).
"""

import dataclasses
import math

import numpy as np
import torch
import torch.nn.functional as F

from . import kernels as K
from .autograd import ZERO, codes, tensor
from .base import Base
from .functional import _align, _first_base, _result, implements
from .layers import LNSModule, _base
from .tensor import LNSTensor

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


@dataclasses.dataclass(frozen=True)
class Geometry:
    """Where the windows of a convolution lie, per spatial dimension
    (padded input coordinates)."""

    kernel: tuple
    stride: tuple
    dilation: tuple
    pad_before: tuple
    pad_after: tuple
    groups: int
    size_in: tuple      # the unpadded input's spatial shape
    size_out: tuple

    @property
    def size_padded(self):
        return tuple(s + a + b for s, a, b in
                     zip(self.size_in, self.pad_before, self.pad_after))

    def window_index(self, dim):
        """[out, k] → the padded input position output `out` reads at
        kernel offset `k`."""
        out = np.arange(self.size_out[dim])[:, None] * self.stride[dim]
        return out + np.arange(self.kernel[dim])[None, :] * self.dilation[dim]

    def source_index(self, dim):
        """[in, k] → the output position that reads padded input `in` at
        kernel offset `k`, or size_out (one past the end: a Z slot) when
        none does."""
        reach = (np.arange(self.size_padded[dim])[:, None]
                 - np.arange(self.kernel[dim])[None, :] * self.dilation[dim])
        out, rest = np.divmod(reach, self.stride[dim])
        valid = (reach >= 0) & (rest == 0) & (out < self.size_out[dim])
        return np.where(valid, out, self.size_out[dim])


def _gather(a, index):
    """a[n, c, *spatial] → [n, c, *out, *k], element (o, k) taken from
    a[..., index[d][o_d, k_d], ...] in every spatial dimension d."""
    nd = len(index)
    picks = []
    for d, ix in enumerate(index):
        shape = [1] * (2 * nd)
        shape[d], shape[nd + d] = ix.shape
        picks.append(ix.reshape(shape))
    return a[(slice(None), slice(None)) + tuple(picks)]


def _rows(windows, channels, nd):
    """[n, channels, *pos, *k] → [n·pos, channels·k]: one row per output
    (or input) position, its terms in the reference's order."""
    n = windows.shape[0]
    order = ([0] + list(range(2, 2 + nd)) + [1]
             + list(range(2 + nd, 2 + 2 * nd)))
    moved = np.transpose(windows[:, channels], order)
    return np.ascontiguousarray(moved.reshape(
        n * math.prod(windows.shape[2:2 + nd]), -1))


def _channels_first(rows, n, positions):
    """[n·pos, c] → [n, c, *pos]."""
    nd = len(positions)
    a = rows.reshape((n,) + tuple(positions) + (-1,))
    return np.moveaxis(a, 1 + nd, 1)


class Convolution(torch.autograd.Function):
    """A batched convolution on codes ([n, c, *spatial]); see the module
    docstring for the order of each sum."""

    @staticmethod
    def forward(ctx, x, weight, bias, geometry, base):
        kw = base.kw()
        x, w = codes(x), codes(weight)
        nd, groups = len(geometry.kernel), geometry.groups
        padded = np.pad(x, [(0, 0), (0, 0)] + list(zip(geometry.pad_before,
                                                        geometry.pad_after)),
                        constant_values=ZERO)
        windows = _gather(padded,
                          [geometry.window_index(d) for d in range(nd)])
        cin, cout = w.shape[1], w.shape[0] // groups
        b = None if bias is None else codes(bias)
        outs, columns = [], []
        for g in range(groups):
            rows = _rows(windows, slice(g * cin, (g + 1) * cin), nd)
            columns.append(rows)
            wg = w[g * cout:(g + 1) * cout].reshape(cout, -1)
            bg = None if b is None else b[g * cout:(g + 1) * cout]
            outs.append(K.linear(rows, np.ascontiguousarray(wg), bg, **kw))
        ctx.base, ctx.geometry, ctx.has_bias = base, geometry, bias is not None
        ctx.columns, ctx.weight = columns, w
        out = _channels_first(np.concatenate(outs, axis=1), x.shape[0],
                              geometry.size_out)
        return tensor(out)

    @staticmethod
    def backward(ctx, grad):
        kw, geometry, w = ctx.base.kw(), ctx.geometry, ctx.weight
        g = codes(grad)
        gx = gw = gb = None
        if ctx.needs_input_grad[0]:
            gx = tensor(_input_gradient(g, w, geometry, kw))
        if ctx.needs_input_grad[1]:
            gw = tensor(_weight_gradient(g, ctx.columns, w.shape, kw))
        if ctx.has_bias and ctx.needs_input_grad[2]:
            spatial = tuple(range(2, 2 + len(geometry.kernel)))
            gb = tensor(K.sum(g, axis=(0,) + spatial, **kw))
        return gx, gw, gb, None, None


def _weight_gradient(g, columns, shape, kw):
    """Each weight element sums g·x over the batch, then output positions
    (row-major): the forward's window rows, transposed, against g."""
    cout = g.shape[1] // len(columns)
    parts = []
    for group, rows in enumerate(columns):
        gg = np.moveaxis(g[:, group * cout:(group + 1) * cout], 1, 0)
        gg = np.ascontiguousarray(gg.reshape(cout, -1))
        parts.append(K.linear(gg, np.ascontiguousarray(rows.T), **kw))
    return np.concatenate(parts, axis=0).reshape(shape)


def _input_gradient(g, w, geometry, kw):
    """Each padded input position sums g·w over the output channels of
    its group, then kernel offsets (row-major), skipping offsets no output
    reads; the padding is cut off afterwards."""
    nd, groups = len(geometry.kernel), geometry.groups
    cin, cout = w.shape[1], w.shape[0] // groups
    slot = np.pad(g, [(0, 0), (0, 0)] + [(0, 1)] * nd, constant_values=ZERO)
    windows = _gather(slot, [geometry.source_index(d) for d in range(nd)])
    parts = []
    for group in range(groups):
        rows = _rows(windows, slice(group * cout, (group + 1) * cout), nd)
        wt = np.swapaxes(w[group * cout:(group + 1) * cout], 0, 1)
        wt = np.ascontiguousarray(wt.reshape(cin, -1))
        parts.append(K.linear(rows, wt, **kw))
    full = _channels_first(np.concatenate(parts, axis=1), g.shape[0],
                           geometry.size_padded)
    crop = tuple(slice(b, b + s) for b, s in
                 zip(geometry.pad_before, geometry.size_in))
    return np.ascontiguousarray(full[(slice(None), slice(None)) + crop])


# -- arguments, checked as torch checks them ----------------------------


def _per_dim(value, nd, what):
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * nd
    values = tuple(value)
    if len(values) == 1:
        values = values * nd
    if len(values) != nd or not all(isinstance(v, (int, np.integer))
                                    and not isinstance(v, bool)
                                    for v in values):
        raise RuntimeError(f"expected {what} to be a single integer value or "
                           f"a list of {nd} values to match the convolution "
                           f"dimensions, but got {what}={list(values)}")
    return tuple(int(v) for v in values)


def _padding(padding, kernel, stride, dilation):
    """(before, after) per dimension; 'same' puts the odd element after,
    as torch does."""
    nd = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * nd, (0,) * nd
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: {padding!r}, should "
                               f"be one of ('valid', 'same')")
        if any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided "
                               "convolutions")
        total = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple(t // 2 for t in total), tuple(t - t // 2 for t in total)
    pads = _per_dim(padding, nd, "padding")
    if any(p < 0 for p in pads):
        raise RuntimeError(f"negative padding is not supported, got "
                           f"padding={list(pads)}")
    return pads, pads


def _geometry(x_shape, w_shape, bias_shape, stride, padding, dilation, groups,
              nd):
    name = f"conv{nd}d"
    if len(x_shape) not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D "
                           f"(batched) input to {name}, but got input of "
                           f"size: {list(x_shape)}")
    if len(w_shape) != nd + 2:
        raise RuntimeError(f"{name} expects a {nd + 2}-D weight, got one of "
                           f"size {list(w_shape)}")
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) \
            or groups <= 0:
        raise RuntimeError(f"non-positive groups is not supported, got "
                           f"groups={groups!r}")
    kernel = tuple(w_shape[2:])
    stride = _per_dim(stride, nd, "stride")
    dilation = _per_dim(dilation, nd, "dilation")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"non-positive stride is not supported, got "
                           f"stride={list(stride)}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got "
                           f"{list(dilation)}")
    before, after = _padding(padding, kernel, stride, dilation)
    channels = x_shape[-nd - 1]
    if w_shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be "
                           f"divisible by {groups} at dimension 0, but got "
                           f"weight of size {list(w_shape)} instead")
    if w_shape[1] * groups != channels:
        raise RuntimeError(f"Given groups={groups}, weight of size "
                           f"{list(w_shape)}, expected input{list(x_shape)} "
                           f"to have {w_shape[1] * groups} channels, but got "
                           f"{channels} channels instead")
    if bias_shape is not None and tuple(bias_shape) != (w_shape[0],):
        raise RuntimeError(f"Given weight of size {list(w_shape)}, expected "
                           f"bias to be 1-dimensional with {w_shape[0]} "
                           f"elements, but got bias of size "
                           f"{list(bias_shape)} instead")
    size_in = tuple(x_shape[-nd:])
    padded = [s + a + b for s, a, b in zip(size_in, before, after)]
    reach = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    if any(r > p for r, p in zip(reach, padded)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, padded))}). Kernel size: "
                           f"({' x '.join(map(str, reach))}). Kernel size "
                           f"can't be greater than actual input size")
    size_out = tuple((p - r) // s + 1
                     for p, r, s in zip(padded, reach, stride))
    return Geometry(kernel, stride, dilation, before, after, int(groups),
                    size_in, size_out)


def _convolution(nd, input, weight, bias, stride, padding,  # noqa: A002
                 dilation, groups):
    base = _first_base(input, weight, bias)
    x, w = _align(base, input), _align(base, weight)
    b = None if bias is None else _align(base, bias)
    geometry = _geometry(tuple(x.shape), tuple(w.shape),
                         None if b is None else tuple(b.shape),
                         stride, padding, dilation, groups, nd)
    unbatched = x.ndim == nd + 1
    batched = x.unsqueeze(0) if unbatched else x
    out = Convolution.apply(batched, w, b, geometry, base)
    if unbatched:
        out = out.squeeze(0)
    operands = [x, w] if b is None else [x, w, b]
    return _result(out, base, f"conv{nd}d", operands, stride=geometry.stride,
                   padding=(geometry.pad_before, geometry.pad_after),
                   dilation=geometry.dilation, groups=geometry.groups)


@implements(F.conv1d, torch.conv1d)
def conv1d(input, weight, bias=None, stride=1,  # noqa: A002
           padding=0, dilation=1, groups=1):
    """torch's conv1d on LNS codes (see the module docstring)."""
    return _convolution(1, input, weight, bias, stride, padding, dilation,
                        groups)


@implements(F.conv2d, torch.conv2d)
def conv2d(input, weight, bias=None, stride=1,  # noqa: A002
           padding=0, dilation=1, groups=1):
    """torch's conv2d on LNS codes (see the module docstring)."""
    return _convolution(2, input, weight, bias, stride, padding, dilation,
                        groups)


@implements(F.conv3d, torch.conv3d)
def conv3d(input, weight, bias=None, stride=1,  # noqa: A002
           padding=0, dilation=1, groups=1):
    """torch's conv3d on LNS codes (see the module docstring)."""
    return _convolution(3, input, weight, bias, stride, padding, dilation,
                        groups)


# -- layers ---------------------------------------------------------------


def parameter_bases(weight_f, weight_b, bias_f, bias_b):
    """(weight base, bias base): f = 23 unless given; the bias defaults to
    the weight's base."""
    weight_f, weight_b = _base(weight_f, weight_b, "weight")
    bias_f, bias_b = _base(bias_f, bias_b, "bias")
    weight = Base(weight_f, weight_b)
    bias = weight if (bias_f, bias_b) == (None, None) else Base(bias_f, bias_b)
    return weight, bias


def reference_uniform(shape, sqrt_k, base, device=None):
    """(u·2 − 1)·√k with u uniform in [0, 1) from torch's generator, each
    step an LNS operation in `base`: the reference's initialisation, so
    that a seed gives its codes."""
    kw = base.kw()
    u = torch.rand(tuple(shape), dtype=torch.float64, device=device)
    c = K.mul(K.encode(u.cpu().numpy(), **kw), K.encode(2.0, **kw), **kw)
    c = K.sub(c, K.encode(1.0, **kw), **kw)
    c = K.mul(c, K.encode(float(sqrt_k), **kw), **kw)
    return LNSTensor(tensor(c).to(device), base)


class _LNSConvNd(LNSModule):
    """The reference's LNSConv layers: weight (out, in / groups, *kernel)
    and bias (out,) start as (u·2 − 1)·√k in LNS, k = groups /
    (in · prod(kernel)), drawn weight first; ``weight_f``/``weight_b``
    (default f = 23) and ``bias_f``/``bias_b`` (default: the weight's)
    choose their bases."""

    dims = None

    def __init__(self, in_channels, out_channels, kernel_size, stride=1,
                 padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, weight_f=None,
                 weight_b=None, bias_f=None, bias_b=None):
        super().__init__()
        nd = self.dims
        if isinstance(groups, bool) or not isinstance(groups, int) \
                or groups <= 0:
            raise ValueError(f"groups must be a positive integer, got "
                             f"{groups!r}")
        if in_channels % groups:
            raise ValueError(f"in_channels must be divisible by groups, got "
                             f"in_channels={in_channels}, groups={groups}")
        if out_channels % groups:
            raise ValueError(f"out_channels must be divisible by groups, got "
                             f"out_channels={out_channels}, groups={groups}")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, "
                             f"but got padding_mode={padding_mode!r}")
        if padding_mode != "zeros":
            raise NotImplementedError(f"LNS convolutions pad with zeros only, "
                                      f"got padding_mode={padding_mode!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _per_dim(kernel_size, nd, "kernel_size")
        self.stride = _per_dim(stride, nd, "stride")
        self.dilation = _per_dim(dilation, nd, "dilation")
        if isinstance(padding, str):
            _padding(padding, self.kernel_size, self.stride, self.dilation)
            self.padding = padding
        else:
            self.padding = _per_dim(padding, nd, "padding")
        self.groups, self.has_bias = groups, bias
        self.padding_mode, self.device = padding_mode, device
        self._weight_base, self._bias_base = parameter_bases(
            weight_f, weight_b, bias_f, bias_b)
        sqrt_k = (groups / (in_channels * math.prod(self.kernel_size))) ** 0.5
        self.register_parameter("weight", reference_uniform(
            (out_channels, in_channels // groups) + self.kernel_size, sqrt_k,
            self._weight_base, device))
        if bias:
            self.register_parameter("bias", reference_uniform(
                (out_channels,), sqrt_k, self._bias_base, device))
        else:
            self.__dict__["bias"] = None

    def forward(self, x):
        return _convolution(self.dims, x, self.weight, self.bias, self.stride,
                            self.padding, self.dilation, self.groups)

    def extra_repr(self):
        text = (f"{self.in_channels}, {self.out_channels}, "
                f"kernel_size={self.kernel_size}, stride={self.stride}")
        if self.padding not in ((0,) * self.dims, "valid"):
            text += f", padding={self.padding!r}"
        if self.dilation != (1,) * self.dims:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if not self.has_bias:
            text += ", bias=False"
        return text + f", base={self._weight_base}"


class LNSConv1d(_LNSConvNd):
    """torch.nn.Conv1d in LNS (see _LNSConvNd for initialisation)."""

    dims = 1


class LNSConv2d(_LNSConvNd):
    """torch.nn.Conv2d in LNS (see _LNSConvNd for initialisation)."""

    dims = 2


class LNSConv3d(_LNSConvNd):
    """torch.nn.Conv3d in LNS (see _LNSConvNd for initialisation)."""

    dims = 3
