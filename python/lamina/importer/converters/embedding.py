"""Embeddings: nn.Embedding and F.embedding as `lamina.embedding`
(lowered in C++), on int64 indices."""

import torch.nn.functional as F
from torch import nn

from .. import ir
from . import converts


def _embedding(emitter, node, path, indices, weight, padding_idx, what):
    """`lamina.embedding "path" %idx, %w [padding_idx p]`."""
    if indices.type.element != ir.I64:
        emitter.fail(node, f"{what} on {indices.type.element} indices "
                     "(int64 only)")
    if weight.type.element != ir.F32:
        emitter.fail(node, f"{what} with a {weight.type.element} weight")
    result = emitter.result_type(node)
    padding = [] if padding_idx is None else [
        "padding_idx", padding_idx % weight.type.shape[0]]
    emitter.index_bound(node, node.args[0], weight.type.shape[0], what)
    return emitter.builder.op(
        "lamina.embedding", ir.string(path), ir.operand_list(indices, weight),
        *padding, types=ir.function_type([indices.type, weight.type],
                                         [result]),
        results=[result])


def _check_plain(emitter, node, what, max_norm, scale_grad_by_freq):
    if max_norm is not None:
        emitter.fail(node, f"{what} with max_norm (it renormalises the "
                     "weight in place)")
    if scale_grad_by_freq:
        emitter.fail(node, f"{what} with scale_grad_by_freq")


@converts(nn.Embedding, layer=True)
def embedding_module(emitter, node, module, path):
    """`lamina.embedding`: the weight's rows at the int64 indices (a
    padding_idx row gets no gradient)."""
    what = f"Embedding '{path}'"
    _check_plain(emitter, node, what, module.max_norm,
                 module.scale_grad_by_freq)
    indices = emitter.value(node, node.args[0])
    weight = emitter.parameter(node, f"{path}.weight", module.weight)
    return _embedding(emitter, node, path, indices, weight,
                      module.padding_idx, what)


@converts(F.embedding)
def embedding(emitter, node):
    """`lamina.embedding` of `F.embedding(indices, weight, padding_idx)`."""
    what = "F.embedding"
    _check_plain(emitter, node, what, emitter.argument(node, 3, "max_norm"),
                 emitter.argument(node, 5, "scale_grad_by_freq", False))
    indices = emitter.value(node, node.args[0])
    weight = emitter.float_value(node, emitter.argument(node, 1, "weight"))
    return _embedding(emitter, node, emitter.path(node), indices, weight,
                      emitter.argument(node, 2, "padding_idx"), what)
