"""Slapo's utility modules: `common` (module hooks and small helpers) and
`report` (memory reports)."""

from . import common, report

__all__ = ["common", "report"]
