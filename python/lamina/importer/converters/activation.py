"""Activations: GELU (erf and tanh), ReLU, SiLU and the sigmoid, as
`lamina.activation`."""

import torch
import torch.nn.functional as F
from torch import nn

from .. import ir
from . import converts


def _activation(emitter, node, kind, inplace=False):
    """`lamina.activation ["path"] kind %x : type`. An in-place activation
    is one only where nothing else reads its input (else the others would
    see the activated values, which the functional op does not give)."""
    source = node.args[0]
    if inplace and len(getattr(source, "users", ())) > 1:
        emitter.fail(node, f"an in-place {kind} whose input is also read "
                     f"elsewhere")
    x = emitter.float_value(node, source)
    path = emitter.path(node)
    named = [ir.string(path)] if path else []
    return emitter.builder.op("lamina.activation", *named, kind, x,
                              types=x.type, results=[x.type])


def _inplace(node):
    """Whether a functional activation's call has inplace=True (keyword, or
    the second positional argument)."""
    return bool(node.kwargs.get("inplace", node.args[1] if len(node.args) > 1
                                else False))


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
    return _activation(emitter, node, "relu", module.inplace)


@converts(F.relu, torch.relu)
def relu(emitter, node):
    """`lamina.activation relu`."""
    return _activation(emitter, node, "relu", _inplace(node))


@converts(nn.SiLU)
def silu_module(emitter, node, module, path):
    """`lamina.activation silu`: x·σ(x)."""
    return _activation(emitter, node, "silu", module.inplace)


@converts(F.silu)
def silu(emitter, node):
    """`lamina.activation silu`: x·σ(x)."""
    return _activation(emitter, node, "silu", _inplace(node))


@converts(nn.Sigmoid)
def sigmoid_module(emitter, node, module, path):
    """`lamina.activation sigmoid`: σ(x) = 1 / (1 + exp(−x))."""
    return _activation(emitter, node, "sigmoid")


@converts(torch.sigmoid, "sigmoid")
def sigmoid(emitter, node):
    """`lamina.activation sigmoid`: σ(x) = 1 / (1 + exp(−x))."""
    return _activation(emitter, node, "sigmoid")
