"""Slapo's logging helper: `get_logger(name)` gives a logger that writes to
stdout, tags each record with the process's rank once torch.distributed is
initialised, and takes `ranks=` (an int or a list) to log on those ranks
only (`logger.info("...", ranks=0)`)."""

import logging
import sys

import torch.distributed as dist

CRITICAL, FATAL, ERROR = logging.CRITICAL, logging.FATAL, logging.ERROR
WARNING, WARN, INFO = logging.WARNING, logging.WARN, logging.INFO
DEBUG, NOTSET = logging.DEBUG, logging.NOTSET

FORMAT = ("[%(asctime)s][%(levelname)s][%(filename)s:%(lineno)d:"
          "%(funcName)s] %(message)s")

_loggers = {}


class RankLogger(logging.Logger):
    """A logger whose calls take `ranks=` and `group=`: with
    torch.distributed initialised, a record is written only on the listed
    ranks (all when None) and starts with "[Rank r] "."""

    def _log(self, level, msg, args, exc_info=None, extra=None,
             stack_info=False, stacklevel=1, ranks=None, group=None):
        if dist.is_available() and dist.is_initialized():
            rank = dist.get_rank(group)
            if ranks is not None:
                listed = ranks if isinstance(ranks, (list, tuple, set)) \
                    else [ranks]
                if rank not in listed:
                    return
            msg = f"[Rank {rank}] {msg}"
        super()._log(level, msg, args, exc_info, extra, stack_info,
                     stacklevel + 1)


def get_logger(name="Slapo", level=INFO):
    """The logger `name`, made once: later calls return it and keep its
    first level (warning when asked for another)."""
    if name in _loggers:
        logger = _loggers[name]
        if logger.level != level:
            logger.warning(f"Logger {name} already exists with level "
                           f"{logging.getLevelName(logger.level)}; the level "
                           f"{logging.getLevelName(level)} is ignored")
        return logger
    previous = logging.getLoggerClass()
    logging.setLoggerClass(RankLogger)
    try:
        logger = logging.getLogger(name)
    finally:
        logging.setLoggerClass(previous)
    if not isinstance(logger, RankLogger):
        # Made elsewhere before: give it the rank-aware calls.
        logger.__class__ = RankLogger
    logger.setLevel(level)
    logger.propagate = False
    handler = logging.StreamHandler(stream=sys.stdout)
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter(FORMAT))
    logger.addHandler(handler)
    _loggers[name] = logger
    return logger
