"""Collectives with the gradients tensor parallelism needs, for code that
runs eagerly on torch.distributed (a model's forward, a module's hook), as
Slapo's sync ops (lamina.slapo.sharding.sync_ops) and Megatron's mappings
write them. Traced inside a model, each is one call the importer compiles
as the collective it is (a `lamina.sync` op: converters/collectives.py).

| op | forward | backward |
|---|---|---|
| all_gather_forward_output(x, dim, group, tensor_parallel_output_grad) | all-gather along dim | reduce-scatter (whole gradients on each rank: keep this rank's block) |
| reduce_scatter_forward_output(x, dim, group) | reduce-scatter along dim | all-gather |
| scatter_forward_output(x, dim, group) | this rank's block along dim | all-gather |
| reduce_forward_output(x, group) | all-reduce | identity |
| reduce_backward_grad(x, group) | identity | all-reduce |
"""

import functools

import torch
import torch.distributed as dist
from torch.overrides import handle_torch_function, has_torch_function


def _world(group):
    return dist.get_world_size(group), dist.get_rank(group)


def all_gather_along_dim(inp, dim, world_size, group):
    """The ranks' blocks of `inp` concatenated along `dim`."""
    parts = [torch.empty_like(inp) for _ in range(world_size)]
    dist.all_gather(parts, inp.contiguous(), group=group)
    return torch.cat(parts, dim=dim)


def reduce_scatter_along_dim(inp, dim, world_size, group):
    """This rank's block along `dim` of the sum of every rank's `inp`
    (gloo has no reduce-scatter: an all-reduce, then the block)."""
    total = inp.contiguous().clone()
    dist.all_reduce(total, group=group)
    return scatter_along_dim(total, dim, world_size, group)


def scatter_along_dim(inp, dim, world_size, group):
    """This rank's block of `inp` along `dim`."""
    if inp.shape[dim] % world_size:
        raise ValueError(f"dim {dim} of size {inp.shape[dim]} does not "
                         f"split over {world_size} ranks")
    rank = dist.get_rank(group)
    return inp.chunk(world_size, dim=dim)[rank].contiguous()


class _AllGatherForwardOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp, dim, group, tensor_parallel_output_grad):
        ctx.dim, ctx.group = dim, group
        ctx.reduce = tensor_parallel_output_grad
        return all_gather_along_dim(inp, dim, _world(group)[0], group)

    @staticmethod
    def backward(ctx, grad):
        size = _world(ctx.group)[0]
        if ctx.reduce:
            grad = reduce_scatter_along_dim(grad, ctx.dim, size, ctx.group)
        else:
            grad = scatter_along_dim(grad, ctx.dim, size, ctx.group)
        return grad, None, None, None


class _ReduceScatterForwardOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp, dim, group):
        ctx.dim, ctx.group = dim, group
        return reduce_scatter_along_dim(inp, dim, _world(group)[0], group)

    @staticmethod
    def backward(ctx, grad):
        return (all_gather_along_dim(grad, ctx.dim, _world(ctx.group)[0],
                                     ctx.group), None, None)


class _ScatterForwardOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp, dim, group):
        ctx.dim, ctx.group = dim, group
        return scatter_along_dim(inp, dim, _world(group)[0], group)

    @staticmethod
    def backward(ctx, grad):
        return (all_gather_along_dim(grad, ctx.dim, _world(ctx.group)[0],
                                     ctx.group), None, None)


class _ReduceForwardOutput(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp, group):
        total = inp.clone()
        dist.all_reduce(total, group=group)
        return total

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class _ReduceBackwardGrad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp, group):
        ctx.group = group
        return inp

    @staticmethod
    def backward(ctx, grad):
        total = grad.contiguous().clone()
        dist.all_reduce(total, group=ctx.group)
        return total, None


def _one_traced_call(apply):
    """The sync op `apply` implements, which a trace (a proxy's
    __torch_function__) records as one call of it."""
    @functools.wraps(apply)
    def op(inp, *args, **kwargs):
        if has_torch_function((inp,)):
            return handle_torch_function(op, (inp,), inp, *args, **kwargs)
        return apply(inp, *args, **kwargs)
    return op


@_one_traced_call
def all_gather_forward_output(inp, dim, group,
                              tensor_parallel_output_grad=True):
    return _AllGatherForwardOutput.apply(inp, dim, group,
                                         tensor_parallel_output_grad)


@_one_traced_call
def reduce_scatter_forward_output(inp, dim, group):
    return _ReduceScatterForwardOutput.apply(inp, dim, group)


@_one_traced_call
def scatter_forward_output(inp, dim, group):
    return _ScatterForwardOutput.apply(inp, dim, group)


@_one_traced_call
def reduce_forward_output(inp, group):
    return _ReduceForwardOutput.apply(inp, group)


@_one_traced_call
def reduce_backward_grad(inp, group):
    return _ReduceBackwardGrad.apply(inp, group)
