"""Linear layers: nn.Linear, the Slapo family of lamina.op and FusedQKV,
each one lamina layer op carrying its module path."""

from torch import nn

from ... import op as lamina_op
from .. import ir
from ...errors import UnsupportedOperationError
from . import converts


def _layer(emitter, node, module, path, op, *epilogue):
    """`op "path" %x, %w [bias %b] epilogue... : (...) -> ...`; an epilogue
    may end in the dropout seed Value."""
    if getattr(module, "sync_fn", None) is not None:
        raise UnsupportedOperationError(
            f"module '{path}' has a Python sync_fn; Lamina compiles "
            "collectives given by name: use sch[...].sync(mode, "
            "\"all_reduce\" | \"all_gather\" | ...)")
    x = emitter.float_value(node, node.args[0])
    result = emitter.result_type(node)
    w = emitter.parameter(node, f"{path}.weight", module.weight)
    operands = [x, w]
    syntax = [ir.string(path), ir.operand_list(x, w)]
    if module.bias is not None:
        b = emitter.parameter(node, f"{path}.bias", module.bias)
        operands.append(b)
        syntax += ["bias", b]
    operands += [piece for piece in epilogue if isinstance(piece, ir.Value)]
    types = ir.function_type([v.type for v in operands], [result])
    return emitter.builder.op(op, *syntax, *epilogue, types=types,
                              results=[result])


@converts(nn.Linear, layer=True)
def linear(emitter, node, module, path):
    """`lamina.linear`: y = x·Wᵀ + b."""
    return _layer(emitter, node, module, path, "lamina.linear")


@converts(lamina_op.LinearWithSyncFunc, layer=True)
def linear_sync(emitter, node, module, path):
    """`lamina.linear_sync`: x·Wᵀ, its sync point, + b (a Python sync_fn is
    an error: syncs are given by name in the schedule)."""
    return _layer(emitter, node, module, path, "lamina.linear_sync")


@converts(lamina_op.LinearWithSeparateBias, layer=True)
def linear_separate_bias(emitter, node, module, path):
    """`lamina.linear_separate_bias`: x·Wᵀ, then + b as its own op."""
    return _layer(emitter, node, module, path, "lamina.linear_separate_bias")


@converts(lamina_op.LinearWithAct, layer=True)
def linear_act(emitter, node, module, path):
    """`lamina.linear_act ... activation gelu_tanh`: GELU(x·Wᵀ + b)."""
    return _layer(emitter, node, module, path, "lamina.linear_act",
                  "activation", module.activation)


@converts(lamina_op.LinearWithDropout, layer=True)
def linear_dropout(emitter, node, module, path):
    """`lamina.linear_dropout`: dropout(x·Wᵀ + b), seeded when training."""
    settings, seed = emitter.dropout(module.p, module.training)
    epilogue = ["dropout", settings]
    if seed is not None:
        epilogue += ["seed", seed]
    return _layer(emitter, node, module, path, "lamina.linear_dropout",
                  *epilogue)


@converts(lamina_op.FusedQKV, results=3, layer=True)
def fused_qkv(emitter, node, module, path):
    """`lamina.fused_qkv`: q, k, v of every head from one interleaved
    projection."""
    x = emitter.float_value(node, node.args[0])
    w = emitter.parameter(node, f"{path}.fused_linear.weight",
                          module.fused_linear.weight)
    b = emitter.parameter(node, f"{path}.fused_linear.bias",
                          module.fused_linear.bias)
    # The whole-tensor form: every head; sharding the weight by heads
    # (axis 0) hands each rank num_heads / world_size of them.
    result = x.type.with_shape(x.type.shape[:-1] + (module.num_heads,
                                                    module.head_size))
    return emitter.builder.op(
        "lamina.fused_qkv", ir.string(path), ir.operand_list(x, w), "bias", b,
        "num_heads", module.num_heads, "world_size", module.world_size,
        types=ir.function_type([x.type, w.type, b.type], [result] * 3),
        results=[result] * 3)
