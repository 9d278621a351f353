"""The loss functions of torch.nn.functional beyond mse_loss on LNS tensors
(l1, binary cross entropy with and without logits, nll, poisson and
gaussian nll, hinge embedding, kl_div, margin ranking, huber, smooth l1),
bit-exact with the xlnstorch reference.

Each loss is a rule (a :class:`_Loss`) that computes, on int64 code arrays
through Lamina's kernels, the element-wise loss, its reduction and the
element-wise gradients of its operands; one autograd Function
(:class:`LossFunction`) carries any rule through torch's engine. Importing
this module registers the functions for ``torch.nn.functional`` (and so for
the ``torch.nn`` loss modules) on LNS tensors.

Where the reference is clearly wrong Lamina's behaviour is the fix, as in
the LNS training spec: every gradient is multiplied by the upstream
gradient `g` (the reference ignores it in l1, binary cross entropy and
huber's weight gradient; identical when the loss is the root), a mean's
gradient uses the forward's divisor (nll with class weights, poisson's
target gradient), a log of zero is -100 (torch's clamp in binary cross
entropy; the reference's encoding of -inf yields the code of -1.0), and
gradients of broadcast operands are reduced with LNS sums.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from . import kernels as K
from .autograd import ZERO, codes, constant, is_zero, reduce_to, tensor
from .elementwise import exp_codes
from .functional import _align, _first_base, _result, implements

# Codes of +1.0 and -1.0 in every base.
C1, CM1 = 0, 1
# What log(0) becomes: torch's clamp of the logarithms in binary cross
# entropy.
LOG_OF_ZERO = -100.0
REDUCTIONS = ("none", "mean", "sum")


# -- element-wise helpers on code arrays -----------------------------------

def _sign(d):
    """c1 / cm1 by the sign bit, Z at zero (the reference's sign)."""
    return np.where(is_zero(d), ZERO, np.asarray(d) & 1)


def _where(mask, a, b):
    return np.where(mask, a, b).astype(np.int64)


def _log(x, base, loss):
    """ln x, through the float value (decode, torch.log, encode) as the
    reference; log(0) = -100, a negative operand is an error."""
    values = K.decode(x, **base.kw())
    if (values < 0).any():
        bad = values[values < 0].flat[0]
        raise ValueError(f"{loss} takes the logarithm of {bad}: its operand "
                         f"must not be negative there")
    logs = torch.log(torch.from_numpy(np.array(values))).numpy()
    logs = np.where(values == 0.0, LOG_OF_ZERO, logs)
    return K.encode(logs, **base.kw())


def _sigmoid(x, base):
    """sigmoid through the float value (decode, torch.sigmoid, encode)."""
    values = torch.from_numpy(np.array(K.decode(x, **base.kw())))
    return K.encode(torch.sigmoid(values).numpy(), **base.kw())


def _ratio(a, b, base, loss):
    """div(a, b) with the reference's zero rule first: a zero dividend
    gives Z even over a zero divisor (0/0 at a saturated probability);
    any other zero divisor is an error."""
    a, b = np.broadcast_arrays(np.asarray(a, np.int64), np.asarray(b, np.int64))
    zero_a, zero_b = is_zero(a), is_zero(b)
    if (zero_b & ~zero_a).any():
        raise ZeroDivisionError(f"{loss}: LNS division by zero in the "
                                f"gradient")
    safe = np.where(zero_b, C1, b)
    return _where(zero_a, ZERO, K.div(a, safe, **base.kw()))


def _sum_all(a, base):
    """The sequential sum of every element (a 0-d array is its own sum)."""
    a = np.asarray(a, np.int64)
    return a if a.ndim == 0 else K.sum(a, **base.kw())


def _mean_divisor(count, base):
    return constant(float(count), base)


# -- the rules --------------------------------------------------------------

class _Loss:
    """One loss with its options: `elementwise` codes from the operands'
    codes, the `divisor` of its mean, and `gradients` of the element-wise
    loss (before the mean's division and the upstream gradient)."""

    name = None

    def __init__(self, reduction, **options):
        self.reduction = reduction
        self.__dict__.update(options)

    def prepare(self, arrays):
        """The operands as the rule computes with them (broadcast)."""
        present = [a for a in arrays if a is not None]
        shapes = np.broadcast_shapes(*(a.shape for a in present))
        return [None if a is None else
                np.ascontiguousarray(np.broadcast_to(a, shapes))
                for a in arrays]

    def divisor(self, arrays, shape, base):
        return _mean_divisor(math.prod(shape), base)

    def forward(self, arrays, base):
        arrays = self.prepare(arrays)
        loss = self.elementwise(arrays, base)
        if self.reduction == "none":
            return loss
        total = _sum_all(loss, base)
        if self.reduction == "sum":
            return total
        return K.div(total, self.divisor(arrays, loss.shape, base),
                     **base.kw())

    def backward(self, arrays, g, base, needs):
        """Each operand's gradient, in the operand's shape (None where not
        needed): the element-wise gradient, divided by the mean's divisor,
        times g."""
        kw = base.kw()
        prepared = self.prepare(arrays)
        grads = self.gradients(prepared, base, needs)
        divisor = None
        if self.reduction not in ("none", "sum"):
            shape = next(a.shape for a in prepared if a is not None)
            divisor = self.divisor(prepared, shape, base)
        result = []
        for grad, array, need in zip(grads, arrays, needs):
            if grad is None or not need:
                result.append(None)
                continue
            if divisor is not None:
                grad = K.div(grad, divisor, **kw)
            grad = K.mul(grad, g, **kw)
            result.append(reduce_to(grad, array.shape, base))
        return result


class _L1(_Loss):
    name = "l1_loss"

    def elementwise(self, arrays, base):
        x, y = arrays
        return K.abs(K.sub(x, y, **base.kw()), **base.kw())

    def gradients(self, arrays, base, needs):
        x, y = arrays
        gx = _sign(K.sub(x, y, **base.kw()))
        return [gx, gx ^ 1]


class _BinaryCrossEntropy(_Loss):
    """Operands x, y, weight (or None)."""

    name = "binary_cross_entropy"

    def elementwise(self, arrays, base):
        kw = base.kw()
        x, y, w = arrays
        log_x = _log(x, base, self.name)
        log_1mx = _log(K.sub(C1, x, **kw), base, self.name)
        terms = K.add(K.mul(y, log_x, **kw),
                      K.mul(K.sub(C1, y, **kw), log_1mx, **kw), **kw)
        if w is not None:
            terms = K.mul(terms, w, **kw)
        return terms ^ 1

    def divisor(self, arrays, shape, base):
        if self.weight is None:
            return _mean_divisor(math.prod(shape), base)
        return _sum_all(self.weight, base)

    def gradients(self, arrays, base, needs):
        kw = base.kw()
        x, y, w = arrays
        one_minus_x = K.sub(C1, x, **kw)
        gx = gy = None
        if needs[0]:
            gx = K.sub(_ratio(K.sub(C1, y, **kw), one_minus_x, base,
                              self.name),
                       _ratio(y, x, base, self.name), **kw)
            if w is not None:
                gx = K.mul(gx, w, **kw)
        if needs[1]:
            gy = _log(_ratio(x, one_minus_x, base, self.name), base,
                      self.name)
            if w is not None:
                gy = K.mul(gy, w, **kw)
            gy = gy ^ 1
        return [gx, gy, None]


class _BinaryCrossEntropyWithLogits(_BinaryCrossEntropy):
    """Operands x, y, weight, pos_weight (each of the last two or None).
    pos_weight is beyond the reference (which ignores it): the positive
    term mul(mul(y, log sigmoid(x)), pos_weight)."""

    name = "binary_cross_entropy_with_logits"

    def _logs(self, x, base):
        s = _sigmoid(x, base)
        return (s, _log(s, base, self.name),
                _log(K.sub(C1, s, **base.kw()), base, self.name))

    def elementwise(self, arrays, base):
        kw = base.kw()
        x, y, w, pw = arrays
        _, log_s, log_1ms = self._logs(x, base)
        positive = K.mul(y, log_s, **kw)
        if pw is not None:
            positive = K.mul(positive, pw, **kw)
        terms = K.add(positive, K.mul(K.sub(C1, y, **kw), log_1ms, **kw),
                      **kw)
        if w is not None:
            terms = K.mul(terms, w, **kw)
        return terms ^ 1

    def gradients(self, arrays, base, needs):
        kw = base.kw()
        x, y, w, pw = arrays
        s, log_s, log_1ms = self._logs(x, base)
        if pw is None:
            gx = K.sub(s, y, **kw)
            gy = np.asarray(x) ^ 1
        else:
            # d/dx = s·(pw·y + 1 − y) − pw·y; d/dy = −(pw·log s − log(1 − s))
            pw_y = K.mul(pw, y, **kw)
            gx = K.sub(K.mul(s, K.add(pw_y, K.sub(C1, y, **kw), **kw), **kw),
                       pw_y, **kw)
            gy = K.sub(K.mul(pw, log_s, **kw), log_1ms, **kw) ^ 1
        if w is not None:
            gx, gy = K.mul(gx, w, **kw), K.mul(gy, w, **kw)
        return [gx, gy, None, None]


class _NllLoss(_Loss):
    """Operands x (log-probabilities, classes in dim 1, or a vector of
    classes) and weight (or None); the class indices `target` are an
    integer array held by the rule."""

    name = "nll_loss"

    def prepare(self, arrays):
        return arrays

    def _frame(self, x):
        """x with a batch axis, the targets flat over it, the kept mask."""
        batched = x[None, :] if x.ndim == 1 else x
        target = self.target.reshape(1, *self.target.shape) \
            if x.ndim == 1 else self.target
        return batched, target, target != self.ignore_index

    def _picked_weights(self, weight, target, kept):
        return np.where(kept, weight[np.where(kept, target, 0)], ZERO)

    def elementwise(self, arrays, base):
        kw = base.kw()
        x, w = arrays
        batched, target, kept = self._frame(x)
        safe = np.where(kept, target, 0)
        picked = np.take_along_axis(batched, safe[:, None], axis=1)[:, 0]
        if w is not None:
            picked = K.mul(picked, self._picked_weights(w, target, kept), **kw)
        loss = _where(kept, np.asarray(picked) ^ 1, ZERO)
        return loss.reshape(self.target.shape)

    def divisor(self, arrays, shape, base):
        x, w = arrays
        _, target, kept = self._frame(x)
        if w is None:
            count = int(kept.sum())
            if count == 0:
                raise ZeroDivisionError("nll_loss: every target is the "
                                        "ignore_index, the mean has no "
                                        "elements")
            return _mean_divisor(count, base)
        return _sum_all(self._picked_weights(w, target, kept)[kept], base)

    def backward(self, arrays, g, base, needs):
        """cm1 (or neg(weight[target])) at each sample's class, Z
        elsewhere; divided by the forward's divisor, times g."""
        kw = base.kw()
        x, w = arrays
        if not needs[0]:
            return [None, None]
        batched, target, kept = self._frame(x)
        picked = np.full(target.shape, CM1, np.int64) if w is None \
            else self._picked_weights(w, target, kept) ^ 1
        if self.reduction not in ("none", "sum"):
            picked = K.div(picked, self.divisor(arrays, None, base), **kw)
        picked = K.mul(picked, np.asarray(g).reshape(
            g.shape if self.reduction != "none" else target.shape), **kw)
        picked = _where(kept, picked, ZERO)
        grad = np.full(batched.shape, ZERO, np.int64)
        np.put_along_axis(grad, np.where(kept, target, 0)[:, None],
                          picked[:, None], axis=1)
        return [grad.reshape(x.shape), None]


class _PoissonNllLoss(_Loss):
    """Operands x, y, eps."""

    name = "poisson_nll_loss"

    def elementwise(self, arrays, base):
        kw = base.kw()
        x, y, eps = arrays
        if self.log_input:
            loss = K.sub(exp_codes(x, base), K.mul(y, x, **kw), **kw)
        else:
            log_x = _log(K.add(x, eps, **kw), base, self.name)
            loss = K.sub(x, K.mul(y, log_x, **kw), **kw)
        if self.full:
            loss = K.add(loss, self._stirling(y, base), **kw)
        return loss

    def _stirling(self, y, base):
        """y·log y − y + log(2π·y)/2, with y at least 1."""
        kw = base.kw()
        y1 = _where(K.compare("gt", y, C1, **kw), y, C1)
        first = K.mul(y1, _log(y1, base, self.name), **kw)
        third = K.mul(_log(K.mul(constant(math.tau, base), y1, **kw), base,
                           self.name), constant(0.5, base), **kw)
        return K.add(K.sub(first, y1, **kw), third, **kw)

    def gradients(self, arrays, base, needs):
        kw = base.kw()
        x, y, eps = arrays
        if self.log_input:
            gx = K.sub(exp_codes(x, base), y, **kw)
            gy = np.asarray(x) ^ 1
        else:
            shifted = K.add(x, eps, **kw)
            gx = K.sub(C1, _ratio(y, shifted, base, self.name), **kw)
            gy = _log(shifted, base, self.name) ^ 1
        if self.full and needs[1]:
            above = K.compare("gt", y, C1, **kw)
            safe = _where(above, y, C1)
            slope = K.add(_log(safe, base, self.name),
                          K.div(constant(0.5, base), safe, **kw), **kw)
            gy = K.add(gy, _where(above, slope, ZERO), **kw)
        return [gx, gy, None]


class _HingeEmbeddingLoss(_Loss):
    """Operands x, y (1 or -1), margin."""

    name = "hinge_embedding_loss"

    def elementwise(self, arrays, base):
        kw = base.kw()
        x, y, margin = arrays
        hinge = K.maximum(ZERO, K.sub(margin, x, **kw), **kw)
        return _where(K.compare("eq", y, C1, **kw), x, hinge)

    def gradients(self, arrays, base, needs):
        kw = base.kw()
        x, y, margin = arrays
        inside = K.compare("gt", K.sub(margin, x, **kw), ZERO, **kw)
        gx = _where(K.compare("eq", y, C1, **kw), C1,
                    _where(inside, CM1, ZERO))
        return [gx, None, None]


class _KlDiv(_Loss):
    """Operands x (log-probabilities), y."""

    name = "kl_div"

    def elementwise(self, arrays, base):
        kw = base.kw()
        x, y = arrays
        if self.log_target:
            return K.mul(exp_codes(y, base), K.sub(y, x, **kw), **kw)
        return K.mul(y, K.sub(_log(y, base, self.name), x, **kw), **kw)

    def divisor(self, arrays, shape, base):
        count = shape[0] if self.reduction == "batchmean" and shape \
            else math.prod(shape)
        return _mean_divisor(count, base)

    def gradients(self, arrays, base, needs):
        kw = base.kw()
        x, y = arrays
        if self.log_target:
            exp_y = exp_codes(y, base)
            gx = exp_y ^ 1
            gy = K.mul(exp_y, K.add(K.sub(y, x, **kw), C1, **kw), **kw) \
                if needs[1] else None
        else:
            gx = np.asarray(y) ^ 1
            gy = K.add(K.sub(_log(y, base, self.name), x, **kw), C1, **kw) \
                if needs[1] else None
        return [gx, gy]


class _MarginRankingLoss(_Loss):
    """Operands x1, x2, y (1 or -1), margin."""

    name = "margin_ranking_loss"

    def _slack(self, arrays, base):
        kw = base.kw()
        x1, x2, y, margin = arrays
        return K.sub(margin, K.mul(K.sub(x1, x2, **kw), y, **kw), **kw)

    def elementwise(self, arrays, base):
        return K.maximum(ZERO, self._slack(arrays, base), **base.kw())

    def gradients(self, arrays, base, needs):
        kw = base.kw()
        x1, x2, y, _ = arrays
        active = K.compare("gt", self._slack(arrays, base), ZERO, **kw)
        return [_where(active, np.asarray(y) ^ 1, ZERO),
                _where(active, y, ZERO),
                _where(active, K.sub(x2, x1, **kw), ZERO), None]


class _GaussianNllLoss(_Loss):
    """Operands x, y, var, eps."""

    name = "gaussian_nll_loss"

    def elementwise(self, arrays, base):
        kw = base.kw()
        x, y, var, eps = arrays
        var_eps = K.maximum(var, eps, **kw)
        d = K.sub(x, y, **kw)
        loss = K.add(_log(var_eps, base, self.name),
                     K.div(K.mul(d, d, **kw), var_eps, **kw), **kw)
        if self.full:
            loss = K.add(loss, _log(constant(math.tau, base), base,
                                    self.name), **kw)
        return K.div(loss, constant(2.0, base), **kw)

    def gradients(self, arrays, base, needs):
        kw = base.kw()
        x, y, var, eps = arrays
        d = K.sub(x, y, **kw)
        gx = K.div(d, K.maximum(var, eps, **kw), **kw)
        gvar = None
        if needs[2]:
            ratio = K.div(d, var, **kw)
            gvar = K.sub(K.div(C1, var, **kw), K.mul(ratio, ratio, **kw),
                         **kw)
            gvar = K.div(gvar, constant(2.0, base), **kw)
        return [gx, gx ^ 1, gvar, None]


def _piecewise(arrays, base, threshold, scale_l1):
    """(mask, l2 term, l1 term) of huber (scale_l1) and smooth l1: the l2
    term d²/2 (huber) or d²/(2·beta), only where |d| < threshold."""
    kw = base.kw()
    x, y = arrays[:2]
    d = K.sub(x, y, **kw)
    abs_diff = K.abs(d, **kw)
    half = K.div(threshold, constant(2.0, base), **kw)
    l1 = K.sub(abs_diff, half, **kw)
    if scale_l1:
        l1 = K.mul(l1, threshold, **kw)
    mask = K.compare("lt", abs_diff, threshold, **kw)
    divisor = constant(2.0, base) if scale_l1 else \
        _where(mask, K.mul(constant(2.0, base), threshold, **kw), C1)
    l2 = K.div(K.mul(d, d, **kw), divisor, **kw)
    return mask, d, _where(mask, l2, l1)


class _HuberLoss(_Loss):
    """Operands x, y, weight (or None), delta."""

    name = "huber_loss"

    def elementwise(self, arrays, base):
        _, loss = self._unweighted(arrays, base)
        w = arrays[2]
        return loss if w is None else K.mul(loss, w, **base.kw())

    def _unweighted(self, arrays, base):
        mask, d, loss = _piecewise(arrays, base, arrays[3], scale_l1=True)
        return (mask, d), loss

    def gradients(self, arrays, base, needs):
        kw = base.kw()
        _, _, w, delta = arrays
        (mask, d), loss = self._unweighted(arrays, base)
        gx = _where(mask, d, K.mul(_sign(d), delta, **kw))
        gy = gx ^ 1
        if w is not None:
            gx, gy = K.mul(gx, w, **kw), K.mul(gy, w, **kw)
        return [gx, gy, loss if w is not None else None, None]


class _SmoothL1Loss(_Loss):
    """Operands x, y, beta."""

    name = "smooth_l1_loss"

    def elementwise(self, arrays, base):
        return _piecewise(arrays, base, arrays[2], scale_l1=False)[2]

    def gradients(self, arrays, base, needs):
        kw = base.kw()
        _, _, beta = arrays
        mask, d, _ = _piecewise(arrays, base, beta, scale_l1=False)
        slope = K.div(d, _where(mask, beta, C1), **kw)
        gx = _where(mask, slope, _sign(d))
        return [gx, gx ^ 1, None]


# -- autograd ---------------------------------------------------------------

class LossFunction(torch.autograd.Function):
    """A loss on codes: `rule` (a _Loss) gives the forward codes and the
    operands' gradients; None operands get no gradient."""

    @staticmethod
    def forward(ctx, rule, base, *operands):
        ctx.rule, ctx.base = rule, base
        ctx.arrays = [None if o is None else codes(o) for o in operands]
        return tensor(rule.forward(ctx.arrays, base))

    @staticmethod
    def backward(ctx, g):
        needs = ctx.needs_input_grad[2:]
        grads = ctx.rule.backward(ctx.arrays, codes(g), ctx.base, needs)
        return (None, None) + tuple(None if grad is None else tensor(grad)
                                    for grad in grads)


# -- argument checks and the torch functions -------------------------------

def _reduction(size_average, reduce, reduction, allowed=REDUCTIONS):
    if size_average is not None or reduce is not None:
        reduction = torch.nn._reduction.legacy_get_string(size_average,
                                                          reduce)
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction: "
                         f"it must be one of {', '.join(allowed)}")
    return reduction


def _same_shape(loss, a, b, what):
    if a.shape != b.shape:
        raise ValueError(f"{loss}: the {what} size {tuple(b.shape)} differs "
                         f"from the input size {tuple(a.shape)}; give them "
                         f"the same size")


def _run(rule, base, operands, **attrs):
    """The loss's LNSTensor, noted as `rule.name` of the present operands."""
    codes_out = LossFunction.apply(rule, base, *operands)
    return _result(codes_out, base, rule.name,
                   [o for o in operands if o is not None],
                   reduction=rule.reduction, **attrs)


def _aligned(base, *operands):
    return [None if o is None else _align(base, o) for o in operands]


@implements(F.l1_loss)
def l1_loss(input, target, size_average=None, reduce=None,  # noqa: A002
            reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    base = _first_base(input, target)
    return _run(_L1(reduction), base, _aligned(base, input, target))


@implements(F.binary_cross_entropy)
def binary_cross_entropy(input, target, weight=None,  # noqa: A002
                         size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    base = _first_base(input, target, weight)
    x, y, w = _aligned(base, input, target, weight)
    _same_shape("binary_cross_entropy", x, y, "target")
    values = K.decode(codes(x), **base.kw())
    if ((values < 0) | (values > 1)).any():
        raise RuntimeError("binary_cross_entropy: all elements of input "
                           "should be between 0 and 1")
    rule = _BinaryCrossEntropy(reduction,
                               weight=None if w is None else codes(w))
    return _run(rule, base, [x, y, w])


@implements(F.binary_cross_entropy_with_logits)
def binary_cross_entropy_with_logits(input, target, weight=None,  # noqa: A002
                                     size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    reduction = _reduction(size_average, reduce, reduction)
    base = _first_base(input, target, weight, pos_weight)
    x, y, w, pw = _aligned(base, input, target, weight, pos_weight)
    _same_shape("binary_cross_entropy_with_logits", x, y, "target")
    rule = _BinaryCrossEntropyWithLogits(
        reduction, weight=None if w is None else codes(w))
    return _run(rule, base, [x, y, w, pw])


def _class_indices(input_shape, target):
    """The integer target of nll_loss, checked against the input's shape."""
    if not torch.is_tensor(target) or target.dtype.is_floating_point \
            or target.dtype == torch.bool or target.is_complex():
        raise RuntimeError(f"nll_loss takes class indices as an integer "
                           f"torch tensor, got "
                           f"{getattr(target, 'dtype', type(target).__name__)}")
    expected = () if len(input_shape) == 1 else \
        (input_shape[0],) + tuple(input_shape[2:])
    if len(input_shape) == 0 or tuple(target.shape) != expected:
        raise ValueError(f"nll_loss: input of shape {tuple(input_shape)} "
                         f"takes a target of shape {expected}, got "
                         f"{tuple(target.shape)}")
    return target.detach().cpu().numpy().astype(np.int64)


@implements(F.nll_loss)
def nll_loss(input, target, weight=None, size_average=None,  # noqa: A002
             ignore_index=-100, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    base = _first_base(input, weight)
    x, w = _aligned(base, input, weight)
    indices = _class_indices(x.shape, target)
    classes = x.shape[0] if x.ndim == 1 else x.shape[1]
    kept = indices != ignore_index
    out_of_range = kept & ((indices < 0) | (indices >= classes))
    if out_of_range.any():
        raise IndexError(f"Target {int(indices[out_of_range].flat[0])} is "
                         f"out of bounds.")
    if w is not None and tuple(w.shape) != (classes,):
        raise ValueError(f"nll_loss: weight must have one entry per class "
                         f"({classes}), got shape {tuple(w.shape)}")
    rule = _NllLoss(reduction, target=indices, ignore_index=ignore_index)
    return _run(rule, base, [x, w], ignore_index=ignore_index, target=target)


@implements(F.cross_entropy)
def cross_entropy(input, target, weight=None, size_average=None,  # noqa: A002
                  ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """torch's definition for class indices: nll_loss of log_softmax over
    the classes (dim 1, or 0 for one sample). The reference has no
    cross_entropy; this composition is its documented equivalent (its
    MNIST example pairs log_softmax with NLLLoss)."""
    if label_smoothing:
        raise ValueError("cross_entropy on LNS tensors takes no "
                         "label_smoothing; smooth the targets and use "
                         "kl_div instead")
    if torch.is_tensor(target) and target.dtype.is_floating_point:
        raise ValueError("cross_entropy on LNS tensors takes class indices "
                         "(an integer tensor), not class probabilities")
    dim = 0 if input.ndim == 1 else 1
    return nll_loss(F.log_softmax(input, dim=dim), target, weight,
                    size_average, ignore_index, reduce, reduction)


@implements(F.poisson_nll_loss)
def poisson_nll_loss(input, target, log_input=True, full=False,  # noqa: A002
                     size_average=None, eps=1e-08, reduce=None,
                     reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    base = _first_base(input, target)
    operands = _aligned(base, input, target, eps)
    rule = _PoissonNllLoss(reduction, log_input=bool(log_input),
                           full=bool(full))
    return _run(rule, base, operands, log_input=bool(log_input),
                full=bool(full))


@implements(F.hinge_embedding_loss)
def hinge_embedding_loss(input, target, margin=1.0,  # noqa: A002
                         size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    base = _first_base(input, target)
    operands = _aligned(base, input, target, margin)
    return _run(_HingeEmbeddingLoss(reduction), base, operands)


@implements(F.kl_div)
def kl_div(input, target, size_average=None, reduce=None,  # noqa: A002
           reduction="mean", log_target=False):
    reduction = _reduction(size_average, reduce, reduction,
                           REDUCTIONS + ("batchmean",))
    base = _first_base(input, target)
    operands = _aligned(base, input, target)
    rule = _KlDiv(reduction, log_target=bool(log_target))
    return _run(rule, base, operands, log_target=bool(log_target))


@implements(F.margin_ranking_loss)
def margin_ranking_loss(input1, input2, target, margin=0.0,
                        size_average=None, reduce=None, reduction="mean"):
    reduction = _reduction(size_average, reduce, reduction)
    base = _first_base(input1, input2, target)
    operands = _aligned(base, input1, input2, target, margin)
    return _run(_MarginRankingLoss(reduction), base, operands)


def _variance(x, var, base):
    """var as torch takes it: one fewer trailing dim (or a trailing 1)
    means one variance per row; negative entries are an error."""
    if var.shape != x.shape:
        if tuple(var.shape) == tuple(x.shape[:-1]):
            var = var.unsqueeze(-1)
        elif not (tuple(var.shape[:-1]) == tuple(x.shape[:-1])
                  and var.shape[-1] == 1):
            raise ValueError(f"gaussian_nll_loss: var of shape "
                             f"{tuple(var.shape)} does not fit input of shape "
                             f"{tuple(x.shape)}")
    if (K.decode(codes(var), **base.kw()) < 0).any():
        raise ValueError("gaussian_nll_loss: var has negative entry/entries")
    return var


@implements(F.gaussian_nll_loss)
def gaussian_nll_loss(input, target, var, full=False, eps=1e-06,  # noqa: A002
                      reduction="mean"):
    reduction = _reduction(None, None, reduction)
    base = _first_base(input, target, var)
    x, y, v, e = _aligned(base, input, target, var, eps)
    v = _variance(x, v, base)
    rule = _GaussianNllLoss(reduction, full=bool(full))
    return _run(rule, base, [x, y, v, e], full=bool(full))


@implements(F.huber_loss)
def huber_loss(input, target, delta=1.0, reduction="mean",  # noqa: A002
               weight=None):
    reduction = _reduction(None, None, reduction)
    if not delta > 0:
        raise RuntimeError(f"huber_loss does not support non-positive values "
                           f"for delta, got {delta}")
    base = _first_base(input, target, weight)
    operands = _aligned(base, input, target, weight, delta)
    return _run(_HuberLoss(reduction), base, operands)


@implements(F.smooth_l1_loss)
def smooth_l1_loss(input, target, size_average=None, reduce=None,  # noqa: A002
                   reduction="mean", beta=1.0):
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError(f"smooth_l1_loss does not support negative values "
                           f"for beta, got {beta}")
    base = _first_base(input, target)
    operands = _aligned(base, input, target, beta)
    return _run(_SmoothL1Loss(reduction), base, operands)


__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits",
           "cross_entropy",
           "gaussian_nll_loss", "hinge_embedding_loss", "huber_loss",
           "kl_div", "l1_loss", "margin_ranking_loss", "nll_loss",
           "poisson_nll_loss", "smooth_l1_loss", "LossFunction"]
