"""Slapo's ``build(sch, target="deepspeed", topology=..., config=...)`` on
Lamina: DeepSpeed's topology and configuration mapped onto a device grid
(docs/grids.md), and an engine with the methods Slapo's examples call —
``engine(x)``, ``engine.backward(loss)``, ``engine.step()``,
``engine.train_batch(data_iter=...)`` — over the compiled model.

Every configuration key is either mapped or refused by name: nothing is
silently ignored.
"""

import logging

import torch
from torch import nn

from ....errors import ScheduleError
from ....runtime.optim import ZeroRedundancyOptimizer, clip_grad_norm_

_LOG = logging.getLogger("lamina")

_OPTIMIZERS = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW,
               "sgd": torch.optim.SGD}

# Keys that say how DeepSpeed reports, with the values Lamina honours.
_REPORTING = {"help", "steps_per_print", "wall_clock_breakdown"}


def grid_of(topology, world_size, tensor_ranks):
    """The grid sizes of DeepSpeed's `topology` (its `get_dim("pipe" /
    "model" / "data")`, or `num_pp` / `num_mp` / `num_dp`), or without one,
    data replicas of the schedule's `tensor_ranks`."""
    if topology is None:
        if world_size % tensor_ranks:
            raise ScheduleError(f"the schedule's {tensor_ranks} tensor ranks "
                                f"do not divide the world of {world_size}")
        return {"dp": world_size // tensor_ranks, "tp": tensor_ranks}
    if hasattr(topology, "get_dim"):
        sizes = {"pp": topology.get_dim("pipe"),
                 "tp": topology.get_dim("model"),
                 "dp": topology.get_dim("data")}
    elif all(hasattr(topology, a) for a in ("num_pp", "num_mp", "num_dp")):
        sizes = {"pp": topology.num_pp, "tp": topology.num_mp,
                 "dp": topology.num_dp}
    else:
        raise ScheduleError(
            "topology takes DeepSpeed's PipeModelDataParallelTopology (or an "
            "object with num_pp, num_mp and num_dp)")
    if sizes["tp"] != tensor_ranks:
        raise ScheduleError(
            f"the topology's model axis has {sizes['tp']} ranks but the "
            f"schedule is for {tensor_ranks}")
    return sizes


class Config:
    """What a DeepSpeed configuration asks of the engine: every key read
    here, the others refused with their names."""

    def __init__(self, config, data_replicas):
        if not isinstance(config, dict):
            raise ScheduleError("config takes DeepSpeed's configuration as a "
                                "dict")
        config = dict(config)
        self.micro_batch = config.pop("train_micro_batch_size_per_gpu", None)
        self.accumulation = config.pop("gradient_accumulation_steps", None)
        batch = config.pop("train_batch_size", None)
        self._batch_sizes(batch, data_replicas)
        self.optimizer = self._optimizer(config.pop("optimizer", None))
        self.zero_stage = self._zero(config.pop("zero_optimization", None))
        config.pop("zero_allow_untested_optimizer", None)
        self.clipping = float(config.pop("gradient_clipping", 0.0))
        self.precision = self._bf16(config.pop("bf16", None))
        if config.pop("fp16", {"enabled": False}).get("enabled"):
            raise ScheduleError(
                "config: fp16 training is not supported by Lamina's "
                "DeepSpeed engine (it needs loss scaling); bf16 is: "
                "'bf16': {'enabled': True}")
        pipeline = dict(config.pop("pipeline", {}))
        if pipeline.pop("sequence_parallel", False):
            raise ScheduleError("config: pipeline.sequence_parallel is not "
                                "supported (sequence parallelism is a "
                                "schedule's shard/sync on the tensor axis)")
        if pipeline:
            raise ScheduleError(f"config: unsupported pipeline keys "
                                f"{sorted(pipeline)}")
        if config.get("wall_clock_breakdown"):
            raise ScheduleError("config: wall_clock_breakdown is not "
                                "supported (LAMINA_TIMING=1 times compiles)")
        self.steps_per_print = int(config.get("steps_per_print", 10))
        unknown = sorted(set(config) - _REPORTING)
        if unknown:
            raise ScheduleError(f"config: unsupported DeepSpeed keys "
                                f"{unknown}")

    def _batch_sizes(self, batch, replicas):
        micro, steps = self.micro_batch, self.accumulation
        if micro is None and batch is not None:
            micro = batch // (replicas * (steps or 1))
        if steps is None:
            steps = batch // (micro * replicas) if batch and micro else 1
        if batch is not None and micro is not None and \
                batch != micro * steps * replicas:
            raise ScheduleError(
                f"config: train_batch_size {batch} is not "
                f"train_micro_batch_size_per_gpu {micro} x "
                f"gradient_accumulation_steps {steps} x {replicas} data "
                f"replicas")
        self.micro_batch, self.accumulation = micro, steps

    @staticmethod
    def _optimizer(entry):
        if entry is None:
            return None
        kind = str(entry.get("type", "")).lower()
        if kind not in _OPTIMIZERS:
            raise ScheduleError(f"config: optimizer type {entry.get('type')!r}"
                                f" is not supported (Adam, AdamW or SGD)")
        unknown = sorted(set(entry) - {"type", "params"})
        if unknown:
            raise ScheduleError(f"config: unsupported optimizer keys "
                                f"{unknown}")
        return _OPTIMIZERS[kind], dict(entry.get("params", {}))

    @staticmethod
    def _bf16(entry):
        """"bf16" when bf16 training is enabled: Lamina's precision="bf16"
        (the matmuls in bf16 with f32 accumulation, f32 master weights and
        gradients); None otherwise."""
        if entry is None:
            return None
        entry = dict(entry)
        enabled = entry.pop("enabled", False)
        if entry:
            raise ScheduleError(f"config: unsupported bf16 keys "
                                f"{sorted(entry)}")
        return "bf16" if enabled else None

    @staticmethod
    def _zero(entry):
        if entry is None:
            return 0
        entry = dict(entry)
        stage = entry.pop("stage", 0)
        if stage not in (0, 1, 2):
            raise ScheduleError(f"config: zero_optimization.stage {stage} is "
                                f"not supported (0, 1 or 2)")
        # What Lamina does anyway: reductions overlapped with the backward,
        # stage 2's gradients reduced to their owners.
        for key in ("overlap_comm", "reduce_scatter", "contiguous_gradients"):
            if entry.pop(key, True) is not True:
                raise ScheduleError(f"config: zero_optimization.{key} must "
                                    f"be true (what Lamina does)")
        if entry:
            raise ScheduleError(f"config: unsupported zero_optimization "
                                f"keys {sorted(entry)}")
        return stage


class ModelParallelUnit:
    """DeepSpeed's `engine.mpu`: this rank's place on the grid."""

    def __init__(self, grid):
        self._grid = grid

    def get_data_parallel_rank(self):
        return self._grid.rank("dp")

    def get_data_parallel_world_size(self):
        return self._grid.dp

    def get_pipe_parallel_rank(self):
        return self._grid.rank("pp")

    def get_pipe_parallel_world_size(self):
        return self._grid.pp

    def get_model_parallel_rank(self):
        return self._grid.rank("tp")

    def get_model_parallel_world_size(self):
        return self._grid.tp

    get_tensor_model_parallel_rank = get_model_parallel_rank
    get_tensor_model_parallel_world_size = get_model_parallel_world_size


class DeepSpeedEngine(nn.Module):
    """The compiled model with DeepSpeed's training methods: `backward`
    scales the loss by 1/gradient_accumulation_steps, `step` clips by the
    global norm and steps the optimizer at each accumulation boundary, and
    `train_batch` runs the accumulation steps' micro-batches of
    `data_iter` through `loss_fn` (a pipeline's stages in the 1F1B order)
    and returns their mean loss (over the data replicas too)."""

    def __init__(self, module, optimizer, config, grid, loss_fn=None):
        super().__init__()
        self.module = module
        self.optimizer = optimizer
        self.config = config
        self.mpu = ModelParallelUnit(grid)
        self.loss_fn = loss_fn
        self.global_steps = 0
        self.micro_steps = 0

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)

    def gradient_accumulation_steps(self):
        return self.config.accumulation

    def train_micro_batch_size_per_gpu(self):
        return self.config.micro_batch

    def is_gradient_accumulation_boundary(self):
        return (self.micro_steps + 1) % self.config.accumulation == 0

    def backward(self, loss):
        """loss.backward() of the loss scaled for accumulation."""
        if self.config.accumulation > 1:
            loss = loss / self.config.accumulation
        loss.backward()
        return loss

    def step(self):
        """At an accumulation boundary: clipping, the optimizer's step,
        gradients cleared."""
        if self.is_gradient_accumulation_boundary():
            if self.config.clipping > 0:
                clip_grad_norm_(self.module.parameters(),
                                self.config.clipping)
            if self.optimizer is not None:
                self.optimizer.step()
                self.optimizer.zero_grad()
            self.global_steps += 1
        self.micro_steps += 1

    def train_batch(self, data_iter=None):
        """One optimizer step over gradient_accumulation_steps micro-batches
        of `data_iter` (each `(inputs, labels)`); the mean loss."""
        if data_iter is None:
            raise ScheduleError("train_batch takes data_iter")
        if self.loss_fn is None:
            raise ScheduleError("train_batch needs build(..., loss_fn=...)")
        splits = []
        for _ in range(self.config.accumulation):
            inputs, labels = next(data_iter)
            if not isinstance(inputs, (list, tuple)):
                inputs = (inputs,)
            splits.append((tuple(inputs), labels))
        # (A pipeline runs them in the 1F1B order.)
        mean = self.module.train_micro_batches(splits, self.loss_fn)
        self.micro_steps += self.config.accumulation - 1
        self.step()
        if self.global_steps % self.config.steps_per_print == 0:
            _LOG.info("steps: %d loss: %.6f", self.global_steps,
                      float(mean))
        return mean


def make_engine(compiled, grid, config, loss_fn):
    """(engine, optimizer) for the built `compiled` module on `grid`."""
    optimizer = None
    if config.optimizer is not None:
        kind, params = config.optimizer
        if config.zero_stage:
            optimizer = ZeroRedundancyOptimizer(
                compiled.parameters(), optimizer_class=kind,
                stage=config.zero_stage, **params)
        else:
            optimizer = kind(compiled.parameters(), **params)
    engine = DeepSpeedEngine(compiled, optimizer, config, grid, loss_fn)
    return engine, optimizer

