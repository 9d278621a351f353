"""Slapo-style schedules of PyTorch models, recorded as transform.lamina
scripts.

``create_schedule(model)`` returns a :class:`Schedule`; ``sch["a.b"]`` and
``sch.find(regex)`` address modules by their ``named_modules`` paths, and
each primitive (shard, sync, decompose, fuse, replace, checkpoint,
cut_pipeline_stage, fork_rng, annotate) appends its transform op to the
schedule's script. Whenever the schedule knows the model's input shapes
(``example_inputs`` given here, or by build / verify / mlir), each primitive
is applied to the imported IR at once, so misuse raises
:class:`ScheduleError` with Lamina's diagnostic at the primitive that caused
it. The imported IR stays parsed in a ``_lamina.ScheduleSession`` between
primitives; each one runs the transform interpreter once, on its own lines.
"""

import re
import warnings

from . import _lamina
from . import lns as lns_module
from . import op as lamina_op
from .errors import ScheduleError, UnsupportedOperationError
from .importer import import_model, is_layer


def _shape_of(x):
    """An example input's shape, or the value of one that is not a tensor
    (targets=None), which the trace specialises on."""
    return tuple(x.shape) if hasattr(x, "shape") else ("value", repr(x))


_HEADER = ("module attributes {transform.with_named_sequence} {\n"
           "  transform.named_sequence @__transform_main("
           "%root: !transform.any_op {transform.readonly}) {\n")
_FOOTER = "    transform.yield\n  }\n}\n"
_NO_SHAPES = ("the schedule has no input shapes yet: pass example_inputs to "
              "create_schedule, mlir, build or verify")


def _string(text):
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _attribute(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value} : i64"
    if isinstance(value, float):
        return f"{value!r} : f64"
    if isinstance(value, str):
        return _string(value)
    raise ScheduleError(f"annotate takes bool, int, float or str values, got "
                        f"{type(value).__name__}")


class Schedule:
    """A model and the primitives applied to it, for `world_size` ranks."""

    def __init__(self, model, world_size=1, example_inputs=None):
        if world_size < 1:
            raise ScheduleError(f"world_size must be positive, got "
                                f"{world_size}")
        self.model = model
        self.world_size = world_size
        self.paths = self._module_paths()
        self._ops = []
        # The primitives applied, by name (shard, sync, cut_pipeline_stage,
        # ...): what building on a device grid asks of a schedule.
        self.primitives = set()
        self._handles = 0
        self._imported = None
        self._session = None
        self._example_inputs = None
        self._traced_flags = None
        if example_inputs is not None:
            self.trace(example_inputs)

    def model_changed(self):
        """Takes in a change of the model's modules (a module swapped for
        another): the model is imported again at the known shapes and the
        primitives so far replayed on it (ScheduleError if one no longer
        applies, leaving the schedule on the previous import). A module
        that moved (wrapped by another: Slapo's CheckPointWrapper) keeps
        the primitives addressed to it at its new path."""
        before = self._modules
        self.paths = self._module_paths()
        names = {id(module): path for path, module in self._modules.items()}
        moved = {path: names[id(module)] for path, module in before.items()
                 if id(module) in names and names[id(module)] != path}
        if moved:
            self._ops = [_PATH_SELECTOR.sub(
                lambda m: f"path {_string(moved.get(m.group(1), m.group(1)))}",
                line) for line in self._ops]
        if self._example_inputs is not None:
            self._retrace(self._example_inputs)

    @property
    def example_inputs(self):
        """The inputs of the last trace, or None before any."""
        return self._example_inputs

    @property
    def imported(self):
        """The model imported at the last trace's shapes
        (:class:`lamina.importer.ImportedModel`), or None before any."""
        return self._imported

    def _module_paths(self):
        self._modules = {name: module
                         for name, module in self.model.named_modules()
                         if name}
        return list(self._modules)

    # -- addressing --------------------------------------------------------

    def __getitem__(self, path):
        if path not in self.paths:
            raise ScheduleError(f"no module '{path}' in the model (paths are "
                                "named_modules names)")
        return SubSchedule(self, f"path {_string(path)}", [path])

    def find(self, regex):
        try:
            pattern = re.compile(regex)
        except re.error as error:
            raise ScheduleError(f"find: '{regex}' is not a valid regular "
                                f"expression ({error})") from None
        matches = [p for p in self.paths if pattern.fullmatch(p)]
        if not matches:
            raise ScheduleError(f"no module path matches '{regex}'")
        return SubSchedule(self, f"regex {_string(regex)}", matches)

    # -- IR ------------------------------------------------------------------

    def trace(self, example_inputs):
        """Imports the model for the shapes of `example_inputs` and replays
        the primitives so far on it (one interpreter run). A replay that
        fails raises ScheduleError and keeps the previous import."""
        example_inputs = tuple(example_inputs)
        shapes = [_shape_of(x) for x in example_inputs]
        if self._imported is None or shapes != self._shapes:
            self._retrace(example_inputs)
        return self._imported

    def _retrace(self, example_inputs):
        flags = {name: m.training for name, m in self.model.named_modules()}
        imported = import_model(self.model, example_inputs, self.world_size)
        try:
            session = _lamina.ScheduleSession(imported.located_text)
        except ValueError as error:
            # The ops' verifiers reject what the converters passed on (an
            # f64 tensor into a layer): the message names op and module.
            raise UnsupportedOperationError(
                "the model uses a form Lamina's ops do not take: "
                f"{str(error).split(':', 1)[1].strip()}") from None
        if self._ops:
            _apply(session, self.transform_script())
        self._imported, self._session = imported, session
        self._traced_flags = flags
        self._shapes = [_shape_of(x) for x in example_inputs]
        self._example_inputs = example_inputs

    def transform_script(self):
        """The schedule as a transform.lamina script (replayable on
        `mlir()` with lamina-opt --lamina-record-module-paths
        --transform-preload-library + --transform-interpreter, or
        lamina-run --schedule)."""
        return _script(self._ops)

    def mlir(self, example_inputs=None):
        """The imported IR (before the schedule) as text, each op of a
        submodule's forward located at that module's path
        (`loc("h.0.attn")`)."""
        if example_inputs is not None:
            self.trace(example_inputs)
        if self._imported is None:
            raise ScheduleError(_NO_SHAPES)
        return self._imported.located_text

    def scheduled_ir(self):
        """The imported IR after the schedule."""
        if self._session is None:
            raise ScheduleError(_NO_SHAPES)
        return self._session.ir

    def scheduled_module(self):
        """The imported IR after the schedule, as a ``_lamina.Module`` in
        the session's context (a copy; not parsed again)."""
        if self._session is None:
            raise ScheduleError(_NO_SHAPES)
        return self._session.module()

    def traced_in(self, flags):
        """Whether the last import traced the model with the modules'
        training flags `flags` ({path: training})."""
        return self._traced_flags == flags

    # -- the whole program ---------------------------------------------------

    def sync(self, mode, sync_op_or_fn, **kwargs):
        """A sync on the program's results (mode fwd_post), e.g. the
        all-gather ending sequence parallelism."""
        self._record_lines([_sync_text(mode, sync_op_or_fn, kwargs)
                            .format(h="%root")])
        self.primitives.add("sync")
        return self

    # -- recording -----------------------------------------------------------

    def _record_lines(self, lines):
        if self._session is not None:
            _apply(self._session, _script(lines, len(self._ops)))
        self._ops.extend(lines)

    def _record(self, selector, make_lines):
        self._handles += 1
        handle = f"%h{self._handles}"
        lines = [f"{handle} = transform.lamina.match %root {selector} : "
                 "(!transform.any_op) -> !transform.any_op"]
        lines += make_lines(handle)
        self._record_lines(lines)


# A primitive's selector of one module by its path.
_PATH_SELECTOR = re.compile(r'path "((?:[^"\\]|\\.)*)"')


def _script(lines, skipped=0):
    """A transform script of `lines`, after `skipped` blank lines in place
    of the primitives before them, so that a diagnostic's line is the one
    in the whole schedule's script."""
    return _HEADER + "\n" * skipped + \
        "".join(f"    {line}\n" for line in lines) + _FOOTER


def _apply(session, script):
    """Applies `script` to the session's IR, which an error leaves as it
    was."""
    try:
        session.apply(script)
    except ValueError as error:
        raise ScheduleError(str(error)) from None


# The keyword arguments of a sync primitive.
SYNC_ARGUMENTS = frozenset({"axis", "tensor_parallel_output_grad"})


def _sync_text(mode, sync_op_or_fn, kwargs):
    """The transform.lamina.sync op of a sync primitive, on handle {h}."""
    if callable(sync_op_or_fn):
        raise ScheduleError(
            "sync takes the collective by name (\"all_reduce\", "
            "\"all_gather\", \"reduce_scatter\", \"scatter\"); a Python "
            "callable cannot be compiled")
    unknown = set(kwargs) - SYNC_ARGUMENTS
    if unknown:
        raise ScheduleError(f"sync got unknown arguments {sorted(unknown)}")
    text = (f"transform.lamina.sync {{h}} {_string(mode)} "
            f"{_string(sync_op_or_fn)}")
    if kwargs.get("axis") is not None:
        text += f" axis {int(kwargs['axis'])}"
    # Left out, backward generation derives the gather's transpose.
    output_grad = kwargs.get("tensor_parallel_output_grad")
    if output_grad is not None:
        text += (" {{tensor_parallel_output_grad = "
                 f"{'true' if output_grad else 'false'}}}}}")
    return text + " : !transform.any_op"


class SubSchedule:
    """The modules one `sch[...]` or `sch.find(...)` addressed."""

    def __init__(self, schedule, selector, paths):
        self.schedule = schedule
        self.selector = selector
        self.paths = paths

    def _op(self, text, primitive=None):
        self.schedule._record(self.selector,
                              lambda h: [text.format(h=h)])
        if primitive:
            self.schedule.primitives.add(primitive)
        return self

    def shard(self, tensor_name, axis, groups=1):
        """Shards the parameter `tensor_name` ("weight", "bias", or a
        layer's "input") on `axis` over the schedule's ranks; `groups`
        shards each of that many equal parts of the axis on its own (3 for
        a contiguous [Q; K; V] projection: each rank gets its heads of Q,
        K and V)."""
        name = tensor_name.rsplit(".", 1)[-1]
        if isinstance(groups, bool) or not isinstance(groups, int) or \
                groups < 1:
            raise ScheduleError(f"shard: groups must be a positive integer, "
                                f"got {groups!r}")
        grouped = f" groups {groups}" if groups != 1 else ""
        return self._op(f"transform.lamina.shard {{h}} {_string(name)} axis "
                        f"{int(axis)}{grouped} : !transform.any_op", "shard")

    def sync(self, mode, sync_op_or_fn, **kwargs):
        """Adds a sync point: mode in fwd_pre / fwd_post / bwd_post, op in
        all_reduce / all_gather / reduce_scatter / scatter (kwargs: axis,
        tensor_parallel_output_grad)."""
        text = _sync_text(mode, sync_op_or_fn, kwargs)
        return self._op(text, "sync")

    def decompose(self):
        """nn.Linear → LinearWithSeparateBias."""
        return self._op("{h}r = transform.lamina.decompose {h} : "
                        "(!transform.any_op) -> !transform.any_op")

    def fuse(self, subgraph=None, compiler=None, name="FusedModule"):
        """Fuses each layer's matmul → [sync] → bias → act → dropout chain
        into one op (one loop nest writing the output once)."""
        if subgraph is not None or compiler is not None:
            raise ScheduleError("Lamina fuses a layer's own epilogue chain; "
                                "subgraph and compiler are not taken")
        return self._op("{h}r = transform.lamina.fuse {h} : "
                        "(!transform.any_op) -> !transform.any_op")

    def replace(self, new_mod_or_func, target_ops=None, name=None):
        """Swaps each layer for an equivalent variant keeping its path,
        parameters and syncs: an LNSLinear (class or instance; its
        weight_f, default 23) for the LNS variant, or a lamina.op class /
        "fused_linear" for the fused form."""
        if target_ops is not None:
            raise ScheduleError("replace swaps whole layers; target_ops is "
                                "not taken")
        new = new_mod_or_func
        lns_class = new if isinstance(new, type) else type(new)
        if issubclass(lns_class, lns_module.LNSLinear):
            if isinstance(new, lns_module.LNSLinear) and new.weight_b is not None:
                raise ScheduleError("replace with an LNS layer takes its "
                                    "base as weight_f")
            f = new.weight_f if isinstance(new, lns_module.LNSLinear) else \
                lns_module.DEFAULT_F
            self._warn_of_lossy_outputs(int(f))
            return self._op(f"{{h}}r = transform.lamina.replace {{h}} \"lns\" "
                            f"f {int(f)} : (!transform.any_op) -> "
                            "!transform.any_op")
        if new == "fused_linear" or (isinstance(new, type) and issubclass(
                new, (lamina_op.LinearWithSyncFunc,))):
            return self._op("{h}r = transform.lamina.replace {h} "
                            "\"fused_linear\" : (!transform.any_op) -> "
                            "!transform.any_op")
        raise ScheduleError(f"replace takes an LNS layer or a lamina.op "
                            f"class, got {new!r}")

    def _warn_of_lossy_outputs(self, f):
        """The LNS variant decodes its result to the layer's float dtype:
        warns, as an eager LNSLinear returning that dtype does, when its
        significand cannot hold every value of base 2^(2^-f)."""
        for path in self.paths:
            weight = getattr(self.schedule.model.get_submodule(path),
                             "weight", None)
            dtype = getattr(weight, "dtype", None)
            bits = lns_module.layers.SIGNIFICAND_BITS.get(dtype)
            if bits is not None and f > bits - 2:
                warnings.warn(
                    f"{path}: the LNS variant with f = {f} returns {dtype}, "
                    f"whose {bits}-bit significand cannot hold every LNS "
                    f"value of that base: a following LNS layer would "
                    f"encode other codes than the reference. Use f <= "
                    f"{bits - 2}, or float64 layers between LNS layers",
                    lns_module.LNSPrecisionWarning, stacklevel=3)

    def checkpoint(self):
        """Recomputes in the backward instead of saving: a layer's
        activations; for a module that is not one layer (a block, a norm
        written as a module), its whole forward, only what enters it saved
        (`transform.lamina.checkpoint_module`)."""
        modules = dict(self.schedule.model.named_modules())
        if self.selector.startswith("path ") and \
                not is_layer(modules[self.paths[0]]):
            self.schedule._record_lines([
                f"transform.lamina.checkpoint_module %root "
                f"{_string(self.paths[0])} : !transform.any_op"])
            return self
        return self._op("transform.lamina.checkpoint {h} : !transform.any_op")

    def cut_pipeline_stage(self):
        return self._op("transform.lamina.cut_pipeline_stage {h} : "
                        "!transform.any_op", "cut_pipeline_stage")

    def fork_rng(self):
        return self._op("transform.lamina.fork_rng {h} : !transform.any_op")

    def annotate(self, param_name, key, value):
        entry = f"{key} = {_attribute(value)}"
        return self._op(f"transform.lamina.annotate {{h}} "
                        f"{_string(param_name)} {{{{{entry}}}}} : "
                        "!transform.any_op")


def create_schedule(model, world_size=None, example_inputs=None):
    """A schedule of `model` for `world_size` ranks (Slapo's
    create_schedule). With `example_inputs` (a tuple of tensors fixing the
    shapes) every primitive is checked by Lamina as it is applied.

    `world_size` defaults to the size of the MPI world the process was
    launched in (1 outside mpirun), as Slapo takes it from the launched
    world. Under mpirun, an explicit world size must divide that world's:
    the world's own, the tensor axis of a device grid (``lamina.build(...,
    grid=...)``) or 1 (the model replicated on every rank); any other
    raises ScheduleError.
    Outside mpirun a schedule may name any world size, to be inspected or
    compiled (running it needs `mpirun.mpich -np world_size`)."""
    launched = _lamina.world_size()
    if world_size is None:
        world_size = launched
    if isinstance(world_size, bool) or not isinstance(world_size, int):
        raise ScheduleError(f"world_size must be an integer, got "
                            f"{world_size!r}")
    if launched > 1 and launched % world_size:
        raise ScheduleError(
            f"world_size={world_size} in an MPI world of {launched} ranks: a "
            f"schedule runs on the launched world ({launched}), on the "
            f"tensor axis of a device grid (a divisor of {launched}; "
            f"lamina.build(..., grid=...)) or replicated on every rank (1); "
            f"launch with mpirun.mpich -np {world_size} or leave world_size "
            f"out")
    return Schedule(model, world_size, example_inputs)
