"""Compiling scheduled models and running them: build, verify, seeds and
MPI ranks."""

import pathlib
import re
import subprocess
import tempfile

import numpy as np
import torch

from . import _lamina, aot, tools
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


_TORCH_DTYPES = {"f32": torch.float32, "f16": torch.float16,
                 "bf16": torch.bfloat16, "i64": torch.int64}


def _result_types(ir, entry):
    """(shape, torch dtype) of each result of `entry` in the IR text."""
    match = re.search(r"func\.func @" + re.escape(entry) +
                      r"\(.*?\)\s*->\s*(\(.*?\)|tensor<[^>]*>)", ir, re.S)
    if not match:
        raise ScheduleError(f"cannot find the results of @{entry}")
    results = []
    for dims, element in re.findall(
            r"tensor<((?:\d+x)*)(!lns\.num<[^>]*>|\w+)>", match.group(1)):
        if element.startswith("!lns."):
            element = "i64"  # LNS numbers travel as their int64 codes
        if element not in _TORCH_DTYPES:
            raise ScheduleError(f"target='cuda' returns f32, f16, bf16 or "
                                f"LNS codes; got {element}")
        shape = tuple(int(d) for d in dims.split("x") if d)
        results.append((shape, _TORCH_DTYPES[element]))
    return results


class _CompiledCuda:
    """One ahead-of-time GPU artefact (lamina-compile) for one set of input
    shapes, its weights resident on the GPU."""

    def __init__(self, schedule, example_inputs, workdir):
        if not torch.cuda.is_available():
            raise RuntimeError("target='cuda' needs a CUDA GPU visible to "
                               "PyTorch; none is")
        self.imported = schedule.trace(example_inputs)
        self.scheduled = schedule.scheduled_ir()
        self.results = _result_types(self.scheduled, self.imported.entry)
        workdir = pathlib.Path(tempfile.mkdtemp(prefix="model-", dir=workdir))
        source = workdir / "model.mlir"
        source.write_text(self.scheduled)
        library = workdir / "libmodel.so"
        completed = subprocess.run(
            [tools.tool("lamina-compile"), str(source), "-o", str(library)],
            capture_output=True, text=True)
        if completed.returncode != 0:
            raise ScheduleError(completed.stderr.strip())
        self.artefact = aot.Artefact(library)
        reason = self.artefact.gpu_unavailable()
        if reason is not None:
            raise RuntimeError(f"target='cuda': {reason}")
        self.params = [t.detach().to("cuda").contiguous()
                       for _, t in self.imported.parameters]
        self.pipeline = "lamina-gpu-pipeline"

    def run(self, inputs):
        args = [x.to("cuda").contiguous() for x in inputs] + self.params
        if self.imported.has_seed:
            args.append(_seed)
        outputs = [torch.empty(shape, dtype=dtype, device="cuda")
                   for shape, dtype in self.results]
        self.artefact.call(self.imported.entry, *args, *outputs)
        return outputs


def _to_numpy(x):
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().contiguous().numpy()
    return np.ascontiguousarray(x)


class CompiledModule:
    """A scheduled model compiled for the host CPU or a GPU. Call it with
    torch tensors or NumPy arrays (the same kind comes back; a tuple for
    several results; on target='cuda', torch tensors on the GPU). A new
    input shape compiles again (cached). In a multi-rank program every rank
    passes the whole inputs and weights and keeps its blocks; a result
    sharded over ranks comes back as this rank's block."""

    def __init__(self, schedule, example_inputs, pipeline, target="cpu"):
        self.schedule = schedule
        self.pipeline = pipeline
        self.target = target
        self._cache = {}
        self._workdir = (tempfile.TemporaryDirectory(prefix="lamina-")
                         if target == "cuda" else None)
        self._compile(tuple(example_inputs))

    def _compile(self, inputs):
        key = tuple((tuple(x.shape), str(x.dtype)) for x in inputs)
        if key not in self._cache:
            self._cache[key] = (
                _CompiledCuda(self.schedule, inputs, self._workdir.name)
                if self.target == "cuda" else
                _Compiled(self.schedule, inputs, self.pipeline))
        self._last = self._cache[key]
        return self._last

    def __call__(self, *inputs):
        compiled = self._compile(inputs)
        if self.target == "cuda":
            results = compiled.run([torch.as_tensor(x) for x in inputs])
            if compiled.imported.single_result:
                return results[0]
            return tuple(results)
        as_torch = any(isinstance(x, torch.Tensor) for x in inputs)
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
        if self.target == "cuda":
            return 1
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
        if stage == "lowered" and self.target == "cuda":
            pipeline = "lamina-gpu-pipeline"
        return _lamina.transform_ir(compiled.scheduled, pipeline=pipeline)


def build(sch, example_inputs, target="cpu",
          pipeline="lamina-cpu-pipeline"):
    """Compiles the scheduled model for the shapes of `example_inputs`.

    target="cpu": the JIT-compiled `pipeline`. target="cuda": an
    ahead-of-time artefact (lamina-compile: tensor-core kernels for sm_90a,
    needs a CUDA toolkit to build and a GPU to run) called on the GPU that
    PyTorch uses; the model's linear layers must be bf16 or f16 (e.g.
    `model.to(torch.bfloat16)`), one GPU, and every layer a fused linear.
    """
    if not isinstance(sch, Schedule):
        raise TypeError("build takes a schedule (lamina.create_schedule)")
    if target not in ("cpu", "cuda"):
        raise ValueError(f"unknown target {target!r}; expected 'cpu' or "
                         "'cuda'")
    if target == "cuda" and sch.world_size != 1:
        raise ValueError("target='cuda' runs single-GPU programs; the "
                         f"schedule is for {sch.world_size} ranks")
    return CompiledModule(sch, example_inputs, pipeline, target)


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
