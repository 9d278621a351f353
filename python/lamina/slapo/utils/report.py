"""Slapo's memory report, for this process on the CPU: its resident
memory and the largest it has been."""

import gc
import resource

import torch

from ..logger import get_logger

logger = get_logger("Slapo")


def _resident_mib():
    with open("/proc/self/statm", encoding="ascii") as statm:
        pages = int(statm.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def report_memory(msg="", report_gc=False):
    """Logs this process's resident memory and its peak (MiB), with
    `msg`; with `report_gc`, also the tensors the garbage collector tracks
    (type, shape). Returns the resident memory in MiB."""
    resident = _resident_mib()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    logger.info(f"{msg} resident memory {resident:.1f} MiB, peak "
                f"{peak:.1f} MiB", ranks=0)
    if report_gc:
        for obj in gc.get_objects():
            if torch.is_tensor(obj):
                logger.info(f"  {type(obj).__name__} {tuple(obj.shape)} "
                            f"{obj.dtype}", ranks=0)
    return resident
