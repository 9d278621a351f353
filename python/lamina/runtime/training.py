"""Training through compiled programs: the model's parameters on the
compiled module, prepared arguments reused while nothing changed, and a
torch.autograd.Function over the forward / backward pair that
``lamina-generate-backward`` adds to the scheduled program.

One traced program (one set of input shapes and one mode) is a
:class:`ProgramCall`. With autograd off, or nothing requiring a gradient, it
runs the scheduled program. Otherwise its results come from
:class:`LaminaProgram`:

- train mode: ``@f_forward`` runs and its saved values stay on the autograd
  graph until ``@f_backward`` consumes them with the cotangents;
- eval mode: the scheduled (inference) program runs, and a backward, if one
  is asked for, first recomputes the saved values with ``@f_forward``;
- a program that cannot be differentiated (pipeline stages, a GPU artefact,
  a program the pass rejects) runs as scheduled and its backward raises
  :class:`ScheduleError` with the reason.

docs/training.md describes the contract.
"""

import os

import numpy as np
import torch
from torch import nn

from .. import _lamina
from ..errors import ScheduleError, UnsupportedOperationError
from . import formats, grid, progress
from .optim import OWNER
from .face import Face


def prepare(program, arrays):
    """Checks `arrays` against `program`'s signature and packs its weights:
    the work :class:`CachedProgram` does not repeat while its arguments are
    unchanged."""
    return program.prepare(arrays)


def _argument_key(argument):
    """What identifies an argument's contents without reading them: a
    tensor's storage, view and version counter (bumped by every in-place
    op, optimizer steps included), a seed's value; None for a NumPy array,
    which has no version counter, or a tensor made in inference mode
    (torch.inference_mode), which has none either."""
    if isinstance(argument, torch.Tensor) and not argument.is_inference():
        return (argument.data_ptr(), argument._version,
                tuple(argument.shape), argument.stride(), argument.dtype,
                argument.device)
    if isinstance(argument, int):
        return argument
    return None


def _array(argument, kind=None):
    """`argument` as the NumPy array a program takes; `kind` is the
    argument's element kind (a parameter held as float64 codes, formats.py,
    goes to an i64 argument as int64)."""
    if isinstance(argument, torch.Tensor):
        tensor = argument.detach().cpu().contiguous()
        if tensor.dtype == torch.bfloat16:
            # bf16 crosses as its 16 raw bits (NumPy has no bf16).
            return tensor.view(torch.int16).numpy().view(np.uint16)
        array = tensor.numpy()
        if kind == "i64" and array.dtype == np.float64:
            return array.astype(np.int64)
        return array
    if isinstance(argument, int):
        return np.array(argument, dtype=np.int64)
    # (np.ascontiguousarray would make a 0-d array 1-d.)
    return np.asarray(argument, order="C")


class CachedProgram:
    """A compiled program and the prepared arguments of its last call. An
    argument that is the same tensor as before (storage, view and version
    counter) is neither copied nor packed again: a call with new inputs
    replaces only them (``Program.update``), and the weights are packed
    again only when a packed one changed (in-place ``optimizer.step()``
    included, through the version counter)."""

    def __init__(self, program):
        """`program`: a compiled program, or a function that compiles it
        when the first call needs it."""
        self._program = program
        self._kinds = None
        self._keys = None
        self._held = []
        self._prepared = None

    @property
    def program(self):
        if callable(self._program):
            self._program = self._program()
        return self._program

    def run(self, arguments):
        """The results (NumPy arrays) on `arguments`: torch tensors, NumPy
        arrays and int seeds."""
        return self.program.run(self._prepare(arguments))

    def run_stage(self, arguments):
        """This rank's stages of a pipelined program alone on `arguments`:
        the results it computed or received, None for the others
        (runtime/microbatches.py)."""
        return self.program.run_stage(self._prepare(arguments))

    def _prepare(self, arguments):
        """The prepared arguments for `arguments`, reusing the last call's
        where they are the same tensors."""
        if self._kinds is None:
            self._kinds = [kind for kind, _ in self.program.inputs]
        keys = [_argument_key(a) for a in arguments]
        arrays = lambda: [_array(a, kind) for a, kind in  # noqa: E731
                          zip(arguments, self._kinds)]
        if self._keys is None:
            self._prepared = prepare(self.program, arrays())
        else:
            # A NumPy array (no version counter) counts as changed; the
            # prepared arguments are updated in place all the same, so
            # that packed weights reuse their memory.
            changed = {i: _array(a, self._kinds[i]) for i, (a, key, old) in
                       enumerate(zip(arguments, keys, self._keys))
                       if key is None or key != old}
            if changed:
                try:
                    self.program.update(self._prepared, changed)
                except ValueError:
                    # An argument the program cannot take in place: all
                    # are prepared again.
                    self._prepared = prepare(self.program, arrays())
        self._keys = keys
        # Held so that no other tensor takes their storage's address.
        self._held = [a.detach() for a in arguments
                      if isinstance(a, torch.Tensor)]
        return self._prepared


def as_tensor(array):
    """A program's result as a tensor: bf16, which crosses as its raw bits
    in a uint16 array, becomes a bf16 tensor again."""
    if array.dtype == np.uint16:
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)


# -- parameters --------------------------------------------------------------


def register_parameters(module, model):
    """Registers every one of `model.named_parameters()` on `module` under
    the same dotted name (a tied parameter once, under its first name):
    `module.named_parameters()` then yields the model's names and its very
    Parameter objects. The entries go into `_modules` / `_parameters`
    directly, as register_parameter would, because a top-level name of the
    model may equal an attribute of `module` (`ir`, `schedule`)."""
    for name, parameter in model.named_parameters():
        set_parameter(module, name, parameter, model)
    formats.copy_registration(module, model)


def set_parameter(module, name, parameter, model=None):
    """`parameter` under the dotted `name` of `module`, through submodules
    created where missing (`Parameters`, facing `model`'s module at their
    path)."""
    *path, leaf = name.split(".")
    owner = module
    for depth, part in enumerate(path):
        child = owner._modules.get(part)
        if child is None:
            child = Parameters(model.get_submodule(".".join(path[:depth + 1]))
                               if model is not None else None)
            owner._modules[part] = child
        owner = child
    owner._parameters[leaf] = parameter


class Parameters(Face, *formats.MODULE_BASES):
    """A module of the compiled model's tree: the parameters under one path
    of the scheduled model, facing the model's module at that path (face.py:
    what the node does not hold is the model module's, and calling the node
    runs that module). A parameter held in another number format reads as
    that format's tensor (formats.MODULE_BASES: an LNS layer's as an
    LNSTensor, `compiled.fc.weight`); printed with its parameters' types."""

    def __init__(self, original=None):
        super().__init__()
        self.__dict__["_lamina_original"] = original

    def _face_original(self):
        return self.__dict__.get("_lamina_original")

    def forward(self, *args, **kwargs):
        original = self._face_original()
        if original is None:
            raise ScheduleError("this part of the compiled model holds "
                                "parameters only; call the compiled model")
        return original(*args, **kwargs)

    def extra_repr(self):
        return ", ".join(f"{name}: {_layout(p.dtype, p.shape)}"
                         for name, p in self._parameters.items()
                         if p is not None)


def register_parameter_blocks(module, model, imported, scheduled):
    """On several ranks: registers, in place of each of `model`'s Parameters
    that the `scheduled` module shards on an axis, a Parameter holding this
    rank's contiguous block along that axis (the block the program computes
    with; for a head-sharded QKV weight, this rank's heads). A name that
    already holds a block (an earlier compile) keeps it: compiling again for
    another shape keeps the Parameter objects."""
    shards = scheduled.argument_shards(imported.entry)[imported.num_inputs:]
    names = {id(p): n for n, p in model.named_parameters()}
    own = dict(module.named_parameters())
    # (The tensor axis varies fastest on a device grid.)
    ranks = scheduled.world_size
    rank = _lamina.rank() % ranks
    for (_, tensor), (axis, parts) in zip(imported.parameters, shards):
        key = formats.registered_name(names.get(id(tensor)), own)
        current = own.get(key)
        if axis is None or current is None or current.shape != tensor.shape:
            continue  # not sharded, or already this rank's block
        block = parameter_block(current, axis, rank, ranks, parts)
        # (How a whole tensor loads into it: state.py.)
        block._lamina_block = (axis, rank, ranks, parts)
        set_parameter(module, key, block)
        own[key] = block


def parameter_block(tensor, axis, rank, ranks, groups=1):
    """A Parameter holding rank `rank`'s contiguous block of `tensor` along
    `axis` (of `ranks` equal blocks), with the user's tags on `tensor`;
    with `groups`, its block of each of that many equal parts of the axis,
    concatenated (a rank's heads of Q, K and V)."""
    parts = tensor.detach().chunk(groups, dim=axis)
    size = parts[0].shape[axis] // ranks
    block = nn.Parameter(
        torch.cat([part.narrow(axis, rank * size, size) for part in parts],
                  dim=axis).clone(),
        requires_grad=tensor.requires_grad)
    block.__dict__.update(tensor.__dict__)
    return block


def check_gradient_layouts(scheduled, constants=()):
    """Raises ScheduleError if the backward of the sharded `scheduled`
    program would leave a gradient wrong on some rank (a partial gradient
    without its bwd_post all-reduce), naming the layer and the missing
    sync: lamina-check-gradient-layouts. The arguments numbered in
    `constants` get no gradient (inputs that do not require one)."""
    options = f"{{constants={','.join(map(str, constants))}}}" \
        if constants else ""
    try:
        scheduled.transform(
            pipeline=f"lamina-check-gradient-layouts{options}")
    except ValueError as error:
        raise ScheduleError(
            "the schedule's backward pass is wrong on some rank: "
            f"{str(error).strip()} (a model built for inference only, "
            "under torch.no_grad() or with no parameter requiring a "
            "gradient, is not checked)") from None


def parameter_arguments(module, model, imported):
    """A function giving the tensor each parameter argument of `imported`
    takes now: the Parameter registered on `module` under the model's name
    of the traced tensor (in its number format, formats.py), or the
    traced tensor itself when the model has no such parameter (a buffer).
    Looked up at every call: a Parameter replaced on the compiled module
    (``compiled.fc.weight = nn.Parameter(...)``) is the one used."""
    names = {id(p): n for n, p in model.named_parameters()}
    arguments = [(names.get(id(tensor)), tensor)
                 for _, tensor in imported.parameters]

    def current():
        own = dict(module.named_parameters())
        return [own.get(formats.registered_name(name, own), tensor)
                if name is not None else tensor
                for name, tensor in arguments]
    return current


# -- the forward / backward pair ----------------------------------------------


def generate_backward(scheduled, entry, constants=()):
    """The `scheduled` module with `@f_forward` and `@f_backward` added
    (lamina-generate-backward, its repeated blocks outlined first as the
    compiled pair's are), a new module; `constants`: the argument indices
    that get no gradient."""
    options = f"function={entry}"
    if constants:
        options += f" constants={','.join(map(str, constants))}"
    outline = ""
    if _outline_blocks():
        outline = "lamina-outline-blocks,"
    try:
        with progress.stage("differentiating (lamina-generate-backward)"):
            return scheduled.transform(
                pipeline=f"{outline}lamina-generate-backward{{{options}}}")
    except ValueError as error:
        raise ScheduleError(f"the program cannot be differentiated: "
                            f"{str(error).strip()}") from None


def _outline_blocks():
    """Whether each distinct block is differentiated once (the default);
    LAMINA_OUTLINE_BLOCKS=0 differentiates every layer inline, for
    comparison."""
    return os.environ.get("LAMINA_OUTLINE_BLOCKS", "1") != "0"


class TrainingPair:
    """`@f_forward` and `@f_backward` of the scheduled program, compiled
    (``_lamina.TrainingPair``: differentiated, reduced over the replicas
    and compiled in C++, as ``lamina-run --backward`` does); `constants`:
    the argument indices that get no gradient (tensors that do not require
    one), for which the backward computes nothing. `replicas`: None, or
    (number of inputs, mean, owners) on a grid with a data axis, whose
    backward reduces the parameters' gradients over it (to every replica,
    or per parameter argument to its owner)."""

    def __init__(self, scheduled, entry, pipeline, constants=(),
                 replicas=None):
        if scheduled.world_size > 1:
            check_gradient_layouts(scheduled, constants)
        reduction = None
        if replicas is not None:
            num_inputs, mean, owners = replicas
            reduction = (num_inputs, list(owners), mean, grid.overlaps())
        try:
            with progress.steps() as begin:
                pair = _lamina.TrainingPair(
                    scheduled, entry, pipeline=pipeline,
                    constants=list(constants), replicas=reduction,
                    on_step=begin, outline_blocks=_outline_blocks())
        except ValueError as error:
            raise ScheduleError(str(error).strip()) from None
        self.module = pair.module
        self.saved = pair.saved
        self.gradients = pair.gradients
        self.forward = CachedProgram(progress.compiled(pair.forward))
        self.backward = CachedProgram(progress.compiled(pair.backward))


# -- calls ------------------------------------------------------------------


class LaminaProgram(torch.autograd.Function):
    """Results of a compiled program on the autograd graph; `strategy`
    computes them and their backward."""

    @staticmethod
    def forward(ctx, strategy, *tensors):
        ctx.strategy = strategy
        outputs = strategy.forward(ctx, tensors)
        ctx.mark_non_differentiable(
            *[o for o in outputs if not o.is_floating_point()])
        return tuple(outputs)

    @staticmethod
    def backward(ctx, *cotangents):
        gradients = ctx.strategy.backward(ctx, cotangents)
        if torch.is_grad_enabled():
            # create_graph=True: the gradients join the graph, and a
            # derivative of them raises instead of reading as zero.
            gradients = [None if g is None else FirstOrderOnly.apply(
                g.detach().requires_grad_()) for g in gradients]
        return (None, *gradients)


class FirstOrderOnly(torch.autograd.Function):
    """A gradient of a compiled program, as it is; differentiating it
    raises: Lamina computes first derivatives only."""

    @staticmethod
    def forward(ctx, gradient):
        return gradient.view_as(gradient)

    @staticmethod
    def backward(ctx, cotangent):
        raise UnsupportedOperationError(
            "Lamina differentiates a compiled model once: the derivative of "
            "its gradients (a double backward through create_graph=True) is "
            "not computed")


def _unique(tensors):
    """The distinct tensors of `tensors` (by identity) and, per entry, the
    index of its tensor among them."""
    distinct, index = [], []
    for tensor in tensors:
        for i, seen in enumerate(distinct):
            if seen is tensor:
                index.append(i)
                break
        else:
            index.append(len(distinct))
            distinct.append(tensor)
    return distinct, index


class ProgramCall:
    """Calls of one traced program from torch: its arguments (inputs, the
    parameters, the dropout seed) and how its results carry autograd.

    `parameters_now()` gives the tensor of every parameter argument."""

    def __init__(self, plain, imported, scheduled, pipeline, parameters_now,
                 device_grid=None, replica_mean=True):
        self.plain = plain
        # The grid the program runs on (None: every rank on the tensor
        # axis), and how its data axis reduces gradients.
        self.grid = device_grid
        self.replica_mean = replica_mean
        self.imported = imported
        self.scheduled = scheduled
        self.pipeline = pipeline
        self._parameters_now = parameters_now
        self.parameters = parameters_now()
        self.distinct, self._index = _unique(self.parameters)
        self._pairs = {}
        self._layouts = [(t.dtype, tuple(t.shape)) for t in self.parameters]

    def _refresh(self):
        """The parameter arguments as they are now (a replaced Parameter
        is the new one)."""
        parameters = self._parameters_now()
        if any(a is not b for a, b in zip(parameters, self.parameters)):
            self.parameters = parameters
            self.distinct, self._index = _unique(parameters)

    def check_parameters(self):
        """Raises ScheduleError if a parameter's dtype or shape is no longer
        the one the program was compiled for (`p.data = ...` replaced it)."""
        self._refresh()
        for (name, _), tensor, (dtype, shape) in zip(
                self.imported.parameters, self.parameters, self._layouts):
            if tensor.dtype != dtype or tuple(tensor.shape) != shape:
                now = _layout(tensor.dtype, tensor.shape)
                raise ScheduleError(
                    f"parameter '{name}' is now {now}, compiled as "
                    f"{_layout(dtype, shape)}: build the model again to "
                    f"compile it for the new one")

    def constants(self, inputs):
        """The argument indices of `inputs` and the parameters that do not
        require a gradient: the backward leaves them out."""
        tensors = list(inputs) + list(self.parameters)
        return tuple(i for i, t in enumerate(tensors)
                     if not (isinstance(t, torch.Tensor) and t.requires_grad))

    def _reduced_here(self, parameter):
        """Whether `parameter`'s reduced gradient arrives on this replica
        (everywhere, unless a ZeRO stage-2 optimizer owns it elsewhere)."""
        owner = getattr(parameter, OWNER, -1)
        return owner < 0 or self.grid is None or \
            owner == self.grid.rank("dp")

    def _replica_owners(self):
        """Per parameter argument, the data replica its gradient is reduced
        to (a ZeRO stage-2 optimizer's owner), or -1 for every replica."""
        return tuple(getattr(p, OWNER, -1) for p in self.parameters)

    def pair(self, constants=()):
        """The compiled forward / backward pair for the arguments held
        `constants` (compiled on first use, at most once per set and set of
        gradient owners; a program the pass rejects raises the same
        ScheduleError each time)."""
        data_parallel = self.grid is not None and self.grid.dp > 1
        owners = self._replica_owners() if data_parallel else ()
        key = (constants, owners)
        if key not in self._pairs:
            try:
                replicas = ((self.imported.num_inputs, self.replica_mean,
                             owners) if data_parallel else None)
                self._pairs[key] = TrainingPair(
                    self.scheduled, self.imported.entry, self.pipeline,
                    constants, replicas)
            except ScheduleError as error:
                self._pairs[key] = str(error)
        pair = self._pairs[key]
        if isinstance(pair, str):
            raise ScheduleError(pair)
        return pair

    def arguments(self, inputs, parameters, seed):
        seed = [seed] if self.imported.has_seed else []
        return list(inputs) + list(parameters) + seed

    def run(self, inputs, seed):
        """The scheduled program's results (NumPy) on `inputs` (NumPy arrays
        or tensors), no autograd."""
        self.check_parameters()
        return self._run(inputs, seed)

    def _run(self, inputs, seed):
        """run() once the parameters were checked."""
        grid.activate(self.grid)
        return self.plain.run(self.arguments(inputs, self.parameters, seed))

    def __call__(self, inputs, seed, keep):
        """The results as tensors on torch `inputs`; on the autograd graph
        when autograd is on and an input or parameter requires a gradient.
        `keep`: train mode, where the forward keeps the backward's saved
        values; else they are recomputed if a backward is asked for."""
        self.check_parameters()
        grid.activate(self.grid)
        tensors = list(inputs) + self.distinct
        if not (torch.is_grad_enabled() and
                any(t.requires_grad for t in tensors)):
            return self._plain_outputs(inputs, seed)
        constants = self.constants(inputs)
        if keep:
            try:
                self.pair(constants)
                strategy = _Saving(self, len(inputs), seed, constants)
            except ScheduleError as error:
                strategy = Rejecting(
                    lambda: self._plain_outputs(inputs, seed), str(error))
        else:
            strategy = _Recomputing(self, len(inputs), seed, constants)
        return list(LaminaProgram.apply(strategy, *tensors))

    def _plain_outputs(self, inputs, seed):
        """Plain tensors of run()'s results (a call checked the parameters
        already)."""
        return [as_tensor(r) for r in self._run(inputs, seed)]

    def backward(self, ctx, saved, cotangents):
        """The gradients of the distinct tensors the Function took."""
        grid.activate(self.grid)
        pair = self.pair(ctx.constants)
        tensors = ctx.saved_tensors
        inputs = tensors[:ctx.num_inputs]
        arguments = self.arguments(inputs, [tensors[ctx.num_inputs + i]
                                            for i in self._index], ctx.seed)
        if saved is None:
            saved = pair.forward.run(arguments)[self.imported.num_results:]
        cotangents = [g.to(dtype) for g, dtype in
                      zip(cotangents, ctx.output_dtypes)]
        results = pair.backward.run(arguments + list(saved) + cotangents)
        gradients = [None] * len(tensors)
        for argument, gradient in zip(pair.gradients, results):
            if argument < ctx.num_inputs:
                slot = argument
            elif argument < ctx.num_inputs + len(self._index):
                slot = ctx.num_inputs + self._index[argument -
                                                    ctx.num_inputs]
            else:
                continue
            if not ctx.needs_input_grad[1 + slot]:
                continue
            if slot >= ctx.num_inputs and not self._reduced_here(
                    self.distinct[slot - ctx.num_inputs]):
                continue  # ZeRO stage 2: reduced to its owner only
            if slot >= ctx.num_inputs:
                # In the parameter's number format (LNS codes add in LNS);
                # None: accumulated already.
                parameter = self.distinct[slot - ctx.num_inputs]
                gradient = formats.of(parameter).accumulate(parameter,
                                                            gradient)
                if gradient is None:
                    continue
            gradient = as_tensor(gradient).to(tensors[slot].dtype)
            gradients[slot] = gradient if gradients[slot] is None else \
                gradients[slot] + gradient
        return gradients


def _layout(dtype, shape):
    """float32 [4096, 1024]"""
    return f"{str(dtype).removeprefix('torch.')} {list(shape)}"


class _Strategy:
    """How a call's forward runs and what its backward starts from.
    `constants`: the arguments that get no gradient (the pair's)."""

    def __init__(self, call, num_inputs, seed, constants):
        self.call, self.num_inputs, self.seed = call, num_inputs, seed
        self.constants = constants


class _Saving(_Strategy):
    """Train mode: `@f_forward` runs; its saved values wait on the graph."""

    def forward(self, ctx, tensors):
        call = self.call
        inputs = tensors[:self.num_inputs]
        results = call.pair(self.constants).forward.run(
            call.arguments(inputs, call.parameters, self.seed))
        count = call.imported.num_results
        _remember(ctx, tensors, self.num_inputs, self.seed, self.constants)
        ctx.saved_values = results[count:]
        outputs = [as_tensor(r) for r in results[:count]]
        ctx.output_dtypes = [o.dtype for o in outputs]
        return outputs

    def backward(self, ctx, cotangents):
        return self.call.backward(ctx, ctx.saved_values, cotangents)


class _Recomputing(_Strategy):
    """Eval mode: the scheduled program runs; a backward recomputes the
    saved values with `@f_forward` first."""

    def forward(self, ctx, tensors):
        _remember(ctx, tensors, self.num_inputs, self.seed, self.constants)
        outputs = self.call._plain_outputs(tensors[:self.num_inputs],
                                           self.seed)
        ctx.output_dtypes = [o.dtype for o in outputs]
        return outputs

    def backward(self, ctx, cotangents):
        return self.call.backward(ctx, None, cotangents)


def _remember(ctx, tensors, num_inputs, seed, constants):
    """What a backward needs of the call: its tensors (autograd checks that
    none was changed in place since), how many are inputs, the seed, the
    arguments its pair gives no gradient."""
    ctx.save_for_backward(*tensors)
    ctx.num_inputs = num_inputs
    ctx.seed = seed
    ctx.constants = constants


class Rejecting:
    """Results of a program that cannot be differentiated: `run()` computes
    them, and a backward through them raises ScheduleError(reason) instead
    of leaving gradients out."""

    def __init__(self, run, reason):
        self.run, self.reason = run, reason

    def forward(self, ctx, tensors):
        return self.run()

    def backward(self, ctx, cotangents):
        raise ScheduleError(self.reason)


def rejecting(run, tensors, reason):
    """`run()`'s results on the autograd graph when autograd is on and one
    of `tensors` requires a gradient (a backward raises ScheduleError with
    `reason`); else `run()`'s results as they are."""
    tensors = [t for t in tensors if isinstance(t, torch.Tensor)]
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return list(LaminaProgram.apply(Rejecting(run, reason), *tensors))
    return run()
