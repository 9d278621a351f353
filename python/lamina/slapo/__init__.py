"""Slapo's API over Lamina: ``import lamina.slapo as slapo``.

Slapo's schedules and tests run as written (docs/slapo.md lists where
Lamina differs and why): ``create_schedule``, the schedule tree
(``sch["mlp"]["fc_in"]``, ``sch.mod``, ``sch.metadata``,
``named_schedules``, ``trace``, ``find``), the primitives, ``build`` →
``(model, optimizer)``, ``Verify``, ``init_empty_weights``,
``set_random_seed``, :mod:`.pattern` and :mod:`.op`. Every primitive is
recorded on a :class:`lamina.Schedule` (``sch.lamina_schedule``), which
compiles the model.
"""

from ..errors import ScheduleError
from . import (framework_dialect, logger, model_schedule, op, pattern,
               pipeline, random, sharding, utils)
from .checkpoint import checkpoint
from .build import build, init_empty_weights
from .pattern import ModulePattern, Pattern, call_module
from .random import get_cuda_rng_tracker, is_random_seed_set, set_random_seed
from .schedule import (PathError, Schedule, ScheduleMetadata, create_schedule,
                       list_primitives)
from .verify import Verify

__all__ = ["ModulePattern", "PathError", "Pattern", "Schedule",
           "ScheduleError", "ScheduleMetadata", "Verify", "build",
           "call_module", "checkpoint", "create_schedule",
           "get_cuda_rng_tracker", "init_empty_weights", "is_random_seed_set",
           "framework_dialect", "list_primitives", "logger",
           "model_schedule", "op", "pattern", "pipeline", "random",
           "set_random_seed", "sharding", "utils"]
