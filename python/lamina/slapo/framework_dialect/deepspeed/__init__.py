"""DeepSpeed's side of a pipeline partition."""

from . import pipeline

__all__ = ["pipeline"]
