"""The base of an LNS number: 2^(2^-f) for f fractional bits, or an
explicit b > 1. One value object so that tensors, gradients, optimizer
groups and kernels agree on what "the same base" means."""

import math

import torch

from .kernels import DEFAULT_F, MAX_F, num_type


def _base_of_f(f):
    return 2.0 ** (2.0 ** -f)


class Base:
    """An LNS base. A b that equals 2^(2^-f) in double for an integer f is
    held as that f, so `b=2**(2**-10)` and `f=10` are one base."""

    __slots__ = ("f", "b")

    def __init__(self, f=None, b=None):
        if f is not None and b is not None:
            raise ValueError("give the base as f= or b=, not both")
        if b is not None:
            b = float(b.item() if torch.is_tensor(b) else b)
            f = _fractional_bits_of(b)
            if f is not None:
                b = None
        elif f is None:
            f = DEFAULT_F
        num_type(f, b)  # validates f's range and b > 1
        self.f = None if f is None else int(f)
        self.b = b

    @classmethod
    def of(cls, base=None, f=None, b=None):
        """A Base from a Base, a float or a 0-d tensor `base`, or f/b."""
        for given in (base, b):
            if isinstance(given, Base):
                return given
        if base is not None:
            return cls(b=base)
        return cls(f=f, b=b)

    @property
    def value(self):
        """The base as a double."""
        return _base_of_f(self.f) if self.f is not None else self.b

    def tensor(self):
        """The base as a 0-d float64 tensor (the reference's `base`)."""
        return torch.tensor(self.value, dtype=torch.float64)

    def kw(self, prefix=""):
        """Keyword arguments naming this base for lamina.lns.kernels."""
        if self.f is not None:
            return {prefix + "f": self.f}
        return {prefix + "b": self.b}

    def __eq__(self, other):
        return isinstance(other, Base) and (self.f, self.b) == (other.f, other.b)

    def __hash__(self):
        return hash((self.f, self.b))

    def __repr__(self):
        return f"Base(f={self.f})" if self.f is not None else f"Base(b={self.b!r})"


def _fractional_bits_of(b):
    """The integer f with 2^(2^-f) == b in double, if there is one."""
    if not (b > 1.0 and math.isfinite(b)):
        return None
    f = round(-math.log2(math.log2(b)))
    if 0 <= f <= MAX_F and _base_of_f(f) == b:
        return f
    return None


DEFAULT_BASE = Base(f=DEFAULT_F)
