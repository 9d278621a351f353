"""Slapo's sharding helpers: the sync ops (collectives with the gradients
tensor parallelism needs, lamina.collectives) and the functions they are
made of."""

from .sync_ops import (all_gather_along_dim, all_gather_forward_output,
                       reduce_backward_grad, reduce_forward_output,
                       reduce_scatter_along_dim,
                       reduce_scatter_forward_output, scatter_along_dim,
                       scatter_forward_output)

__all__ = ["all_gather_along_dim", "all_gather_forward_output",
           "reduce_backward_grad", "reduce_forward_output",
           "reduce_scatter_along_dim", "reduce_scatter_forward_output",
           "scatter_along_dim", "scatter_forward_output"]
