"""Compiling scheduled models and running them: build, verify and MPI
ranks."""

import contextlib
import functools

import numpy as np
import torch
from torch import nn

from .. import _lamina
from ..errors import ScheduleError
from ..importer import import_model, ir, unsharded_fused_qkv
from ..importer.model import result_tensors
from ..lns.graph import clear_gradient
from ..lns.layers import lns_parameter_groups
from ..schedule import Schedule
from . import formats, precision as precision_module, state, training
from . import microbatches as microbatches_module
from .face import Face
from .generation import Generation, model_max_length
from .grid import Grid, activate as activate_grid, mean_over_replicas
from .progress import compiled, compiling, stage
from .rng import next_dropout_key

def rank():
    """This process's rank in the MPI world (0 outside mpirun)."""
    return _lamina.rank()


def world_size():
    """The number of processes in the MPI world (1 outside mpirun). Lamina
    uses MPICH: launch with `mpirun.mpich -np N /usr/bin/python3 ...`."""
    return _lamina.world_size()


_STAGES = ("imported", "scheduled", "partitioned", "lowered", "training")


class _Compiled:
    """One compiled program for one set of input shapes: the scheduled
    program, and its calls from torch (:class:`training.ProgramCall`) with
    the tensor of every parameter argument."""

    def __init__(self, imported, scheduled, pipeline, parameters_for,
                 device_grid=None, replica_mean=True):
        """`scheduled`: the scheduled module (``_lamina.Module``), compiled
        when a call first needs it (a training call needs only its forward /
        backward pair); `parameters_for(scheduled)`: a function giving the
        tensor of every parameter argument (their blocks on several
        ranks); `device_grid`: the Grid it runs on, or None."""
        self.imported = imported
        self.scheduled = scheduled
        self.pipeline = pipeline
        self._program = None
        self.call = training.ProgramCall(
            training.CachedProgram(lambda: self.program), imported,
            scheduled, pipeline, parameters_for(scheduled), device_grid,
            replica_mean)

    @property
    def program(self):
        """The scheduled program, compiled at the first use."""
        if self._program is None:
            try:
                with stage(f"compiling @{self.imported.entry} "
                           f"({self.pipeline})"):
                    self._program = compiled(_lamina.Program(
                        self.scheduled, entry=self.imported.entry,
                        pipeline=self.pipeline))
            except ValueError as error:
                raise ScheduleError(str(error)) from None
        return self._program

    @property
    def world_size(self):
        """The ranks the program runs on: its shards' or its pipeline
        stages' (compiles it if no call has yet)."""
        return self.program.world_size

    @functools.cached_property
    def autocast_elements(self):
        """For each result, the narrower float type eager autocast returns
        it in ("bf16", "f16": a lower-precision op's rounded result, which
        the model does not cast explicitly last), or None."""
        rounded = self.scheduled.rounded_results(self.imported.entry)
        return [None if cast else element for element, cast in
                zip(rounded, self.imported.explicit_casts)]

    def result_shard_axes(self):
        return [axis for _, _, axis in self.program.results]


# The result element types target='cuda' returns (and LNS numbers, as their
# int64 codes).
_CUDA_RESULT_ELEMENTS = (ir.F32, ir.F16, ir.BF16, ir.I64)


def _result_types(imported):
    """(shape, torch dtype) of each result of the imported function."""
    results = []
    for type_ in imported.result_types:
        element = type_.element
        if element not in _CUDA_RESULT_ELEMENTS and \
                not isinstance(element, ir.LnsNumber):
            raise ScheduleError(f"target='cuda' returns f32, f16, bf16 or "
                                f"LNS codes; got {element}")
        results.append((type_.shape, element.dtype))
    return results


# The element names of the binding's signatures, per torch dtype.
_ELEMENT_NAMES = {torch.float32: "f32", torch.float16: "f16",
                  torch.bfloat16: "bf16", torch.int64: "i64",
                  torch.float64: "f64", torch.int32: "i32"}


def _resident(value):
    """A CUDA tensor as the binding passes a device buffer (pointer, element
    name, shape); an int as it is."""
    if isinstance(value, int):
        return value
    return (value.data_ptr(), _ELEMENT_NAMES[value.dtype], tuple(value.shape))


class _CompiledCuda:
    """One GPU program (the scheduled module built into an artefact and
    loaded into this process by the binding) for one set of input shapes,
    its weights resident on the GPU."""

    def __init__(self, imported, scheduled):
        if not torch.cuda.is_available():
            raise RuntimeError("target='cuda' needs a CUDA GPU visible to "
                               "PyTorch; none is")
        self.imported = imported
        self.scheduled = scheduled
        # The schedule's transforms keep the function's signature.
        self.results = _result_types(imported)
        try:
            with stage("compiling for the GPU (lamina-gpu-pipeline)"):
                self.program = compiled(_lamina.Program(
                    scheduled, entry=imported.entry, target="cuda"))
        except ValueError as error:
            raise ScheduleError(str(error).strip()) from None
        except RuntimeError as error:  # no usable GPU
            raise RuntimeError(f"target='cuda': {error}") from None
        # (LNS layers' codes are float64 Parameters; the program takes
        # them as int64.)
        self.params = [t.detach().to(
            "cuda", torch.int64 if t.dtype == torch.float64 else t.dtype)
            .contiguous() for _, t in self.imported.parameters]
        self.pipeline = "lamina-gpu-pipeline"

    def run(self, inputs, dropout_key):
        args = [x.to("cuda").contiguous() for x in inputs] + self.params
        if self.imported.has_seed:
            args.append(dropout_key)
        outputs = [torch.empty(shape, dtype=dtype, device="cuda")
                   for shape, dtype in self.results]
        # On PyTorch's current stream, without waiting: torch orders what
        # reads the outputs after it.
        self.program.run_resident(
            [_resident(a) for a in args], [_resident(o) for o in outputs],
            torch.cuda.current_stream().cuda_stream)
        return outputs

    @property
    def world_size(self):
        return 1

    def result_shard_axes(self):
        return [None] * len(self.results)


def _micro_batches(inputs, labels, count):
    """[(inputs, labels)] of `count` equal slices along axis 0."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ScheduleError(f"microbatches must be a positive integer, got "
                            f"{count!r}")
    rows = [torch.as_tensor(x).shape[0] for x in inputs] + [
        torch.as_tensor(labels).shape[0]]
    if len(set(rows)) != 1 or rows[0] % count:
        raise ScheduleError(
            f"a batch of {rows[0]} rows (axis 0 of the inputs and labels: "
            f"{rows}) does not split into {count} equal micro-batches")
    size = rows[0] // count
    return [(tuple(torch.as_tensor(x)[i * size:(i + 1) * size]
                   for x in inputs),
             torch.as_tensor(labels)[i * size:(i + 1) * size])
            for i in range(count)]


def _is_array(x):
    return isinstance(x, (torch.Tensor, np.ndarray))


def _input_key(x):
    """What a compiled program is specific to in one call argument: an
    array's shape and dtype, any other value itself (targets=None)."""
    if _is_array(x):
        return tuple(x.shape), _dtype_name(x)
    return "value", repr(x)


def _same_keys(these, those):
    """Whether two argument lists have the same shapes and dtypes (and the
    same values where they are not arrays)."""
    return these is not None and [_input_key(x) for x in these] == [
        _input_key(x) for x in those]


def _dtype_name(x):
    """float32, int64, ...: the same for a tensor and an array."""
    if isinstance(x, torch.Tensor):
        return str(x.dtype).removeprefix("torch.")
    return np.dtype(x.dtype).name


@contextlib.contextmanager
def _training_flags(model, flags):
    """`model`'s modules with `training` from `flags` (module name → bool),
    as they were again afterwards."""
    modules = dict(model.named_modules())
    before = {name: module.training for name, module in modules.items()}
    try:
        for name, module in modules.items():
            module.training = flags.get(name, module.training)
        yield
    finally:
        for name, module in modules.items():
            module.training = before[name]


_NOT_DIFFERENTIATED_ON_GPU = (
    "target='cuda' programs are not differentiated: train with "
    "target='cpu', or call the model under torch.no_grad() for inference")


class CompiledModule(Face, nn.Module):
    """A scheduled model compiled for the host CPU or a GPU, as a
    torch.nn.Module.

    Called with NumPy arrays it returns NumPy arrays; with torch tensors,
    tensors (a tuple for several results; on target='cuda', on the GPU). A
    new input shape compiles again (cached). In a multi-rank program every
    rank passes the whole inputs; a result sharded over ranks comes back as
    this rank's block, and a sharded parameter is this rank's block of it.

    Training (docs/training.md): `named_parameters()` yields the model's
    Parameters under the model's names (on several ranks, this rank's block
    of each sharded one); with autograd on, results of torch calls carry
    autograd through the compiled backward (lamina-generate-backward). The module starts
    in the model's mode; `train()` / `eval()` switch it, and a call in a
    mode traces and compiles the model in that mode (dropout on or off)
    once per input shape.
    """

    def __init__(self, schedule, example_inputs, pipeline, target="cpu",
                 progress=None, max_seq_len=None, device_grid=None,
                 replica_mean=True, precision=None):
        super().__init__()
        self.schedule = schedule
        # build's precision; None follows torch.autocast (runtime/precision.py).
        self._precision = precision
        # The grid the programs run on (runtime/grid.py), or None.
        self.grid = device_grid
        self._replica_mean = replica_mean
        self.pipeline = pipeline
        self.target = target
        self._progress = progress
        # Per (input shapes and dtypes, mode) and per scheduled IR; the
        # decode steps of generation (runtime/generation.py).
        self._state = {"shapes": {}, "programs": {}, "last": None,
                       "generation": None, "max_seq_len": max_seq_len}
        model = schedule.model
        self._flags = {model.training: {name: module.training for name,
                                        module in model.named_modules()}}
        self.train(model.training)
        training.register_parameters(self, model)
        if example_inputs is not None:
            inputs = tuple(example_inputs)
            with compiling(lambda: self._describe(inputs),
                           self._progress):
                self._compile(inputs)
        # From here on, what the compiled module lacks is the model's.
        self.__dict__["_face_ready"] = True

    def _face_original(self):
        return self.schedule.model if "_face_ready" in self.__dict__ \
            else None

    @property
    def _last(self):
        if self._state["last"] is None:
            raise ScheduleError("the model has not been compiled yet: it "
                                "compiles at its first call (or pass "
                                "example_inputs to build)")
        return self._state["last"]

    def _trace(self, inputs, mode):
        """(imported, scheduled module) of the model in `mode`: the
        schedule's own import when it traced the model in that mode for
        inputs like these (or imports alike), else a fresh import with the
        schedule's script replayed on it."""
        model = self.schedule.model
        flags = self._flags.get(mode) or {
            name: mode for name, _ in model.named_modules()}
        inputs = tuple(torch.as_tensor(x) if _is_array(x) else x
                       for x in inputs)
        with _training_flags(model, flags):
            with stage("tracing the model"):
                imported = self.schedule.trace(inputs)
            traced = {name: m.training for name, m in model.named_modules()}
            if self.schedule.traced_in(traced) and _same_keys(
                    self.schedule.example_inputs, inputs) and \
                    not self._state.get("buffers_loaded"):
                return imported, self.schedule.scheduled_module()
            with stage("tracing the model"):
                fresh = import_model(model, inputs, self.schedule.world_size)
        if fresh.text == imported.text:
            return imported, self.schedule.scheduled_module()
        return fresh, self._apply_schedule(fresh)

    def _apply_schedule(self, imported):
        """The schedule's script replayed on `imported` (a ``_lamina.Module``
        of it)."""
        try:
            with stage("applying the schedule"):
                return _lamina.Module(imported.located_text).transform(
                    schedule=self.schedule.transform_script())
        except ValueError as error:
            raise ScheduleError(str(error)) from None

    def _compile(self, inputs):
        element = precision_module.of_call(self._precision)
        key = (tuple(_input_key(x) for x in inputs), self.training, element)
        shapes, programs = self._state["shapes"], self._state["programs"]
        if key not in shapes:
            with precision_module.tracing_in_f32():
                imported, scheduled = self._trace(inputs, self.training)
            if element is not None and self.target == "cpu":
                scheduled = precision_module.lowered(scheduled, element)
            if self.grid is not None:
                # The program declares the grid it runs on: its collectives
                # name the tensor axis of it.
                scheduled = scheduled.on_grid(self.grid.sizes())
            # Modes that import alike share one program.
            text = str(scheduled)
            if text not in programs:
                programs[text] = (
                    _CompiledCuda(imported, scheduled)
                    if self.target == "cuda" else
                    _Compiled(imported, scheduled, self.pipeline,
                              lambda module: self._parameters_for(
                                  module, imported), self.grid,
                              self._replica_mean))
            shapes[key] = programs[text]
        self._state["last"] = shapes[key]
        return self._state["last"]

    def _parameters_for(self, scheduled, imported):
        """The parameter arguments of the `scheduled` module: on several
        ranks, a sharded parameter becomes this rank's block (registered in
        place of the model's whole Parameter at the first compile, kept
        after); then the schedule's backward layouts are checked when the
        module trains."""
        model = self.schedule.model
        formats.register_parameters(self, model, imported, scheduled)
        if scheduled.world_size > 1:
            training.register_parameter_blocks(self, model, imported,
                                               scheduled)
            if torch.is_grad_enabled() and any(
                    p.requires_grad for p in self.parameters()):
                # The parameters' gradients now; an input's, when a call
                # asks for it (the training pair checks again).
                training.check_gradient_layouts(
                    scheduled, range(imported.num_inputs))
        return training.parameter_arguments(self, model, imported)

    def _describe(self, inputs):
        """What a call on `inputs` compiles, for progress reports."""
        shapes = ", ".join(f"{'x'.join(map(str, x.shape)) or 'scalar'} "
                           f"{_dtype_name(x)}" if _is_array(x) else repr(x)
                           for x in inputs)
        mode = "train" if self.training else "eval"
        return f"{type(self.schedule.model).__name__}({shapes}), {mode} mode"

    def forward(self, *inputs):
        with compiling(lambda: self._describe(inputs), self._progress):
            generation = self.generation
            if generation is not None and generation.applies(inputs):
                results = generation(inputs[0])
                if results is not None:
                    return results
            return self._forward(inputs)

    @property
    def generation(self):
        """The decode steps serving calls on growing sequences in eval mode
        with autograd off (runtime/generation.py), or None where they do
        not apply: training, autograd on, several ranks, target='cuda', or
        no maximum sequence length known."""
        if self.training or torch.is_grad_enabled() or \
                self.target != "cpu" or self.schedule.world_size != 1:
            return None
        if self._state["generation"] is None:
            model = self.schedule.model
            length = self._state["max_seq_len"]
            if length is None:
                length = model_max_length(model)
            if not length:
                return None
            self._state["generation"] = Generation(
                model, length, self._eval_mode, self._compile_imported,
                lambda: precision_module.of_call(self._precision))
        return self._state["generation"]

    def _eval_mode(self):
        """The model's modules as the compiled module's eval mode has them
        (a context)."""
        model = self.schedule.model
        return _training_flags(model, self._flags.get(False) or {
            name: False for name, _ in model.named_modules()})

    def _compile_imported(self, imported, element=None):
        """A program for `imported` (a function of the model traced apart
        from its calls) with the schedule applied, its layer matmuls in
        `element` (autocast's "bf16", "f16") if given."""
        scheduled = self._apply_schedule(imported)
        if element is not None:
            scheduled = precision_module.lowered(scheduled, element)
        return _Compiled(imported, scheduled, self.pipeline,
                         lambda module: self._parameters_for(module,
                                                             imported),
                         self.grid, self._replica_mean)

    def _forward(self, inputs):
        compiled = self._compile(inputs)
        # Arguments that are not arrays (targets=None) were specialised.
        inputs = [x for x in inputs if _is_array(x)]
        compiled.imported.check_indices(inputs)
        dropout_key = (next_dropout_key() if compiled.imported.has_seed
                       else None)
        if self.target == "cuda":
            tensors = [torch.as_tensor(x) for x in inputs]
            results = training.rejecting(
                lambda: compiled.run(tensors, dropout_key),
                tensors + list(self.parameters()),
                _NOT_DIFFERENTIATED_ON_GPU)
        elif not any(isinstance(x, torch.Tensor) for x in inputs):
            results = compiled.call.run(inputs, dropout_key)
        else:
            results = compiled.call([torch.as_tensor(x) for x in inputs],
                                    dropout_key, keep=self.training)
        results = list(results)
        if self.target == "cpu" and torch.is_autocast_cpu_enabled() and \
                precision_module.of_call(self._precision) is not None:
            results = precision_module.as_autocast_results(
                results, compiled.autocast_elements)
        compiled.imported.apply_side_effects(self.schedule.model, results)
        return compiled.imported.restructure(results)

    def train_batch(self, inputs, labels, loss_fn, microbatches=1):
        """One training batch: `inputs` (a tensor or a tuple of them) and
        `labels` split into `microbatches` equal micro-batches along axis 0,
        each one's `loss_fn(results, labels)` divided by their number and
        differentiated, the gradients added to the parameters' `.grad` (the
        gradient of the batch's mean loss); returns the mean loss (over the
        data replicas too). A program cut into pipeline stages runs them in
        the 1F1B order (runtime/microbatches.py, docs/grids.md); any other
        runs the micro-batches one after another."""
        if not isinstance(inputs, (tuple, list)):
            inputs = (inputs,)
        return self.train_micro_batches(
            _micro_batches(inputs, labels, microbatches), loss_fn)

    def train_micro_batches(self, splits, loss_fn):
        """train_batch on micro-batches given as [(inputs tuple, labels)],
        all of one shape."""
        compiled = self._compile(splits[0][0])
        pipeline = self.grid if self.grid is not None else Grid(
            pp=world_size())
        if "cut_pipeline_stage" in self.schedule.primitives and \
                pipeline.pp > 1:
            loss, self._state["batch_report"] = microbatches_module.train_batch(
                compiled.call, splits, loss_fn, pipeline)
            return loss
        total = 0.0
        for micro_inputs, micro_labels in splits:
            loss = loss_fn(self(*micro_inputs), micro_labels)
            (loss / len(splits)).backward()
            total += float(loss.detach())
        return torch.tensor(mean_over_replicas(total / len(splits),
                                               self.grid))

    def _apply(self, fn, *args, **kwargs):
        """`to()`, `half()`, `cuda()`, ... keep the parameters as compiled:
        a conversion that would change one's dtype or device raises
        ScheduleError and changes nothing (the program takes them as they
        were built); one that changes none does nothing, as on any module."""
        for name, parameter in self.named_parameters():
            converted = fn(parameter.detach())
            if (converted.dtype, converted.device) != (parameter.dtype,
                                                       parameter.device):
                raise ScheduleError(
                    f"'{name}' is compiled as {parameter.dtype} on "
                    f"{parameter.device}; to run it as {converted.dtype} on "
                    f"{converted.device}, convert the model and build it "
                    f"again")
        return super()._apply(fn, *args, **kwargs)

    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """The state under exactly the model's keys (tied names, persistent
        buffers): a checkpoint the model loads, and the compiled module
        too. On several ranks a sharded parameter is this rank's block; a
        layer replaced by its LNS variant stands as that layer, its codes
        and base (`<name>_lns`, `<name>_base`)."""
        return state.state_dict(self, self.schedule.model, destination,
                                prefix, keep_vars)

    def load_state_dict(self, state_dict, strict=True):
        """Loads a checkpoint with the model's keys (from the model, or from
        a compiled module): the next call computes with it. A buffer whose
        value changes compiles the model again at the next call (buffers
        such as masks enter programs as constants)."""
        result, buffers_changed = state.load_state_dict(
            self, self.schedule.model, state_dict, strict)
        if buffers_changed:
            # Traced again, with the schedule's own import too.
            self._state.update(shapes={}, programs={}, last=None,
                               buffers_loaded=True)
        return result

    def lns_parameters(self):
        """The groups an LNS optimizer takes (lamina.lns.LNSSGD, LNSAdam),
        ``{"params": [codes], "base": base}``, one per parameter of a layer
        replaced by its LNS variant: registered as lamina.lns layers do,
        ``<name>_lns`` (float64 codes) and ``<name>_base``."""
        return lns_parameter_groups(self)

    def zero_grad(self, set_to_none=False):
        """Clears the gradients; an LNS parameter's become None or the
        zero code (and forget what earlier backward calls accumulated)."""
        for parameter in self.parameters():
            clear_gradient(parameter, set_to_none)

    @property
    def world_size(self):
        """The ranks the program runs on (1: a single process)."""
        return self._last.world_size

    def result_shard_axes(self):
        """Per result: the axis it is sharded on over ranks, or None."""
        return self._last.result_shard_axes()

    def ir(self, stage="scheduled"):
        """The IR at `stage`: imported, scheduled, partitioned (one rank's
        program with its collectives), lowered (LLVM dialect), or training
        (the scheduled program with the forward / backward pair of
        lamina-generate-backward; CPU programs)."""
        if stage not in _STAGES:
            raise ValueError(f"unknown stage {stage!r}; expected one of "
                             f"{', '.join(_STAGES)}")
        compiled = self._last
        if stage == "imported":
            return compiled.imported.text
        if stage == "scheduled":
            return str(compiled.scheduled)
        if stage == "training":
            if self.target == "cuda":
                raise ScheduleError(_NOT_DIFFERENTIATED_ON_GPU)
            return str(training.generate_backward(compiled.scheduled,
                                                  compiled.imported.entry))
        pipeline = ("lamina-decompose,lamina-partition" if stage ==
                    "partitioned" else compiled.pipeline)
        if stage == "lowered" and self.target == "cuda":
            pipeline = "lamina-gpu-pipeline"
        try:
            return str(compiled.scheduled.transform(pipeline=pipeline))
        except ValueError as error:
            raise ScheduleError(str(error)) from None


def _on_grid(sch, grid_sizes, dp_gradients, target):
    """(schedule, Grid) for build's `grid` argument: the schedule compiled
    for the grid's tensor axis (a schedule left at the launched world's
    size is replayed for it)."""
    if grid_sizes is None:
        return sch, None
    sizes = Grid.parse(grid_sizes, world_size())
    if dp_gradients not in ("mean", "sum"):
        raise ScheduleError(f"dp_gradients is 'mean' or 'sum', got "
                            f"{dp_gradients!r}")
    if target != "cpu":
        raise ScheduleError("device grids run on target='cpu'")
    if sizes.tp == 1 and {"shard", "sync"} & sch.primitives:
        raise ScheduleError(
            f"the schedule shards or syncs values over ranks, but the grid's "
            f"tensor axis has tp=1 (dp={sizes.dp}, pp={sizes.pp}): give the "
            f"tensor axis the schedule's ranks, or leave shard and sync out")
    if sch.world_size != sizes.tp:
        if sch.world_size != world_size():
            raise ScheduleError(
                f"the schedule is for {sch.world_size} ranks but the grid's "
                f"tensor axis has tp={sizes.tp}: create the schedule with "
                f"world_size={sizes.tp}")
        # A schedule at the launched world's size (the default): its
        # primitives, replayed for the tensor axis.
        sch = _Replay(sch, world_size=sizes.tp)
    return sch, sizes


def build(sch, example_inputs=None, target="cpu",
          pipeline="lamina-cpu-pipeline", progress=None, max_seq_len=None,
          grid=None, dp_gradients="mean", precision=None):
    """Compiles the scheduled model for the shapes of `example_inputs`
    (None: at the first call, for its shapes).

    target="cpu": the JIT-compiled `pipeline`. target="cuda": an
    ahead-of-time artefact (lamina-compile: tensor-core kernels for sm_90a,
    needs a CUDA toolkit to build and a GPU to run) called on the GPU that
    PyTorch uses; the model's linear layers must be bf16 or f16 (e.g.
    `model.to(torch.bfloat16)`), one GPU, and every layer a fused linear.

    `progress`: compiles that take longer than two seconds report their
    stages on stderr (None); every compile does (True), none does (False).
    Python logging's INFO records of the ``lamina`` logger carry them too
    (runtime/progress.py).

    `max_seq_len`: the longest sequence the model's calls in eval mode
    with autograd off take, for generation with a key/value cache
    (runtime/generation.py); None: the model's own ``max_seq_len`` or
    ``block_size`` (on it or its config), if any; 0: no cache, every call
    runs on the whole sequence.

    `grid`: the MPI world as a device grid, ``{"dp": D, "pp": P, "tp":
    T}`` (a missing axis is 1; D·P·T is the world size; docs/grids.md).
    The schedule's ``shard`` and ``sync`` act on the tensor axis; each of
    the D data replicas is called with its own batch, and its backward
    reduces every parameter's gradient over them as soon as it is final:
    `dp_gradients` "mean" (DistributedDataParallel's gradient of the global
    batch's mean loss) or "sum". None: every rank on the tensor axis.

    `precision`: "bf16" computes the layers' matmuls as
    ``torch.autocast("cpu", dtype=torch.bfloat16)`` does (operands cast to
    bf16, f32 accumulation, results rounded to bf16; the other ops, the
    parameters and their gradients stay f32; on AVX512-BF16 CPUs as
    vdpbf16ps); None (the default) does so for calls made inside such a
    ``torch.autocast`` region; "f32" never (docs/training.md).
    """
    if not isinstance(sch, Schedule):
        raise TypeError("build takes a schedule (lamina.create_schedule)")
    if target not in ("cpu", "cuda"):
        raise ValueError(f"unknown target {target!r}; expected 'cpu' or "
                         "'cuda'")
    if target == "cuda" and sch.world_size != 1:
        raise ValueError("target='cuda' runs single-GPU programs; the "
                         f"schedule is for {sch.world_size} ranks")
    precision_module.check(precision, target)
    sch, sizes = _on_grid(sch, grid, dp_gradients, target)
    if sizes is not None:
        # Every rank builds: the world's split into the grid's axes is
        # collective, so it happens here, not at a later call.
        activate_grid(sizes)
    return CompiledModule(sch, example_inputs, pipeline, target, progress,
                          max_seq_len, sizes, dp_gradients == "mean",
                          precision)


class _Replay:
    """A schedule's transform script over a fresh import of its model (in
    the mode the model is in now), leaving the schedule's own import alone;
    compiled like the schedule itself (for `world_size` ranks: the
    schedule's by default)."""

    def __init__(self, schedule, world_size=None):
        self.model = schedule.model
        self.world_size = world_size or schedule.world_size
        self.primitives = schedule.primitives
        self.script = schedule.transform_script()
        self.imported = None
        self.example_inputs = None
        self._traced_flags = None

    def transform_script(self):
        return self.script

    def trace(self, example_inputs):
        self._traced_flags = {name: m.training
                              for name, m in self.model.named_modules()}
        self.example_inputs = tuple(example_inputs)
        self.imported = import_model(self.model, self.example_inputs,
                                     self.world_size)
        return self.imported

    def traced_in(self, flags):
        return self._traced_flags == flags

    def scheduled_module(self):
        try:
            return _lamina.Module(self.imported.located_text).transform(
                schedule=self.script)
        except ValueError as error:
            raise ScheduleError(str(error)) from None


def verify(sch, example_inputs, rtol=None, atol=None):
    """Runs the scheduled, compiled program and the unscheduled model in
    eager PyTorch on the same full weights and inputs and raises
    AssertionError with the largest mismatch beyond PyTorch's default
    tolerance. Dropout is compared off (eval mode): PyTorch's masks come
    from another generator. A FusedQKV with world_size > 1 runs eagerly as
    its unsharded twin; on several ranks each rank checks its blocks."""
    model = sch.model
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad(), unsharded_fused_qkv(model):
            expected = model(*example_inputs)
        compiled = CompiledModule(_Replay(sch), example_inputs,
                                  "lamina-cpu-pipeline")
        with torch.no_grad():
            actual = compiled(*[torch.as_tensor(x) if _is_array(x) else x
                                for x in example_inputs])
    finally:
        model.train(was_training)
    expected, actual = result_tensors(expected), result_tensors(actual)
    if len(actual) != len(expected):
        raise AssertionError(f"the compiled program returns {len(actual)} "
                             f"results, the model {len(expected)}")
    ranks = compiled.world_size
    me = rank() % ranks
    for index, (got, want, axis) in enumerate(
            zip(actual, expected, compiled.result_shard_axes())):
        if axis is not None:
            want = torch.chunk(want, ranks, dim=axis)[me]
        try:
            torch.testing.assert_close(got, want.to(got.dtype), rtol=rtol,
                                       atol=atol)
        except AssertionError as error:
            raise AssertionError(f"result {index} of the scheduled program "
                                 f"differs from the model: {error}") from None
    return True
