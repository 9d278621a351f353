"""What Slapo's framework dialects give a partitioned model: for DeepSpeed's
pipeline engine, the ranks that hold each group of tied weights."""

from . import deepspeed

__all__ = ["deepspeed"]
