"""What the benchmark tables say about the machine they were measured on:
vector units and gathers differ between the machines these tables come
from, so each table names its CPU."""

import pathlib


def cpu_model():
    """The CPU's model name, from /proc/cpuinfo."""
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"
