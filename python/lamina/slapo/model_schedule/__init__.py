"""Slapo's per-model schedule helpers (`slapo.model_schedule.<model>`)."""

from . import gpt2

__all__ = ["gpt2"]
