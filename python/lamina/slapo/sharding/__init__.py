"""Slapo's sharding helpers: the sync ops (collectives with the gradients
tensor parallelism needs, lamina.collectives) and the functions they are
made of."""

from .sync_ops import *  # noqa: F401,F403
from .sync_ops import __all__  # noqa: F401
