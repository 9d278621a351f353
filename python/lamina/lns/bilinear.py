"""LNS bilinear maps: F.bilinear on LNS tensors and the LNSBilinear layer,
bit-exact with the xlnstorch reference.

out[o] = Σ_i x1[i] · t[o, i] + b[o] with t[o, i] = Σ_j W[o, i, j] · x2[j],
both sums sequential (j inside, then i) and the bias added after them, as
the reference computes it (per row of the leading dimensions). Its
gradients: g1[i] = Σ_o g[o] · t[o, i]; g2[j] = Σ_o g[o] · (Σ_i W[o, i, j] ·
x1[i]); gb the sequential sum of g over all leading rows (g itself for 1-D
inputs). The weight's gradient Σ_rows g[o] · (x1[i] · x2[j]) (summed over
the leading rows flattened, in order) is Lamina's: the reference gives the
weight none. Leading dimensions are rows computed independently; the
reference is right only for 1-D inputs and a batch of one, where the codes
agree.
"""

import numpy as np
import torch
import torch.nn.functional as F

from . import kernels as K
from .autograd import codes, tensor
from .convolution import parameter_bases, reference_uniform
from .functional import _align, _first_base, _result, implements
from .layers import LNSModule


class Bilinear(torch.autograd.Function):
    """x1 [R, I], x2 [R, J], W [O, I, J], bias [O] → [R, O] on codes."""

    @staticmethod
    def forward(ctx, x1, x2, weight, bias, base):
        kw = base.kw()
        a, c, w = codes(x1), codes(x2), codes(weight)
        rows, (outs, i_size, j_size) = a.shape[0], w.shape
        inner = K.linear(c, w.reshape(outs * i_size, j_size), **kw)
        inner = inner.reshape(rows, outs, i_size)
        out = K.matmul(inner, a[:, :, None], **kw)[:, :, 0]
        if bias is not None:
            out = K.add(out, codes(bias), **kw)
        ctx.base, ctx.has_bias = base, bias is not None
        ctx.a, ctx.c, ctx.w, ctx.inner = a, c, w, inner
        return tensor(out)

    @staticmethod
    def backward(ctx, grad):
        kw = ctx.base.kw()
        g = codes(grad)
        a, c, w = ctx.a, ctx.c, ctx.w
        rows, (outs, i_size, j_size) = a.shape[0], w.shape
        g1 = g2 = gw = gb = None
        if ctx.needs_input_grad[0]:
            g1 = tensor(K.matmul(g[:, None, :], ctx.inner, **kw)[:, 0])
        if ctx.needs_input_grad[1]:
            wt = np.ascontiguousarray(np.swapaxes(w, 1, 2))
            across = K.linear(a, wt.reshape(outs * j_size, i_size), **kw)
            across = across.reshape(rows, outs, j_size)
            g2 = tensor(K.matmul(g[:, None, :], across, **kw)[:, 0])
        if ctx.needs_input_grad[2]:
            outer = K.mul(a[:, :, None], c[:, None, :], **kw)
            gw = K.linear(np.ascontiguousarray(g.T),
                          np.ascontiguousarray(outer.reshape(rows, -1).T),
                          **kw)
            gw = tensor(gw.reshape(w.shape))
        if ctx.has_bias and ctx.needs_input_grad[3]:
            gb = tensor(K.sum(g, axis=0, **kw))
        return g1, g2, gw, gb, None


def _check(x1, x2, w, b):
    if w.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D (out, in1, in2), "
                           f"got size {list(w.shape)}")
    if x1.ndim == 0 or x1.shape[:-1] != x2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not "
                           f"match: got {list(x1.shape)} and "
                           f"{list(x2.shape)}")
    if x1.shape[-1] != w.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight "
                           f"size: got {x1.shape[-1]} but expected "
                           f"{w.shape[1]}")
    if x2.shape[-1] != w.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight "
                           f"size: got {x2.shape[-1]} but expected "
                           f"{w.shape[2]}")
    if b is not None and tuple(b.shape) != (w.shape[0],):
        raise RuntimeError(f"bilinear(): bias size does not match weight "
                           f"size: got {list(b.shape)} but expected "
                           f"[{w.shape[0]}]")


@implements(F.bilinear, torch.bilinear)
def bilinear(input1, input2, weight, bias=None):
    """torch's bilinear on LNS codes (see the module docstring)."""
    base = _first_base(input1, input2, weight, bias)
    x1, x2, w = (_align(base, t) for t in (input1, input2, weight))
    b = None if bias is None else _align(base, bias)
    _check(x1, x2, w, b)
    lead = tuple(x1.shape[:-1])
    out = Bilinear.apply(x1.reshape(-1, x1.shape[-1]),
                         x2.reshape(-1, x2.shape[-1]), w, b, base)
    out = out.reshape(lead + (w.shape[0],))
    operands = [x1, x2, w] if b is None else [x1, x2, w, b]
    return _result(out, base, "bilinear", operands)


class LNSBilinear(LNSModule):
    """torch.nn.Bilinear in LNS: weight (out, in1, in2) and bias (out,)
    start as (u·2 − 1)·√k in LNS with k = 1 / (in1 + in2), as the
    reference draws them; ``weight_f``/``weight_b`` (default f = 23) and
    ``bias_f``/``bias_b`` (default: the weight's) choose their bases."""

    def __init__(self, in1_features, in2_features, out_features, bias=True,
                 device=None, weight_f=None, weight_b=None, bias_f=None,
                 bias_b=None):
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features, self.has_bias = out_features, bias
        self._weight_base, self._bias_base = parameter_bases(
            weight_f, weight_b, bias_f, bias_b)
        sqrt_k = (1.0 / (in1_features + in2_features)) ** 0.5
        self.register_parameter("weight", reference_uniform(
            (out_features, in1_features, in2_features), sqrt_k,
            self._weight_base, device))
        if bias:
            self.register_parameter("bias", reference_uniform(
                (out_features,), sqrt_k, self._bias_base, device))
        else:
            self.__dict__["bias"] = None

    def forward(self, x1, x2):
        return bilinear(x1, x2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, "
                f"in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.has_bias}, "
                f"base={self._weight_base}")
