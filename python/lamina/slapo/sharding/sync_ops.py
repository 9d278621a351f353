"""Slapo's sync ops: the collectives of lamina.collectives (eager on
torch.distributed, compiled where a model's forward calls them), under the
module Slapo's users import them from."""

from ...collectives import (all_gather_along_dim, all_gather_forward_output,
                            reduce_backward_grad, reduce_forward_output,
                            reduce_scatter_along_dim,
                            reduce_scatter_forward_output, scatter_along_dim,
                            scatter_forward_output)

__all__ = ["all_gather_along_dim", "all_gather_forward_output",
           "reduce_backward_grad", "reduce_forward_output",
           "reduce_scatter_along_dim", "reduce_scatter_forward_output",
           "scatter_along_dim", "scatter_forward_output"]
