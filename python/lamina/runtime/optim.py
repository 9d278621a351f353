"""Optimizers over a device grid (docs/grids.md): ZeRO's sharded optimizer
state across the data replicas, and gradient clipping by the whole model's
norm.

``ZeroRedundancyOptimizer`` has the shape of
``torch.distributed.optim.ZeroRedundancyOptimizer``: each data replica owns
the optimizer state of about 1/D of the parameters (whole parameters,
largest first, each to the replica with the fewest elements so far), steps
only those, and broadcasts them to the other replicas afterwards. Stage 1
keeps the compiled backward's all-reduce of every gradient; stage 2 has it
reduce each gradient to its owner only (``lamina.reduce_replicas ... to
R``), and the other replicas' ``.grad`` of it is None.
"""

import io
import math

import torch

from .. import _lamina
from ..errors import ScheduleError
from . import grid

# Set on a parameter by a stage-2 optimizer: the replica its gradient is
# reduced to (runtime/training.py reads it).
OWNER = "_lamina_replica_owner"


def _data_axis():
    """(replica, replicas) of this process on the grid in use."""
    in_use = grid.in_use()
    if in_use is None:
        return 0, 1
    return in_use.rank("dp"), in_use.dp


def _owners(parameters, replicas):
    """Each parameter's replica: largest first, to the replica holding the
    fewest elements so far (ties to the lowest)."""
    load = [0] * replicas
    owners = {}
    order = sorted(range(len(parameters)),
                   key=lambda i: (-parameters[i].numel(), i))
    for index in order:
        replica = min(range(replicas), key=lambda r: (load[r], r))
        owners[index] = replica
        load[replica] += parameters[index].numel()
    return [owners[i] for i in range(len(parameters))]


def _broadcast(tensors, root):
    """Broadcasts `tensors` in place from replica `root` (one message per
    dtype)."""
    by_dtype = {}
    for tensor in tensors:
        by_dtype.setdefault(tensor.dtype, []).append(tensor)
    for group in by_dtype.values():
        flat = torch.cat([t.detach().reshape(-1) for t in group])
        _lamina.axis_broadcast(flat.view(torch.uint8).numpy(), root, "dp")
        offset = 0
        with torch.no_grad():
            for tensor in group:
                tensor.copy_(flat[offset:offset + tensor.numel()]
                             .view_as(tensor))
                offset += tensor.numel()


def _broadcast_object(value, root):
    """`value` (on replica `root`) pickled to every replica."""
    buffer = io.BytesIO()
    if grid.in_use().rank("dp") == root:
        torch.save(value, buffer)
    data = bytearray(buffer.getvalue())
    size = torch.tensor([len(data)], dtype=torch.int64)
    _lamina.axis_broadcast(size.numpy(), root, "dp")
    payload = torch.zeros(int(size), dtype=torch.uint8)
    if data:
        payload.copy_(torch.frombuffer(data, dtype=torch.uint8))
    _lamina.axis_broadcast(payload.numpy(), root, "dp")
    return torch.load(io.BytesIO(payload.numpy().tobytes()))


class ZeroRedundancyOptimizer(torch.optim.Optimizer):
    """`optimizer_class` over this replica's share of `params`, the rest of
    the optimizer state held by the other replicas of the grid's data axis
    (the grid a `lamina.build(..., grid=...)` put in use). `stage`: 1 (the
    state sharded) or 2 (the gradients reduced to their owner only, too).
    `**defaults` go to `optimizer_class`."""

    def __init__(self, params, optimizer_class, process_group=None, stage=1,
                 **defaults):
        if process_group is not None:
            raise ScheduleError(
                "ZeroRedundancyOptimizer shards over the data axis of the "
                "device grid in use (lamina.build(..., grid=...)); it takes "
                "no process_group")
        if stage not in (1, 2):
            raise ScheduleError(f"ZeRO stage 1 or 2, got {stage!r}")
        super().__init__(params, defaults)
        self.stage = stage
        self.optimizer_class = optimizer_class
        self.replica, self.replicas = _data_axis()
        self._all = [p for group in self.param_groups for p in group["params"]]
        owners = _owners(self._all, self.replicas)
        # Per replica, the indices (in self._all) of the parameters it owns.
        self._owned = [[i for i, o in enumerate(owners) if o == replica]
                       for replica in range(self.replicas)]
        if stage == 2 and self.replicas > 1:
            for parameter, owner in zip(self._all, owners):
                setattr(parameter, OWNER, owner)
        mine = {id(p) for p in self.owned_parameters()}
        self._local_groups = []  # (index in param_groups, local group)
        for index, group in enumerate(self.param_groups):
            local = [p for p in group["params"] if id(p) in mine]
            if local:
                self._local_groups.append(
                    (index, dict(group, params=local)))
        # The local optimizer (None on a replica that owns no parameter).
        self.optim = (optimizer_class([g for _, g in self._local_groups],
                                      **defaults)
                      if self._local_groups else None)
        self._consolidated = None

    def owned_parameters(self):
        """The parameters whose optimizer state this replica holds."""
        return [self._all[i] for i in self._owned[self.replica]]

    def _sync_hyperparameters(self):
        """Hyperparameters set on `param_groups` (a learning-rate schedule)
        reach the local optimizer's groups."""
        if self.optim is None:
            return
        for (index, _), local in zip(self._local_groups,
                                     self.optim.param_groups):
            for key, value in self.param_groups[index].items():
                if key != "params":
                    local[key] = value

    @torch.no_grad()
    def step(self, closure=None):
        """Steps this replica's parameters, then every replica receives
        every parameter from its owner."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        self._sync_hyperparameters()
        self._consolidated = None  # the next state_dict() is gathered anew
        if self.optim is not None:
            self.optim.step()
        if self.replicas > 1:
            for replica, owned in enumerate(self._owned):
                if owned:
                    _broadcast([self._all[i] for i in owned], replica)
        return loss

    def consolidate_state_dict(self, to=0):
        """Gathers the whole optimizer state on replica `to` (a collective:
        every replica calls it); `state_dict()` there returns it."""
        full_state = {}
        for replica in range(self.replicas):
            local = self.optim.state_dict() if (
                replica == self.replica and self.optim is not None) else None
            local = (local if self.replicas == 1 else
                     _broadcast_object(local, replica))
            if local is None:
                continue
            for position, state in local["state"].items():
                full_state[self._owned[replica][position]] = state
        index = {id(p): i for i, p in enumerate(self._all)}
        groups = []
        for group in self.param_groups:
            entry = {k: v for k, v in group.items() if k != "params"}
            entry["params"] = [index[id(p)] for p in group["params"]]
            groups.append(entry)
        if self.replica == to:
            self._consolidated = {"state": full_state,
                                  "param_groups": groups}

    def state_dict(self):
        """The whole state, in torch.optim's format (after
        `consolidate_state_dict(to=this replica)`)."""
        if self._consolidated is None:
            raise RuntimeError(
                "the optimizer state is sharded over the replicas: call "
                "consolidate_state_dict(to=...) on every replica first; "
                "state_dict() returns it on that replica")
        return self._consolidated

    def load_state_dict(self, state_dict):
        """Loads a whole (consolidated) state: each replica keeps its
        parameters' share."""
        for group, saved in zip(self.param_groups,
                                state_dict["param_groups"]):
            for key, value in saved.items():
                if key != "params":
                    group[key] = value
        self._sync_hyperparameters()
        if self.optim is None:
            return
        # (The local state dict carries the hyperparameters just synced.)
        local = self.optim.state_dict()
        local["state"] = {position: state_dict["state"][index]
                          for position, index in
                          enumerate(self._owned[self.replica])
                          if index in state_dict["state"]}
        self.optim.load_state_dict(local)


def _counted_here(parameter, place):
    """Whether this rank counts `parameter`'s gradient in the model's norm:
    each element once over the grid (a tensor-sharded parameter on every
    tensor rank, as its block; anything whole on several ranks on the
    first of them)."""
    owner = getattr(parameter, OWNER, None)
    if owner is not None:
        if owner != place.rank("dp"):
            return False
    elif place.rank("dp") != 0:
        return False
    if place.rank("pp") != 0:
        return False
    sharded = getattr(parameter, "_lamina_block", None) is not None
    return sharded or place.rank("tp") == 0


def clip_grad_norm_(parameters, max_norm, norm_type=2.0):
    """torch.nn.utils.clip_grad_norm_ over the whole model on a device grid:
    the norm counts every element of every gradient once (tensor-sharded
    blocks over the tensor axis, ZeRO stage 2's gradients on their owners),
    every rank scales its gradients by the same factor, and the total norm
    is returned."""
    if isinstance(parameters, torch.Tensor):
        parameters = [parameters]
    parameters = [p for p in parameters if p.grad is not None or
                  getattr(p, OWNER, None) is not None]
    norm_type = float(norm_type)
    place = grid.in_use() or grid.Grid(tp=_lamina.world_size())
    infinite = math.isinf(norm_type)
    local = 0.0
    for parameter in parameters:
        if parameter.grad is None or not _counted_here(parameter, place):
            continue
        gradient = parameter.grad.detach().to(torch.float64)
        if infinite:
            local = max(local, float(gradient.abs().max()))
        else:
            local += float(gradient.abs().pow(norm_type).sum())
    total = torch.tensor([local], dtype=torch.float64)
    for axis, size in place.sizes().items():
        if size > 1:
            _lamina.axis_reduce(total.numpy(), axis,
                                "max" if infinite else "sum")
    total_norm = float(total[0]) if infinite else \
        float(total[0]) ** (1.0 / norm_type)
    coefficient = float(max_norm) / (total_norm + 1e-6)
    if coefficient < 1.0:
        with torch.no_grad():
            for parameter in parameters:
                if parameter.grad is not None:
                    parameter.grad.mul_(coefficient)
    return torch.tensor(total_norm)
