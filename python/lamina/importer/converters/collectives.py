"""Collectives a model's forward calls eagerly (lamina.collectives, Slapo's
sync ops, as Megatron-style code writes them): each is the `lamina.sync`
op of the collective it is, checked and partitioned as a schedule's sync
is (`lamina.as_written`: an all-reduce sums whatever it is given, as the
eager code does). A negative dim counts from the end, as in PyTorch."""

from ... import collectives
from .. import ir
from . import converts


def _sync(emitter, node, mode, collective, dim=None, output_grad=None):
    x = emitter.float_value(node, node.args[0])
    parts = [mode, collective]
    if dim is not None:
        parts.append(f"axis = {dim % x.type.rank}")
    if output_grad is not None:
        parts.append("tensor_parallel_output_grad = "
                     f"{'true' if output_grad else 'false'}")
    path = emitter.path(node)
    named = [ir.string(path)] if path else []
    # As the code writes it: an all-reduce sums what it is given.
    return emitter.builder.op("lamina.sync", *named, x,
                              "<" + ", ".join(parts) + ">",
                              "{lamina.as_written}", types=x.type,
                              results=[x.type])


@converts(collectives.reduce_forward_output)
def reduce_forward_output(emitter, node):
    """`lamina.sync <fwd_post, all_reduce>`: the sum of the ranks' partial
    results; the gradient passes through."""
    return _sync(emitter, node, "fwd_post", "all_reduce")


@converts(collectives.reduce_backward_grad)
def reduce_backward_grad(emitter, node):
    """`lamina.sync <bwd_post, all_reduce>`: the value itself; its gradient
    summed over the ranks."""
    return _sync(emitter, node, "bwd_post", "all_reduce")


@converts(collectives.all_gather_forward_output)
def all_gather_forward_output(emitter, node):
    """`lamina.sync <fwd_post, all_gather, axis = dim>`, its backward the
    reduce-scatter (or, with tensor_parallel_output_grad=False, this rank's
    block) of the gradient."""
    dim = emitter.argument(node, 1, "dim")
    grad = emitter.argument(node, 3, "tensor_parallel_output_grad", True)
    return _sync(emitter, node, "fwd_post", "all_gather", dim, bool(grad))


@converts(collectives.reduce_scatter_forward_output)
def reduce_scatter_forward_output(emitter, node):
    """`lamina.sync <fwd_post, reduce_scatter, axis = dim>`."""
    return _sync(emitter, node, "fwd_post", "reduce_scatter",
                 emitter.argument(node, 1, "dim"))


@converts(collectives.scatter_forward_output)
def scatter_forward_output(emitter, node):
    """`lamina.sync <fwd_post, scatter, axis = dim>`: this rank's block."""
    return _sync(emitter, node, "fwd_post", "scatter",
                 emitter.argument(node, 1, "dim"))
