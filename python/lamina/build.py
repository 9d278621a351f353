"""Compiling scheduled models and running them: build, verify, seeds and
MPI ranks."""

import numpy as np
import torch

from . import _lamina
from .importer import _TwinQKV
from .schedule import Schedule, ScheduleError

_seed = 0


def manual_seed(seed):
    """Seeds the dropout masks of every compiled program called from now on
    (masks depend on the seed, the dropout op and the element index only,
    so every rank of a multi-rank run must use the same seed; default 0)."""
    global _seed
    _seed = int(seed)


def rank():
    """This process's rank in the MPI world (0 outside mpirun)."""
    return _lamina.rank()


def world_size():
    """The number of processes in the MPI world (1 outside mpirun). Lamina
    uses MPICH: launch with `mpirun.mpich -np N /usr/bin/python3 ...`."""
    return _lamina.world_size()


_STAGES = ("imported", "scheduled", "partitioned", "lowered")


class _Compiled:
    """One compiled program for one set of input shapes."""

    def __init__(self, schedule, example_inputs, pipeline):
        self.imported = schedule.trace(example_inputs)
        self.scheduled = schedule.scheduled_ir()
        try:
            self.program = _lamina.Program(self.scheduled,
                                           entry=self.imported.entry,
                                           pipeline=pipeline)
        except ValueError as error:
            raise ScheduleError(str(error)) from None
        self.pipeline = pipeline

    def arguments(self, inputs):
        params = [t.detach().cpu().numpy() for _, t in self.imported.parameters]
        args = list(inputs) + params
        if self.imported.has_seed:
            args.append(np.array(_seed, dtype=np.int64))
        return args


def _to_numpy(x):
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().contiguous().numpy()
    return np.ascontiguousarray(x)


class CompiledModule:
    """A scheduled model compiled for the host CPU. Call it with torch
    tensors or NumPy arrays (the same kind comes back; a tuple for several
    results). A new input shape compiles again (cached). In a multi-rank
    program every rank passes the whole inputs and weights and keeps its
    blocks; a result sharded over ranks comes back as this rank's block."""

    def __init__(self, schedule, example_inputs, pipeline):
        self.schedule = schedule
        self.pipeline = pipeline
        self._cache = {}
        self._compile(tuple(example_inputs))

    def _compile(self, inputs):
        key = tuple((tuple(x.shape), str(x.dtype)) for x in inputs)
        if key not in self._cache:
            self._cache[key] = _Compiled(self.schedule, inputs, self.pipeline)
        self._last = self._cache[key]
        return self._last

    def __call__(self, *inputs):
        as_torch = any(isinstance(x, torch.Tensor) for x in inputs)
        compiled = self._compile(inputs)
        arrays = compiled.arguments([_to_numpy(x) for x in inputs])
        program = compiled.program
        results = program.run(program.prepare(arrays))
        if as_torch:
            results = [torch.from_numpy(r) for r in results]
        if compiled.imported.single_result:
            return results[0]
        return tuple(results)

    @property
    def world_size(self):
        """The ranks the program runs on (1: a single process)."""
        return self._last.program.world_size

    def result_shard_axes(self):
        """Per result: the axis it is sharded on over ranks, or None."""
        return [axis for _, _, axis in self._last.program.results]

    def ir(self, stage="scheduled"):
        """The IR at `stage`: imported, scheduled, partitioned (one rank's
        program with its collectives) or lowered (LLVM dialect)."""
        if stage not in _STAGES:
            raise ValueError(f"unknown stage {stage!r}; expected one of "
                             f"{', '.join(_STAGES)}")
        compiled = self._last
        if stage == "imported":
            return compiled.imported.text
        if stage == "scheduled":
            return compiled.scheduled
        pipeline = ("lamina-decompose,lamina-partition" if stage ==
                    "partitioned" else compiled.pipeline)
        return _lamina.transform_ir(compiled.scheduled, pipeline=pipeline)


def build(sch, example_inputs, target="cpu",
          pipeline="lamina-cpu-pipeline"):
    """Compiles the scheduled model for the shapes of `example_inputs`."""
    if not isinstance(sch, Schedule):
        raise TypeError("build takes a schedule (lamina.create_schedule)")
    if target != "cpu":
        raise ValueError(f"target {target!r} is not available in this build; "
                         "Lamina compiles for 'cpu'")
    return CompiledModule(sch, example_inputs, pipeline)


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
        with torch.no_grad(), _TwinQKV(model):
            expected = model(*example_inputs)
        eval_schedule = Schedule(model, sch.world_size)
        eval_schedule._ops = list(sch._ops)
        compiled = build(eval_schedule, example_inputs)
        actual = compiled(*[torch.as_tensor(x) for x in example_inputs])
    finally:
        model.train(was_training)
    expected = [expected] if isinstance(expected, torch.Tensor) else \
        list(expected)
    actual = [actual] if isinstance(actual, torch.Tensor) else list(actual)
    if len(actual) != len(expected):
        raise AssertionError(f"the compiled program returns {len(actual)} "
                             f"results, the model {len(expected)}")
    ranks = compiled.world_size
    me = rank() if ranks > 1 else 0
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
