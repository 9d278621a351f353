"""Progress of long compiles, on stderr and through Python's `logging`.

Every compile (a model for one set of input shapes and one mode) goes
through stages: tracing the model, replaying the schedule, differentiating,
compiling each function with its pipeline. Each stage is an INFO record of
the ``lamina`` logger naming what is compiled, the stage and the time so
far; a stage still running after ``HEARTBEAT`` seconds repeats its record
until it ends, and the end of the compile is one more.

Where the ``lamina`` logger's INFO records are handled (``logging.
basicConfig(level=logging.INFO)``, or a handler on ``lamina``), every record
goes there. Otherwise they are lines on stderr for compiles that have run
longer than ``THRESHOLD`` seconds (a short compile prints nothing), for all
compiles with ``build(..., progress=True)``, for none with
``progress=False`` or the environment variable ``LAMINA_PROGRESS=0``.
"""

import contextlib
import logging
import os
import sys
import threading
import time
import warnings

from ..errors import CompileCacheWarning

logger = logging.getLogger("lamina")

THRESHOLD = 2.0   # seconds before a compile shows on stderr
HEARTBEAT = 10.0  # seconds between records of one running stage


def _report(message, show):
    """`message` to the user's logging when it takes the ``lamina`` logger's
    INFO records, else to stderr when `show`."""
    if logger.isEnabledFor(logging.INFO) and logger.hasHandlers():
        logger.info(message)
    elif show:
        print(f"lamina: {message}", file=sys.stderr, flush=True)


_current = threading.local()


class Compile:
    """One compile of `what`; `show`: True (every stage on stderr), False
    (none), None (once it has run THRESHOLD seconds)."""

    def __init__(self, what, show=None):
        self._what = what
        self.stages = 0
        if os.environ.get("LAMINA_PROGRESS") == "0":
            show = False
        self.show = show
        self.start = time.monotonic()
        self.shown = False
        self.cached = 0    # programs loaded from the compile cache
        self.programs = 0  # programs compiled or loaded

    @property
    def what(self):
        """What is compiled (`what` is a string or a function giving it:
        most calls compile nothing and never ask)."""
        if callable(self._what):
            self._what = self._what()
        return self._what

    def elapsed(self):
        return time.monotonic() - self.start

    def log(self, message):
        elapsed = self.elapsed()
        show = self.show if self.show is not None else elapsed >= THRESHOLD
        self.shown = self.shown or show
        _report(f"{self.what}: {message}, {elapsed:.1f} s so far", show)

    @contextlib.contextmanager
    def stage(self, name):
        """Logs `name` at its start, and again every HEARTBEAT seconds while
        it runs."""
        self.stages += 1
        self.log(name)
        done = threading.Event()

        def beat():
            # The first record once the compile has run THRESHOLD seconds
            # (it shows from then on), then one every HEARTBEAT seconds.
            while not done.wait(HEARTBEAT if self.shown or self.show is
                                not None else
                                max(0.0, THRESHOLD - self.elapsed())):
                self.log(f"still {name}")
        beating = threading.Thread(target=beat, daemon=True)
        beating.start()
        try:
            yield
        finally:
            done.set()
            beating.join()

    def finish(self):
        if not self.stages:
            return  # nothing was compiled
        elapsed = self.elapsed()
        show = self.show if self.show is not None else elapsed >= THRESHOLD
        cached = (f" ({self.cached} of {self.programs} programs from the "
                  "compile cache)" if self.cached else "")
        _report(f"{self.what}: compiled in {elapsed:.1f} s{cached}",
                show or self.shown)


@contextlib.contextmanager
def compiling(what, show=None):
    """The compile of `what` that the stages inside report to (nested
    compiles report to the outermost)."""
    outer = getattr(_current, "compile", None)
    if outer is not None:
        yield outer
        return
    current = Compile(what, show)
    _current.compile = current
    try:
        yield current
    finally:
        _current.compile = None
    current.finish()


@contextlib.contextmanager
def stage(name):
    """A stage of the compile under way (a compile of its own outside
    one)."""
    with compiling("a program") as current, current.stage(name):
        yield


@contextlib.contextmanager
def steps():
    """A function that starts each stage of a compile made of steps (the
    C++ training pair reports each step as it starts), ending the one
    before; the last ends with the block."""
    with contextlib.ExitStack() as current:
        def begin(name):
            current.close()
            current.enter_context(stage(name))
        yield begin


def compiled(program):
    """Records a compiled `program` (a `_lamina.Program`) in the compile
    under way: whether the compile cache held it, and its warnings as
    CompileCacheWarning."""
    current = getattr(_current, "compile", None)
    if current is not None:
        current.programs += 1
        if program.cache_status == "hit":
            current.cached += 1
            current.log("loaded from the compile cache")
    for message in program.warnings:
        warnings.warn(message, CompileCacheWarning, stacklevel=2)
    return program
