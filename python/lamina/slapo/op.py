"""slapo.op: the layer classes Lamina compiles (lamina.op), FusedMLP built
from them, the attention modules (FlashAttentionOp, FlashAttention),
ParallelCrossEntropy and Print."""

import torch.nn.functional as F
from torch import fx, nn

from ..errors import ScheduleError
from ..importer import side_effects

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


class ParallelCrossEntropy(nn.Module):
    """Slapo's vocabulary-parallel cross entropy: the loss of each token (no
    reduction) of `outputs` [..., vocab] against `labels` [...]. Traced as
    F.cross_entropy; on the output of a head sharded by vocabulary (not
    gathered) the compiler makes it vocabulary parallel, as Slapo's: each
    rank computes on its block of the vocabulary, the rows' statistics
    all-reduced, and gets its block of the logits' gradient."""

    def __init__(self, group=None):
        super().__init__()
        if group is not None:
            raise ScheduleError("ParallelCrossEntropy(group=...): Lamina's "
                                "ranks are the MPI world; process groups "
                                "are not taken")
        self.group = group

    def forward(self, outputs, labels):
        vocab = outputs.size(-1)
        losses = F.cross_entropy(outputs.reshape(-1, vocab),
                                 labels.reshape(-1), reduction="none")
        return losses.view(labels.shape)


class Print(nn.Module):
    """Slapo's Print: `self.print(out, *values)` prints `values` and returns
    `out`, to show values from inside a model. A leaf of Slapo's traces
    (`traceable = False`). In a compiled model it prints after every call:
    what the trace fixed as it was traced (strings, shapes), tensors the
    model computes with this call's values (results of the program)."""

    traceable = False

    def forward(self, out, *values, sep=" ", end="\n", file=None,
                flush=True):
        settings = dict(sep=sep, end=end, file=file, flush=flush)
        if isinstance(out, fx.Proxy):
            side_effects.record(side_effects.Printed(values, **settings))
        else:
            print(*values, **settings)
        return out


__all__ = ["FlashAttention", "FlashAttentionOp", "FusedMLP", "FusedQKV",
           "LinearWithAct", "LinearWithDropout", "LinearWithSeparateBias",
           "LinearWithSyncFunc", "ParallelCrossEntropy", "Print"]
