"""The parameters of Lamina layers (the ops schedules address,
:func:`lamina.importer.is_layer`) under the names primitives give them."""

from .. import op as lamina_op


def layer_tensor(module, name):
    """`module`'s parameter or buffer `name`, or None; a FusedQKV's
    "weight" and "bias" are its one projection's, as in Lamina's layer."""
    if isinstance(module, lamina_op.FusedQKV) and name in ("weight", "bias"):
        module = module.fused_linear
    return getattr(module, name, None)
