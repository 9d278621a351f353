"""What a sync hook compiles to: Slapo's users pass `sch.sync(mode,
sync_op_or_fn=hook)` a Python hook that applies one of the sync ops
(lamina.collectives) to the module's input or output. The hook is called
once on stand-in values that record the sync op it applies; a hook that
applies exactly one, to the value its mode syncs, is that collective.
Hooks made by Slapo's helpers (gen_embedding_hooks) say what they are
(`_lamina_sync`)."""

import torch

from .. import collectives


class _NotASync(Exception):
    pass


class _StandIn(torch.Tensor):
    """The value a hook syncs, while the hook is probed: a sync op applied
    to it is recorded; any other tensor operation ends the probe."""

    applied = None  # (sync op, its arguments after the tensor)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func in _SYNC_OPS and args and isinstance(args[0], _StandIn):
            result = _stand_in()
            result.applied = (func, args[0], args[1:], kwargs or {})
            return result
        raise _NotASync(getattr(func, "__name__", str(func)))


def _stand_in():
    return torch.Tensor._make_subclass(_StandIn, torch.empty(0))


# The sync op in a hook of each mode → (Lamina's sync mode, collective,
# its arguments from the op's).
def _all_gather(dim, group=None, tensor_parallel_output_grad=True):
    return ("fwd_post", "all_gather",
            {"axis": dim,
             "tensor_parallel_output_grad": tensor_parallel_output_grad})


def _reduce_scatter(dim, group=None):
    return ("fwd_post", "reduce_scatter", {"axis": dim})


def _scatter(dim, group=None):
    return ("fwd_post", "scatter", {"axis": dim})


def _reduce(group=None):
    return ("fwd_post", "all_reduce", {})


def _reduce_backward(group=None):
    # Identity forward, all-reduced gradient: Lamina's bwd_post sync on the
    # input of the layer.
    return ("bwd_post", "all_reduce", {})


_SYNC_OPS = {
    collectives.all_gather_forward_output: _all_gather,
    collectives.reduce_scatter_forward_output: _reduce_scatter,
    collectives.scatter_forward_output: _scatter,
    collectives.reduce_forward_output: _reduce,
    collectives.reduce_backward_grad: _reduce_backward,
}


def collectives_of(hook, mode, module):
    """[(mode, collective, arguments)] the hook `hook` given to
    `sync(mode, ...)` performs, or None when it is not one sync op applied
    to the synced value."""
    declared = getattr(hook, "_lamina_sync", None)
    if declared is not None:
        return [(mode, collective, dict(arguments))
                for collective, arguments in declared]
    value = _stand_in()
    try:
        if mode == "fwd_pre":
            result = hook(module, (value,))
        elif mode == "fwd_post":
            result = hook(module, (_stand_in(),), value)
        else:
            return None
    except _NotASync:
        return None
    except Exception:  # the hook needs a real tensor: not a sync op alone
        return None
    if isinstance(result, tuple) and len(result) == 1:
        result = result[0]
    applied = getattr(result, "applied", None) if isinstance(
        result, _StandIn) else None
    if applied is None or applied[1] is not value:
        return None
    op, _, args, kwargs = applied
    target_mode, collective, arguments = _SYNC_OPS[op](*args, **kwargs)
    if mode == "fwd_pre" and target_mode == "bwd_post":
        return [("bwd_post", collective, arguments)]
    if mode != target_mode:
        return None
    return [(mode, collective, arguments)]
