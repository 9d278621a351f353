"""Slapo's schedule primitives, methods of :class:`.schedule.Schedule`.

Program primitives (shard, sync, fork_rng, checkpoint, annotate,
cut_pipeline_stage, fuse) become ``transform.lamina`` ops on the layers
under the module's path; model primitives (replace, replace_all,
decompose, and fuse / checkpoint of a subgraph) change the PyTorch
modules, which Lamina imports again.
"""

import re
from types import FunctionType

import torch
from torch import nn

from .. import op as lamina_op
from .. import schedule as native
from ..errors import ScheduleError
from ..importer import is_layer
from ..importer.tracer import Tracer
from ..lns import LNSLinear
from . import boundary, hooks, resharding, subgraphs
from .checkpoint import CheckPointWrapper
from .layers import layer_tensor


def _native_layers(sch, local=""):
    """The native sub-schedule of the layer at this module's `local`
    submodule path."""
    path = sch._layer_path(local)
    if path:
        return sch._native[path]
    return native.SubSchedule(sch._native, 'path ""', [""])


def _layers_within(sch):
    """The native sub-schedule of every Lamina layer under this module."""
    prefix = re.escape(sch.path)
    regex = f"{prefix}(\\..*)?" if sch.path else ".*"
    return sch._native.find(regex)


# -- shard -------------------------------------------------------------------

def shard(sch, tensor_name, axis, groups=1):
    """Shards parameter `tensor_name` of this module on `axis` over the
    ranks (`axis` may count from the end); `groups` (a Lamina extension)
    shards each of that many equal parts of the axis on its own, as a
    contiguous [Q; K; V] projection sharded by heads needs (3)."""
    names = tensor_name if isinstance(tensor_name, (list, tuple)) else \
        [tensor_name]
    for name in names:
        _shard_one(sch, name, axis, groups)


def _shard_one(sch, name, axis, groups=1):
    if not isinstance(name, str):
        raise ScheduleError(f"shard takes a parameter name, got {name!r}")
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise ScheduleError(f"shard: axis must be an integer, got {axis!r}")
    local, _, leaf = name.rpartition(".")
    owner = sch.mod.get_submodule(local) if local else sch.mod
    path = sch._layer_path(local)
    tensor = None  # "input": a program input, no tensor of the model
    if leaf != "input":
        tensor = layer_tensor(owner, leaf)
        if not isinstance(tensor, torch.Tensor):
            raise ScheduleError(f"shard: module '{path or '<root>'}' "
                                f"({type(owner).__name__}) has no parameter "
                                f"or buffer '{leaf}'")
        if not isinstance(tensor, nn.Parameter):
            raise ScheduleError(
                f"shard: '{name}' of '{path or '<root>'}' is a buffer; "
                "Lamina shards parameters (a buffer's layout follows from "
                "the values it meets)")
    if not is_layer(owner):
        raise ScheduleError(
            f"shard: '{path or '<root>'}' is a {type(owner).__name__}, which "
            "Lamina does not compile as a layer with parameters; Lamina "
            "shards the parameters of its layers (nn.Linear, the lamina.op "
            "family, FusedQKV, LayerNorm, LNS linear layers)")
    if tensor is not None:
        rank = tensor.dim()
        if not -rank <= axis < rank:
            raise ScheduleError(f"shard: axis {axis} is out of range for "
                                f"'{name}' of rank {rank}")
        axis %= rank
        if isinstance(groups, bool) or not isinstance(groups, int) or \
                groups < 1 or tensor.shape[axis] % groups:
            raise ScheduleError(
                f"shard: '{name}' of '{path or '<root>'}' has size "
                f"{tensor.shape[axis]} on axis {axis}, which is not "
                f"{groups!r} equal groups")
        if tensor.shape[axis] // groups % sch.world_size:
            raise ScheduleError(
                f"Parameter {name} in {path or '<root>'} cannot be sharded "
                f"along axis {axis} with size {tensor.shape[axis]} by "
                f"{sch.world_size}")
    shards = sch.metadata.primitives["shard"]
    if name in shards:
        raise ScheduleError(f"Parameter {name} in {path or '<root>'} is "
                            f"already sharded along axis {shards[name]}")
    _native_layers(sch, local).shard(leaf, axis, groups)
    shards[name] = axis
    if groups != 1:
        sch.metadata.shard_groups[name] = groups
    if tensor is not None:
        sch.annotate(name, "orig_shape", tuple(tensor.shape))


# -- sync --------------------------------------------------------------------

_MODES = ("fwd_pre", "fwd_post", "bwd_post")


def sync(sch, mode, sync_op_or_fn, **kwargs):
    """Adds a sync point on this module's input (fwd_pre, bwd_post) or
    output (fwd_post): a collective by name or one of Slapo's resharding
    schemes ("RS->SR", ...)."""
    if mode not in _MODES:
        raise ScheduleError(f"sync: unknown mode {mode!r}; expected one of "
                            f"{', '.join(_MODES)}")
    if callable(sync_op_or_fn):
        steps = hooks.collectives_of(sync_op_or_fn, mode, sch.mod)
        if steps is None:
            raise ScheduleError(
                "sync: this Python hook cannot be compiled; Lamina compiles "
                "hooks that apply one of Slapo's sync ops "
                "(slapo.sharding.sync_ops: all_gather_forward_output, "
                "reduce_scatter_forward_output, scatter_forward_output, "
                "reduce_forward_output, reduce_backward_grad) to the synced "
                "value, and collectives given by name (\"all_reduce\", "
                "\"all_gather\", \"reduce_scatter\", \"scatter\", or a "
                "resharding scheme such as \"RS->SR\"). To partition the "
                "tokens over ranks (sequence parallelism), shard the layer's "
                "input instead: sch[...].shard(\"input\", axis)")
        for step_mode, collective, arguments in steps:
            _sync_one(sch, step_mode, collective, arguments)
        sch.metadata.primitives["sync"].setdefault(mode, []).append(
            (sync_op_or_fn, dict(kwargs)))
        return
    unknown = set(kwargs) - native.SYNC_ARGUMENTS
    if unknown:
        raise ScheduleError(f"sync got unknown arguments {sorted(unknown)}")
    if resharding.is_scheme(sync_op_or_fn):
        # Checked before the rank is read: a bad scheme needs no shapes.
        layouts = resharding.validate(sync_op_or_fn, mode)
        steps = resharding.collectives(layouts, _synced_rank(sch, mode))
    else:
        steps = [(sync_op_or_fn, kwargs)]
    for collective, arguments in steps:
        _sync_one(sch, mode, collective, arguments)
    sch.metadata.primitives["sync"].setdefault(mode, []).append(
        (sync_op_or_fn, dict(kwargs)))


def _synced_rank(sch, mode):
    """The rank of the value a sync of `mode` acts on (resharding schemes
    name axes from the end)."""
    if sch._native.imported is None:
        raise ScheduleError(
            "a resharding scheme names axes from the end of the synced "
            "value, whose rank Lamina reads from the input shapes: pass "
            "example_inputs to create_schedule, or apply it inside "
            "slapo.Verify(sch, example_inputs)")
    values = boundary.values(sch, mode)
    return values[0].meta["tensor_meta"].shape.__len__() if values else 2


def _sync_one(sch, mode, collective, arguments):
    if mode == "fwd_pre" and collective == "scatter":
        _scatter_input(sch, arguments["axis"])
        return
    if is_layer(sch.mod):
        _native_layers(sch).sync(mode, collective, **arguments)
        return
    if sch.parent is None and mode == "fwd_post":
        sch._native.sync(mode, collective, **arguments)
        return
    # A block: the layers at its boundary take the sync.
    for path in boundary.layers(sch, mode):
        sch._native[path].sync(mode, collective, **arguments)


def _scatter_input(sch, axis):
    """A fwd_pre scatter (Slapo's "RR->SR" before a layer): on a program
    input it is Lamina's sharded input; elsewhere the value's producer
    scatters it (fwd_post)."""
    values = boundary.values(sch, "fwd_pre")
    if not is_layer(sch.mod) or len(values) != 1 or \
            values[0].op != "placeholder":
        raise ScheduleError(
            f"sync fwd_pre scatter on '{sch.path or '<root>'}': Lamina "
            "scatters a value where it is produced; sync(\"fwd_post\", "
            "\"scatter\") on the layer computing this input, or "
            "shard(\"input\", axis) when it is a program input")
    _native_layers(sch).shard("input", axis)


# -- the other program primitives ---------------------------------------------

def fork_rng(sch):
    """Draws this module's dropout masks per rank. Lamina keys every mask
    by the element's index in the whole tensor, so the blocks of a sharded
    value already draw their blocks of one mask; on a linear layer with a
    dropout, fork_rng draws by the local index (lamina's fork_rng)."""
    layers = [module for module in sch.mod.modules()
              if isinstance(module, lamina_op.LinearWithDropout)]
    dropouts = [module for module in sch.mod.modules()
                if isinstance(module, nn.Dropout)]
    if not layers and not dropouts and not _has_functional_dropout(sch):
        raise ScheduleError(f"fork_rng: '{sch.path or '<root>'}' has no "
                            "dropout")
    if isinstance(sch.mod, lamina_op.LinearWithDropout):
        _native_layers(sch).fork_rng()
    sch.metadata.primitives["fork_rng"].append(sch.path)


def _has_functional_dropout(sch):
    try:
        graph = Tracer().trace(sch.mod)
    except Exception:  # torch.fx raises anything
        return False
    return any(node.op == "call_function" and
               node.target is torch.nn.functional.dropout
               for node in graph.nodes)


def annotate(sch, param_name, key, value):
    """Tags parameter `param_name` with key = value (Slapo keeps it on the
    Parameter; Lamina also carries it on the program's argument when the
    value is a bool, int, float or str)."""
    local, _, leaf = param_name.rpartition(".")
    try:
        owner = sch.mod.get_submodule(local) if local else sch.mod
    except AttributeError:
        owner = None
    param = layer_tensor(owner, leaf) if owner is not None else None
    if not isinstance(param, nn.Parameter):
        raise ScheduleError(f"annotate: '{sch.path or '<root>'}' has no "
                            f"parameter '{param_name}'")
    setattr(param, key, value)
    sch.get_top_schedule().metadata.param_tags.add(key)
    sch.metadata.primitives["annotate"].append((param_name, key, value))
    if is_layer(owner) and isinstance(value, (bool, int, float, str)):
        _native_layers(sch, local).annotate(leaf, key, value)


def checkpoint(sch, subgraph=None, order_args_fn=None):
    """Recomputes this module's forward (or the found subgraph's) in the
    backward instead of saving its values."""
    if order_args_fn is not None:
        raise ScheduleError("checkpoint(order_args_fn=...): Lamina orders a "
                            "checkpointed region's inputs itself")
    if subgraph is not None:
        if not subgraphs.calls_module(sch, subgraph, is_layer):
            raise ScheduleError("checkpoint: the subgraph calls no Lamina "
                                "layer; Lamina recomputes layers")
        region = subgraphs.wrap(sch, subgraph, "CheckPointWrapper",
                                CheckPointWrapper)
        for path in _model_paths_of_layers(region):
            sch._native[path].checkpoint()
        sch.metadata.primitives["checkpoint"].append(region.path)
        return
    if is_layer(sch.mod):
        _native_layers(sch).checkpoint()
        sch.metadata.primitives["checkpoint"].append(sch.path)
        return
    if sch.parent is not None and not isinstance(sch.mod, CheckPointWrapper):
        # Slapo's wrapper in the module's place (`sch[...].mod` is it,
        # `.mod.mod` the module).
        sch._swap_module(CheckPointWrapper(sch.mod))
        sch._model_changed()
    if sch.path and sch.path in sch._native.paths:
        # The whole module: its layers and the ops between them.
        sch._native[sch.path].checkpoint()
    else:
        _layers_within(sch).checkpoint()
    sch.metadata.primitives["checkpoint"].append(sch.path)


def _model_paths_of_layers(sch):
    """The model paths (the names the importer gives them) of the Lamina
    layers under `sch`'s module."""
    names = {}
    for name, module in sch._native.model.named_modules():
        names.setdefault(id(module), name)
    return [names[id(m)] for m in sch.mod.modules()
            if is_layer(m) and id(m) in names]


def cut_pipeline_stage(sch):
    """Ends a pipeline stage after this module."""
    if sch.parent is None:
        raise ScheduleError("cut_pipeline_stage: the top module cannot be "
                            "cut")
    if is_layer(sch.mod):
        _native_layers(sch).cut_pipeline_stage()
    else:
        try:
            last = boundary.layers(sch, "fwd_post")
        except Exception as error:  # noqa: BLE001 (torch.fx raises anything)
            # The cut still shapes Slapo's partition (pipeline.py); the
            # compiled stages need the layers, which build reports.
            sch.get_top_schedule().metadata.untraced_cuts[sch.path] = \
                f"{type(error).__name__}: {error}"
            last = []
        for path in last:
            sch._native[path].cut_pipeline_stage()
    sch.metadata.primitives["cut_pipeline_stage"].append(sch.path)


def decompose(sch):
    """nn.Linear → LinearWithSeparateBias (the bias added by its own op)."""
    if not isinstance(sch.mod, nn.Linear) or \
            isinstance(sch.mod, lamina_op.LinearWithSyncFunc):
        raise ScheduleError("decompose applies to nn.Linear layers, not "
                            f"{type(sch.mod).__name__}")
    if sch.mod.bias is None:
        raise ScheduleError(f"decompose: '{sch.path}' has no bias to "
                            "separate")
    if any(name.startswith(("weight", "bias"))
           for name in sch.metadata.primitives["shard"]):
        raise ScheduleError("decompose must come before shard: the weight "
                            "is already sharded")
    old = sch.mod
    new = lamina_op.LinearWithSeparateBias(old.in_features, old.out_features,
                                           device="meta")
    new.weight, new.bias = old.weight, old.bias
    new.train(old.training)
    sch._swap_module(new)
    sch._model_changed()


def fuse(sch, subgraph=None, compiler="TorchScript", name="FusedModule"):
    """Fuses this layer's epilogue chain (no subgraph), or the found
    vertical subgraph into one module that Lamina compiles as one program
    region (compiler "TorchScript" or None: Lamina is the compiler). Without
    a compiler, a chain of module calls becomes Slapo's nn.Sequential of
    them (children 0, 1, …); any other subgraph a GraphModule of its own."""
    if compiler not in (None, "TorchScript", "lamina"):
        raise ScheduleError(f"fuse: unknown compiler {compiler!r}; Lamina "
                            "compiles the fused region itself")
    if subgraph is None:
        if is_layer(sch.mod):
            _native_layers(sch).fuse()
        else:
            _layers_within(sch).fuse()
        sch.metadata.primitives["fuse"].append(sch.path)
        return
    if len(subgraph) != 1 or len(subgraph[0]) < 2:
        raise ScheduleError(f"fuse: only vertical fusion of one subgraph of "
                            f"two or more ops is supported, got {subgraph}")
    region = None
    if compiler is None:
        region = subgraphs.sequential(sch, subgraph, name)
    if region is None:
        region = subgraphs.wrap(sch, subgraph, name)
    sch.metadata.primitives["fuse"].append(region.path)


# -- model primitives ----------------------------------------------------------

def replace(sch, new_mod_or_func, target_ops=None, name=None,
            concrete_args=None):
    """Replaces this module by `new_mod_or_func`, or the found subgraph /
    node `target_ops` by a call of it (a module or a function)."""
    if isinstance(new_mod_or_func, str):
        if target_ops is not None:
            raise ScheduleError("replace by a Lamina variant takes no "
                                "target_ops")
        _native_layers(sch).replace(new_mod_or_func)
        return
    is_function = isinstance(new_mod_or_func, FunctionType) or \
        type(new_mod_or_func).__name__ == "builtin_function_or_method"
    if not is_function and not isinstance(new_mod_or_func, nn.Module):
        if isinstance(new_mod_or_func, type) and _lns_class(new_mod_or_func):
            _native_layers(sch).replace(new_mod_or_func)
            return
        raise ScheduleError(f"replace takes an nn.Module or a function, got "
                            f"{type(new_mod_or_func).__name__}")
    if target_ops is None:
        if is_function:
            raise ScheduleError("replace by a function needs the node or "
                                "subgraph it replaces (target_ops)")
        if _lns_class(type(new_mod_or_func)) and is_layer(sch.mod):
            _native_layers(sch).replace(new_mod_or_func)
            return
        sch._swap_module(new_mod_or_func)
        sch._model_changed()
        return
    subgraphs.replace(sch, new_mod_or_func, target_ops, name, concrete_args,
                      is_function)


def _lns_class(cls):
    return isinstance(cls, type) and issubclass(cls, LNSLinear)


def replace_all(sch, target_mod_type, make_mod_fn, **kwargs):
    """Replaces every module of class `target_mod_type` under this one by
    make_mod_fn(name, module, **kwargs)."""
    found = [(name, child) for name, child in sch.named_schedules()
             if isinstance(child.mod, target_mod_type)]
    if not found:
        raise ScheduleError(f"replace_all: no {target_mod_type.__name__} "
                            f"under '{sch.path or '<root>'}'")
    for name, child in found:
        child._swap_module(make_mod_fn(name, child.mod, **kwargs))
    sch._model_changed()


__all__ = ["annotate", "checkpoint", "cut_pipeline_stage", "decompose",
           "fork_rng", "fuse", "replace", "replace_all", "shard", "sync"]
