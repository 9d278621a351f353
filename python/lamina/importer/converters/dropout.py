"""Dropout as `lamina.dropout`: Philox masks keyed by the program's seed
and the op's offset, identical on every target."""

import torch.nn.functional as F
from torch import nn

from .. import ir
from . import converts


def _dropout(emitter, node, p, training):
    """`lamina.dropout ["path"] %x <settings> [seed %seed] : type`."""
    return dropout_of(emitter, node, emitter.float_value(node, node.args[0]),
                      p, training)


def dropout_of(emitter, node, x, p, training):
    """`lamina.dropout` of the Value `x`."""
    settings, seed = emitter.dropout(p, training)
    path = emitter.path(node)
    named = [ir.string(path)] if path else []
    seeded = ["seed", seed] if seed is not None else []
    return emitter.builder.op("lamina.dropout", *named, x, settings, *seeded,
                              types=x.type, results=[x.type])


@converts(nn.Dropout)
def dropout_module(emitter, node, module, path):
    """`lamina.dropout` with the module's p, seeded in training mode."""
    return _dropout(emitter, node, module.p, module.training)


@converts(F.dropout)
def dropout(emitter, node):
    """`lamina.dropout` with the call's p and training (defaults 0.5, True)."""
    args = list(node.args[1:])
    p = node.kwargs.get("p", args[0] if args else 0.5)
    training = node.kwargs.get("training", args[1] if len(args) > 1 else True)
    return _dropout(emitter, node, p, training)
