"""slapo.op: the layer classes Lamina compiles (lamina.op), FusedMLP built
from them, and the attention modules (FlashAttentionOp, FlashAttention)."""

from torch import nn

from ..op import (FusedQKV, LinearWithAct, LinearWithDropout,
                  LinearWithSeparateBias, LinearWithSyncFunc)
from .attention import FlashAttention, FlashAttentionOp


class FusedMLP(nn.Module):
    """Slapo's FusedMLP: fc_in with its activation fused, fc_out with its
    dropout fused (both with a bias)."""

    def __init__(self, hidden_size, intermediate_size, orig_act, resid_pdrop,
                 use_torchscript=False):
        super().__init__()
        self.fc_in = LinearWithAct(hidden_size, intermediate_size,
                                   act_fn=orig_act)
        self.fc_out = LinearWithDropout(intermediate_size, hidden_size,
                                        p=resid_pdrop)

    def forward(self, hidden_states):
        return self.fc_out(self.fc_in(hidden_states))


__all__ = ["FlashAttention", "FlashAttentionOp", "FusedMLP", "FusedQKV", "LinearWithAct", "LinearWithDropout",
           "LinearWithSeparateBias", "LinearWithSyncFunc"]
