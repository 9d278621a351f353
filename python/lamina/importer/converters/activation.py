"""Activations: GELU (erf and tanh) and ReLU, as `lamina.activation`."""

import torch
import torch.nn.functional as F
from torch import nn

from .. import ir
from . import converts


def _activation(emitter, node, kind):
    """`lamina.activation ["path"] kind %x : type`."""
    x = emitter.float_value(node, node.args[0])
    path = emitter.path(node)
    named = [ir.string(path)] if path else []
    return emitter.builder.op("lamina.activation", *named, kind, x,
                              types=x.type, results=[x.type])


def _gelu_kind(approximate):
    return "gelu_tanh" if approximate == "tanh" else "gelu_erf"


@converts(nn.GELU)
def gelu_module(emitter, node, module, path):
    """`lamina.activation gelu_erf`, or `gelu_tanh` for approximate="tanh"."""
    return _activation(emitter, node, _gelu_kind(module.approximate))


@converts(F.gelu)
def gelu(emitter, node):
    """`lamina.activation gelu_erf`, or `gelu_tanh` for approximate="tanh"."""
    return _activation(emitter, node,
                       _gelu_kind(node.kwargs.get("approximate", "none")))


@converts(nn.ReLU)
def relu_module(emitter, node, module, path):
    """`lamina.activation relu`."""
    return _activation(emitter, node, "relu")


@converts(F.relu, torch.relu)
def relu(emitter, node):
    """`lamina.activation relu`."""
    return _activation(emitter, node, "relu")
