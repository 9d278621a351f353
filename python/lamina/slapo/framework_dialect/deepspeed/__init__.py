"""DeepSpeed's side of Slapo: a pipeline partition's tied weights, and the
engine build(target="deepspeed") returns."""

from . import engine, pipeline

__all__ = ["engine", "pipeline"]
