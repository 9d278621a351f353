"""Slapo's build: the scheduled model compiled by Lamina as an nn.Module,
and its weights initialised and blocked per rank."""

import contextlib
import inspect
import zlib

import torch
from torch import nn

from .. import _lamina
from ..errors import ScheduleError
from ..runtime import build as native_build
from ..runtime import rng, training
from .block_init import BlockInit, WholeTensorNeeded, block_indices
from .framework_dialect.deepspeed import engine as deepspeed_engine
from .layers import layer_tensor
from .schedule import Schedule

# The module (lamina.build the attribute is its function).

@contextlib.contextmanager
def init_empty_weights(enable=True):
    """Creates the parameters of modules built inside the block on the meta
    device (no memory); build materialises and initialises them."""
    if not enable:
        yield
        return
    register = nn.Module.register_parameter

    def on_meta(module, name, param):
        if param is not None and param.device.type != "meta":
            param = nn.Parameter(param.to("meta"),
                                 requires_grad=param.requires_grad)
        register(module, name, param)

    nn.Module.register_parameter = on_meta
    try:
        yield
    finally:
        nn.Module.register_parameter = register


def _initialise(module, path, init_fn):
    if init_fn is not None:
        arguments = inspect.signature(init_fn).parameters
        if len([a for a in arguments if a != "self"]) >= 2:
            init_fn(module, path)
        else:
            init_fn(module)
    elif hasattr(module, "_init_weights"):
        module._init_weights(module)
    elif hasattr(module, "reset_parameters"):
        module.reset_parameters()
    else:
        raise ScheduleError(
            f"Module '{path}' ({type(module).__name__}) should have "
            "`reset_parameters` or `_init_weights`, or build needs an "
            "init_weights callable, to initialise its parameters")


def _materialise(model, init_weights, plan=None, rank=0, ranks=1):
    """Meta parameters become real ones; with init_weights, every module
    owning parameters is initialised (on every rank alike: the draws come
    from a generator seeded by lamina.manual_seed's seed and the module's
    path). On several ranks, a meta parameter the shard `plan` names
    (id → (axis, groups)) becomes this rank's block only, initialised by
    block_init; the model keeps in its place a placeholder of the whole
    shape storing one element (what tracing needs). Returns the blocks by
    their placeholder's id."""
    plan = plan if plan and ranks > 1 else {}
    blocks = {}
    for path, module in model.named_modules():
        own = list(module.named_parameters(recurse=False))
        meta = [(n, p) for n, p in own if p.device.type == "meta"]
        initialise = init_weights if own else False
        if not meta and not initialise:
            continue
        sharded = {n: plan[id(p)] for n, p in meta if id(p) in plan}
        try:
            made = _initialise_blockwise(module, path, meta, sharded, rank,
                                         ranks, initialise)
        except WholeTensorNeeded:
            # The initialiser needs the whole tensors: made whole, then cut.
            made = _initialise_whole(module, path, meta, sharded, rank,
                                     ranks, initialise)
        for name, (param, values) in made.items():
            placeholder = _like(param, torch.zeros(
                (), dtype=param.dtype).expand(param.shape))
            module.register_parameter(name, placeholder)
            blocks[id(placeholder)] = _like(param, values)
    return blocks


def _like(param, values):
    """A Parameter holding `values`, with `param`'s requires_grad and
    annotations."""
    like = nn.Parameter(values, requires_grad=param.requires_grad)
    like.__dict__.update(param.__dict__)
    return like


def _real(param):
    return _like(param, torch.zeros(param.shape, dtype=param.dtype))


def _initialise_blockwise(module, path, meta, sharded, rank, ranks,
                          init_weights):
    """{name: (meta parameter, this rank's block)} of the sharded ones, the
    others made whole; all initialised."""
    views = {}
    for name, param in meta:
        if name in sharded:
            axis, groups = sharded[name]
            views[name] = (param, BlockInit(
                param.shape, param.dtype, axis,
                block_indices(param.shape[axis], rank, ranks, groups)))
            module._parameters[name] = views[name][1]
        else:
            module.register_parameter(name, _real(param))
    _seeded_init(module, path, init_weights)
    return {name: (param, view.block) for name, (param, view)
            in views.items()}


def _initialise_whole(module, path, meta, sharded, rank, ranks,
                      init_weights):
    for name, param in meta:
        module.register_parameter(name, _real(param))
    _seeded_init(module, path, init_weights)
    made = {}
    for name, param in meta:
        if name in sharded:
            axis, groups = sharded[name]
            block = training.parameter_block(module._parameters[name], axis,
                                             rank, ranks, groups)
            made[name] = (param, block.detach())
    return made


def _seeded_init(module, path, init_weights):
    if not init_weights:
        return
    init_fn = init_weights if callable(init_weights) else None
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(rng.initial_seed() + zlib.crc32(path.encode()))
        with torch.no_grad():
            _initialise(module, path, init_fn)


def _sharded_parameters(sch):
    """(parameter, axis, groups) of every parameter the schedule shards."""
    for _, child in sch.named_schedules():
        for name, axis in child.metadata.primitives["shard"].items():
            local, _, leaf = name.rpartition(".")
            if leaf == "input":
                continue
            owner = child.mod.get_submodule(local) if local else child.mod
            yield (layer_tensor(owner, leaf), axis,
                   child.metadata.shard_groups.get(name, 1))


def shard_plan(sch):
    """id(parameter) → (axis, groups) of every parameter the schedule
    shards."""
    return {id(param): (axis, groups)
            for param, axis, groups in _sharded_parameters(sch)}


def materialise_meta(model, init_weights=None):
    """Materialises and initialises a model created under
    init_empty_weights (nothing for a model without meta parameters)."""
    if any(p.device.type == "meta" for p in model.parameters()):
        _materialise(model, True if init_weights is None else init_weights)


def _register_blocks(compiled, sch, blocks):
    """On several ranks: this rank's block of every sharded parameter, as
    the built module's Parameter from the start (so that an optimizer made
    right after build holds the Parameters the program trains); `blocks`
    holds those made at materialisation, by their placeholder's id."""
    if sch.world_size == 1 or _lamina.world_size() == 1:
        return
    own = dict(compiled.named_parameters())
    model_names = {id(p): n for n, p in sch.mod.named_parameters()}
    for param, axis, groups in _sharded_parameters(sch):
        full = model_names.get(id(param))
        if full is None or own.get(full) is not param:
            continue
        block = blocks.get(id(param))
        if block is None:
            block = training.parameter_block(
                param, axis, _lamina.rank() % sch.world_size,
                sch.world_size, groups)
        training.set_parameter(compiled, full, block)


def build(sch, target=None, init_weights=True, example_inputs=None,
          **kwargs):
    """(model, optimizer): the schedule compiled by Lamina as an nn.Module
    (compiled at its first call, or for `example_inputs`, and again per
    input shape) with this rank's parameter blocks and autograd; the
    optimizer is None (target=None), as Slapo's build without a framework
    dialect returns.

    target="deepspeed" (with `config`, DeepSpeed's configuration, and
    optionally `topology` and `loss_fn`): the model on the device grid the
    topology names, returned as an engine with DeepSpeed's training methods
    and the optimizer the configuration names
    (framework_dialect/deepspeed/engine.py, docs/grids.md)."""
    if not isinstance(sch, Schedule):
        raise ScheduleError("build takes a schedule (slapo.create_schedule)")
    if sch.parent is not None:
        raise ScheduleError("build takes the top schedule")
    if target == "megatron":
        raise ScheduleError("build(target='megatron'): Lamina runs the model "
                            "itself; Megatron's engine is not available "
                            "(target='deepspeed' takes DeepSpeed's topology "
                            "and configuration)")
    if target not in (None, "cpu", "cuda", "deepspeed"):
        raise ScheduleError(f"build: unknown target {target!r}")
    allowed = {"pipeline"} | ({"topology", "config", "loss_fn"}
                              if target == "deepspeed" else set())
    unknown = set(kwargs) - allowed
    if unknown:
        raise ScheduleError(f"build got unknown arguments {sorted(unknown)}")
    if target == "deepspeed" and "config" not in kwargs:
        raise ScheduleError("build(target='deepspeed') takes DeepSpeed's "
                            "configuration: config={...}")
    for path, why in sch.metadata.untraced_cuts.items():
        raise ScheduleError(f"cut_pipeline_stage on '{path}': Lamina finds "
                            "the layers that end the stage by tracing the "
                            f"model with torch.fx, which failed ({why})")
    if not (isinstance(init_weights, bool) or callable(init_weights)):
        raise ScheduleError("init_weights takes True, False or a callable "
                            "applied to each module")
    distributed = sch.world_size > 1 and _lamina.world_size() > 1
    blocks = _materialise(sch.mod, init_weights,
                          shard_plan(sch) if distributed else None,
                          _lamina.rank() % sch.world_size,
                          sch.world_size)
    native = sch.lamina_schedule
    if example_inputs is None and native.example_inputs is not None:
        example_inputs = native.example_inputs
    sizes = config = None
    if target == "deepspeed":
        sizes = deepspeed_engine.grid_of(kwargs.get("topology"),
                                         _lamina.world_size(),
                                         sch.world_size)
        config = deepspeed_engine.Config(kwargs["config"], sizes.get("dp", 1))
    compiled = native_build.build(
        native, example_inputs,
        target="cpu" if target == "deepspeed" else target or "cpu",
        pipeline=kwargs.get("pipeline", "lamina-cpu-pipeline"), grid=sizes,
        precision=config.precision if config is not None else None)
    _register_blocks(compiled, sch, blocks)
    if target == "deepspeed":
        return deepspeed_engine.make_engine(compiled, compiled.grid, config,
                                            kwargs.get("loss_fn"))
    return compiled, None
