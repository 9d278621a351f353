"""Lamina's exception types: every error a Python user sees from Lamina is
one of these (or a documented torch / NumPy error)."""


class ScheduleError(ValueError):
    """A schedule primitive Lamina rejects; the message is its diagnostic."""


class UnsupportedOperationError(ValueError):
    """The model uses an operation the importer does not map to lamina IR."""


class AllocationError(MemoryError):
    """A tensor of a compiled program that cannot be allocated: its size
    overflows 64 bits or is more than this machine's memory."""


class InputError(IndexError):
    """An input a compiled model cannot take: an index outside the rows of
    the embedding, or a target outside the classes of the loss, it feeds
    (PyTorch raises IndexError there too)."""


class CompileCacheWarning(UserWarning):
    """The compile cache could not serve or store a program (a damaged
    entry, removed and compiled again; a directory that cannot be written):
    the program is compiled and runs anyway."""
