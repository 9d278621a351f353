"""A training batch as micro-batches through a pipeline's stages in the
1F1B order (docs/grids.md).

Each rank of the pipeline axis runs its own stage of the compiled forward
and backward (``Program.run_stage``), micro-batch by micro-batch: P − p − 1
forwards to fill the pipeline (stage p of P), then one forward and one
backward in turn, then the backwards left. A stage keeps the saved values
of at most P − p micro-batches at once. Values cross between stages point
to point; sends complete while the sender goes on, so that neighbouring
stages working on different micro-batches never wait on each other. The
last stage computes each micro-batch's loss with the user's `loss_fn` in
PyTorch and starts its backward; gradients add up over the micro-batches
(each loss divided by their number: the gradient of the batch's mean
loss); each stage's parameter gradients then go to the pipeline's other
ranks, so that every rank holds every gradient, as after a backward of the
whole pipeline, and a torch optimizer steps the same on every rank.
"""

import time

import numpy as np
import torch

from .. import _lamina
from ..errors import ScheduleError
from . import grid as grids
from .rng import next_dropout_key
from .training import as_tensor

_DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16,
           "bf16": np.uint16, "i64": np.int64, "i32": np.int32}


def one_f_one_b(stage, stages, microbatches):
    """The ("F" | "B", micro-batch) steps stage `stage` of `stages` runs."""
    warmup = min(stages - stage - 1, microbatches)
    order = [("F", m) for m in range(warmup)]
    for index in range(microbatches - warmup):
        order += [("F", warmup + index), ("B", index)]
    order += [("B", m) for m in range(microbatches - warmup, microbatches)]
    return order


def _zeros(spec):
    kind, shape = spec[0], spec[1]
    return np.zeros(shape, dtype=_DTYPES[kind])


def _nbytes(results):
    return sum(r.nbytes for r in results if r is not None)


class Report:
    """What a 1F1B batch did on this rank: the losses (last stage), the
    largest number of micro-batches whose saved values it held at once and
    the bytes of those values at that point, the seconds of the 1F1B
    schedule itself and of the gradients' exchange between stages after
    it."""

    def __init__(self):
        self.losses = {}
        self.peak_in_flight = 0
        self.peak_saved_bytes = 0
        self.schedule_seconds = 0.0
        self.exchange_seconds = 0.0


def train_batch(call, microbatches, loss_fn, grid):
    """Runs `microbatches` ([(inputs, labels)]) of the program `call`
    (a training.ProgramCall) in the 1F1B order on `grid`'s pipeline axis,
    adding each parameter's gradient to its `.grad`; returns (mean loss over
    the micro-batches, Report). The loss is every rank's."""
    grids.activate(grid)
    call.check_parameters()
    count = len(microbatches)
    if count == 0:
        raise ScheduleError("train_batch needs at least one micro-batch")
    inputs = [tuple(torch.as_tensor(x) for x in m[0]) for m in microbatches]
    constants = call.constants(inputs[0])
    pair = call.pair(constants)
    forward, backward = pair.forward, pair.backward
    stage, stages = grid.rank("pp"), grid.pp
    num_results = call.imported.num_results
    seeds = [next_dropout_key() if call.imported.has_seed else None
             for _ in range(count)]
    # The backward takes the call's arguments, then the saved values, then
    # one cotangent per result.
    backward_inputs = backward.program.inputs
    report = Report()
    saved, gradients = {}, {}
    start = time.perf_counter()
    for kind, m in one_f_one_b(stage, stages, count):
        arguments = call.arguments(inputs[m], call.parameters, seeds[m])
        if kind == "F":
            saved[m] = forward.run_stage(arguments)
            report.peak_in_flight = max(report.peak_in_flight, len(saved))
            report.peak_saved_bytes = max(
                report.peak_saved_bytes,
                sum(_nbytes(r[num_results:]) for r in saved.values()))
            continue
        results = saved.pop(m)
        outputs, values = results[:num_results], results[num_results:]
        specs = backward_inputs[len(arguments):]
        if all(o is not None for o in outputs):
            cotangents = _loss_cotangents(call, outputs, microbatches[m][1],
                                          loss_fn, count, report, m)
        elif any(o is not None for o in outputs):
            raise ScheduleError("train_batch needs every result of the model "
                                "on its last pipeline stage")
        else:  # not the last stage: its backward starts from a later one's
            cotangents = [_zeros(spec) for spec in specs[len(values):]]
        values = [v if v is not None else _zeros(spec)
                  for v, spec in zip(values, specs)]
        grads = backward.run_stage(arguments + values + cotangents)
        for index, gradient in enumerate(grads):
            if gradient is None:
                continue
            if index in gradients:  # summed in place as they come
                np.add(gradients[index], gradient, out=gradients[index])
            else:
                gradients[index] = gradient
    _lamina.complete_deferred_sends()
    report.schedule_seconds = time.perf_counter() - start
    _add_gradients(call, pair, backward, gradients, len(inputs[0]), grid)
    report.exchange_seconds = (time.perf_counter() - start -
                               report.schedule_seconds)
    return _mean_loss(report, count, grid), report


def _loss_cotangents(call, outputs, labels, loss_fn, count, report, m):
    """The last stage's part: the micro-batch's loss and the cotangents of
    the model's results (of loss / count)."""
    tensors = [as_tensor(o).clone().requires_grad_()
               if np.issubdtype(o.dtype, np.floating) else as_tensor(o)
               for o in outputs]
    results = call.imported.restructure(list(tensors))
    loss = loss_fn(results, labels)
    (loss / count).backward()
    report.losses[m] = float(loss.detach())
    return [t.grad.numpy() if t.grad is not None else
            np.zeros(t.shape, dtype=np.asarray(o).dtype)
            for t, o in zip(tensors, outputs)]


def _mean_loss(report, count, grid):
    """The mean of the micro-batches' losses, from the last stage to every
    rank of the pipeline, then averaged over the data replicas."""
    mean = np.array([sum(report.losses.values()) / count], dtype=np.float64)
    if grid.pp > 1:
        _lamina.axis_broadcast(mean, grid.pp - 1, "pp")
    return torch.tensor(grids.mean_over_replicas(float(mean[0]), grid))


def _add_gradients(call, pair, backward, gradients, num_inputs, grid):
    """Adds the micro-batches' summed parameter gradients (`gradients`, by
    backward result) to `.grad` on every rank of the pipeline: each from
    the rank of the stage that computed it."""
    stage_of = backward.program.result_stages
    specs = backward.program.results
    for index, argument in enumerate(pair.gradients):
        slot = argument - num_inputs
        if not 0 <= slot < len(call.parameters):
            continue
        total = gradients.get(index)
        if total is None:  # another stage's: this rank's block of it
            kind, shape, axis = specs[index]
            shape = list(shape)
            if axis is not None:
                shape[axis] //= backward.program.world_size
            total = _zeros((kind, shape))
        if grid.pp > 1 and stage_of[index] >= 0:
            _lamina.axis_broadcast(total.reshape(-1).view(np.uint8),
                                   stage_of[index], "pp")
        parameter = call.parameters[slot]
        if not parameter.requires_grad:
            continue
        tensor = as_tensor(total).to(parameter.dtype)
        parameter.grad = tensor if parameter.grad is None else \
            parameter.grad + tensor
