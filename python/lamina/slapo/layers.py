"""Which modules are Lamina layers (the ops schedules address), and their
parameters under the names primitives give them."""

from torch import nn

from .. import op as lamina_op


def is_layer(module):
    """Whether Lamina imports `module` as one layer op: the linear family,
    FusedQKV, LayerNorm, Embedding, LNS linear layers."""
    from ..lns import LNSLazyLinear, LNSLinear
    return isinstance(module, (nn.Linear, lamina_op.FusedQKV, nn.LayerNorm,
                               nn.Embedding, LNSLinear, LNSLazyLinear))


def layer_tensor(module, name):
    """`module`'s parameter or buffer `name`, or None; a FusedQKV's
    "weight" and "bias" are its one projection's, as in Lamina's layer."""
    if isinstance(module, lamina_op.FusedQKV) and name in ("weight", "bias"):
        module = module.fused_linear
    return getattr(module, name, None)
