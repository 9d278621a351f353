"""Recording LNS operations as they run, for :mod:`lamina.lns.compiled`:
while a :class:`Recorder` is active, each function of
:mod:`lamina.lns.functional` notes what it computed (operation, operand
code tensors, result, attributes), and operands it encoded from Python
numbers or float tensors as constants."""

import contextlib
import dataclasses

_active = []


@dataclasses.dataclass
class Step:
    op: str
    operands: list
    result: object          # the result's code tensor
    base: object            # the result's Base
    attrs: dict


class Recorder:
    def __init__(self):
        self.steps = []
        self.constants = {}   # id(code tensor) -> (code tensor, Base)
        self._alive = []      # keeps recorded tensors alive: ids stay unique

    def record(self, op, operands, result, base, **attrs):
        self._alive.extend(operands)
        self._alive.append(result)
        self.steps.append(Step(op, list(operands), result, base, attrs))

    def constant(self, codes, base):
        self._alive.append(codes)
        self.constants[id(codes)] = (codes, base)


def active():
    """The recorder in effect, or None."""
    return _active[-1] if _active else None


def record(op, operands, result, base, **attrs):
    """Notes `op` with the recorder in effect, if any."""
    recorder = active()
    if recorder is not None:
        recorder.record(op, operands, result, base, **attrs)


@contextlib.contextmanager
def recording():
    recorder = Recorder()
    _active.append(recorder)
    try:
        yield recorder
    finally:
        _active.pop()
