"""The Slapo linear family as torch.nn.Modules with the reference semantics
of Lamina's spec (eager PyTorch), which the importer maps to lamina ops.

Each forward is, in this exact order: y = x·Wᵀ; y = sync_fn(y) if given;
then the bias, the activation and the dropout.
"""

import torch
import torch.nn.functional as F
from torch import nn

_ACTIVATIONS = {"gelu": "gelu_tanh", "gelu_new": "gelu_tanh"}


class LinearWithSyncFunc(nn.Linear):
    """y = x·Wᵀ; y = sync_fn(y) (local matmul result, without bias); y + b."""

    def __init__(self, in_features, out_features, bias=True, device=None,
                 dtype=None, sync_fn=None):
        super().__init__(in_features, out_features, bias, device, dtype)
        self.sync_fn = sync_fn

    def _project(self, x):
        y = F.linear(x, self.weight, None)
        if self.sync_fn is not None:
            y = self.sync_fn(y)
        return y if self.bias is None else y + self.bias

    def forward(self, x):
        return self._project(x)


class LinearWithSeparateBias(LinearWithSyncFunc):
    """y = x·Wᵀ; y = y + b as a separate op (what decompose produces)."""

    def __init__(self, in_features, out_features, bias=True, device=None,
                 dtype=None):
        if not bias:
            raise ValueError("LinearWithSeparateBias needs a bias")
        super().__init__(in_features, out_features, True, device, dtype)


class LinearWithAct(LinearWithSyncFunc):
    """y = act(sync(x·Wᵀ) + b); act_fn "gelu" and "gelu_new" are both the
    tanh approximation of GELU."""

    def __init__(self, in_features, out_features, bias=True, act_fn="gelu",
                 device=None, dtype=None, sync_fn=None):
        if not bias:
            raise ValueError("LinearWithAct needs a bias")
        if act_fn not in _ACTIVATIONS:
            raise ValueError(f"unsupported act_fn {act_fn!r}: expected "
                             "'gelu' or 'gelu_new'")
        super().__init__(in_features, out_features, True, device, dtype,
                         sync_fn)
        self.act_fn = act_fn
        self.activation = _ACTIVATIONS[act_fn]

    def forward(self, x):
        return F.gelu(self._project(x), approximate="tanh")


class LinearWithDropout(LinearWithSyncFunc):
    """y = dropout(sync(x·Wᵀ) + b, p, training); training is read at call
    time (a compiled program takes it from the module when built)."""

    def __init__(self, in_features, out_features, bias=True, p=0.5,
                 inplace=False, device=None, dtype=None, sync_fn=None,
                 use_torchscript=False):
        if not bias:
            raise ValueError("LinearWithDropout needs a bias")
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability must be in [0, 1], got {p}")
        super().__init__(in_features, out_features, True, device, dtype,
                         sync_fn)
        self.p = p
        self.inplace = inplace
        self.use_torchscript = use_torchscript

    def forward(self, x):
        return F.dropout(self._project(x), self.p, self.training, self.inplace)


class FusedQKV(nn.Module):
    """One projection hidden → 3·hidden with q, k, v interleaved per head
    element: output feature (h·hd + d)·3 + t holds q (t=0), k (1), v (2).
    Returns q, k, v of shape [..., num_heads / world_size, head_dim]."""

    def __init__(self, hidden_size, num_heads, world_size):
        super().__init__()
        if hidden_size % num_heads:
            raise ValueError(f"hidden size {hidden_size} is not divisible by "
                             f"num_heads {num_heads}")
        if num_heads % world_size:
            raise ValueError(f"num_heads {num_heads} is not divisible by "
                             f"world_size {world_size}")
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.head_size = hidden_size // num_heads
        self.world_size = world_size
        self.fused_linear = nn.Linear(hidden_size, 3 * hidden_size)

    def forward(self, hidden_states):
        qkv = self.fused_linear(hidden_states)
        heads = self.num_heads // self.world_size
        qkv = qkv.view(*qkv.shape[:-1], heads, self.head_size, 3)
        q, k, v = (t.squeeze(-1).contiguous()
                   for t in torch.split(qkv, 1, dim=-1))
        return [q, k, v]
