"""Losses: F.cross_entropy and nn.CrossEntropyLoss as
`lamina.cross_entropy` (lowered in C++): the result a 0-d tensor (mean,
sum) or one loss per row (reduction="none")."""

import torch.nn.functional as F
from torch import nn

from .. import ir
from . import converts


def _cross_entropy(emitter, node, weight, ignore_index, reduction,
                   label_smoothing, what):
    if weight is not None:
        emitter.fail(node, f"{what} with class weights")
    if label_smoothing:
        emitter.fail(node, f"{what} with label_smoothing")
    if reduction not in ("mean", "sum", "none"):
        emitter.fail(node, f"{what} with reduction={reduction!r} (mean, sum "
                     "or none)")
    logits = emitter.float_value(node, node.args[0])
    targets = emitter.value(node, emitter.argument(node, 1, "target"))
    if logits.type.rank != 2 or logits.type.element != ir.F32:
        emitter.fail(node, f"{what} of {logits.type} logits (f32 [N, "
                     "classes]: view them as such)")
    if targets.type.element != ir.I64 or targets.type.rank != 1:
        emitter.fail(node, f"{what} with {targets.type} targets (class "
                     "indices, int64 [N])")
    emitter.index_bound(node, emitter.argument(node, 1, "target"),
                        logits.type.shape[1], what, ignored=ignore_index)
    result = emitter.result_type(node)
    reduced = [reduction] if reduction != "mean" else []
    return emitter.builder.op(
        "lamina.cross_entropy", ir.operand_list(logits, targets),
        "ignore_index", int(ignore_index), *reduced,
        types=ir.function_type([logits.type, targets.type], [result]),
        results=[result])


@converts(F.cross_entropy)
def cross_entropy(emitter, node):
    """`lamina.cross_entropy`: the mean (or sum, or each) over the targets
    that are not ignore_index of logsumexp(x[n]) − x[n, t_n]."""
    arg = emitter.argument
    return _cross_entropy(emitter, node, arg(node, 2, "weight"),
                          arg(node, 4, "ignore_index", -100),
                          arg(node, 6, "reduction", "mean"),
                          arg(node, 7, "label_smoothing", 0.0),
                          "F.cross_entropy")


@converts(nn.CrossEntropyLoss)
def cross_entropy_module(emitter, node, module, path):
    """`lamina.cross_entropy` with the module's ignore_index and
    reduction."""
    return _cross_entropy(emitter, node, module.weight, module.ignore_index,
                          module.reduction, module.label_smoothing,
                          f"CrossEntropyLoss '{path}'")
