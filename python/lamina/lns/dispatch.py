"""The registry of LNS implementations of torch functions, as xlnstorch
users know it: each torch function maps keys to (implementation,
code-level operation) pairs and names one key its default, which
``LNSTensor.__torch_function__`` calls. Lamina's own implementations are
registered under the key "default". Also the registry of sbdb (Gaussian
logarithm) functions."""

import contextlib

import torch

DEFAULT_KEY = "default"

# torch function -> {key: (implementation, code-level operation or None)}
_IMPLEMENTATIONS = {}
# torch function -> the key of its default implementation
_DEFAULTS = {}


def _name(torch_function):
    return getattr(torch_function, "__name__", None) or repr(torch_function)


def implements(torch_function, lns_operation, key=None, default=False):
    """A decorator registering the decorated function as the LNS
    implementation of `torch_function` under `key` (default: the decorated
    function's name), replacing one of the same key. `lns_operation` is the
    computation on code tensors it performs (what :func:`apply_lns_op`
    calls; None if it has none). With `default`, the implementation becomes
    the one LNS tensors use."""
    def register(implementation):
        name = implementation.__name__ if key is None else key
        if not isinstance(name, str):
            raise TypeError(f"an implementation key is a string, got "
                            f"{name!r}")
        _IMPLEMENTATIONS.setdefault(torch_function, {})[name] = (
            implementation, lns_operation)
        if default:
            _DEFAULTS[torch_function] = name
        return implementation
    return register


def _registered(torch_function):
    try:
        return _IMPLEMENTATIONS[torch_function]
    except KeyError:
        raise ValueError(f"no LNS implementation is registered for "
                         f"{_name(torch_function)}") from None


def get_implementation(torch_function, impl_key):
    """The (implementation, code-level operation) pair registered for
    `torch_function` under `impl_key`; ValueError if there is none."""
    entries = _registered(torch_function)
    try:
        return entries[impl_key]
    except KeyError:
        raise ValueError(f"no LNS implementation of {_name(torch_function)} "
                         f"is registered under the key {impl_key!r} (keys: "
                         f"{', '.join(map(repr, entries))})") from None


def set_default_implementation(torch_function, impl_key):
    """Makes the implementation registered under `impl_key` the one LNS
    tensors use for `torch_function`."""
    get_implementation(torch_function, impl_key)
    _DEFAULTS[torch_function] = impl_key


def get_default_implementation_key(torch_function):
    """The key of the implementation LNS tensors use for
    `torch_function`."""
    _registered(torch_function)
    try:
        return _DEFAULTS[torch_function]
    except KeyError:
        raise ValueError(f"no default LNS implementation is set for "
                         f"{_name(torch_function)}") from None


@contextlib.contextmanager
def override_implementation(torch_function, impl_key):
    """Within the block, `torch_function` on LNS tensors runs the
    implementation registered under `impl_key`; the previous default is
    restored on leaving it."""
    had_default = torch_function in _DEFAULTS
    previous = _DEFAULTS.get(torch_function)
    set_default_implementation(torch_function, impl_key)
    try:
        yield
    finally:
        if had_default:
            _DEFAULTS[torch_function] = previous
        else:
            del _DEFAULTS[torch_function]


def apply_lns_op(torch_function, *args, **kwargs):
    """Runs the code-level operation of `torch_function`'s default
    implementation on `args` (code tensors, bases, options)."""
    key = get_default_implementation_key(torch_function)
    operation = get_implementation(torch_function, key)[1]
    if operation is None:
        raise TypeError(f"the LNS implementation {key!r} of "
                        f"{_name(torch_function)} has no code-level "
                        f"operation")
    return operation(*args, **kwargs)


def default_implementation(torch_function):
    """The implementation ``LNSTensor.__torch_function__`` calls for
    `torch_function`; TypeError if LNS tensors do not support it."""
    key = _DEFAULTS.get(torch_function)
    if key is None:
        raise TypeError(f"{_name(torch_function)} is not an operation Lamina "
                        f"implements on LNS tensors; see docs/lns.md for the "
                        f"list")
    return _IMPLEMENTATIONS[torch_function][key][0]


def register_default(torch_function, implementation, lns_operation=None):
    """Registers one of Lamina's implementations under "default"; it is
    the default unless another key was made the default before."""
    implements(torch_function, lns_operation, DEFAULT_KEY,
               default=torch_function not in _DEFAULTS)(implementation)


# -- sbdb ---------------------------------------------------------------

IDEAL_SBDB = "ideal"

_SBDB_FUNCTIONS = {}
_default_sbdb = [IDEAL_SBDB]


def implement_sbdb(key, default=False):
    """A decorator registering an sbdb function ``sbdb(z, s, base)`` (code
    tensors z = -|ex - ey|, s = sign difference, 0-d base tensor → the
    even code increment of an addition) under `key`; a key is registered
    once (ValueError). Lamina's additions run in compiled kernels that
    compute the "ideal" sbdb (its table form for f <= 16 gives the same
    codes), so making another function the default raises
    NotImplementedError."""
    def register(function):
        name = key or function.__name__
        if name in _SBDB_FUNCTIONS:
            raise ValueError(f"an sbdb function is already registered under "
                             f"the key {name!r}")
        if default and name != IDEAL_SBDB:
            raise NotImplementedError(
                f"Lamina's LNS additions (add, sub, sum, matmul, linear ...) "
                f"run in compiled kernels computing the ideal sbdb; the sbdb "
                f"function {name!r} cannot be made their default")
        _SBDB_FUNCTIONS[name] = function
        if default:
            _default_sbdb[0] = name
        return function
    return register


def sbdb(z, s, base):
    """The Gaussian logarithm increment of the default sbdb function."""
    return _SBDB_FUNCTIONS[_default_sbdb[0]](z, s, base)


@implement_sbdb(IDEAL_SBDB, default=True)
def sbdb_ideal(z, s, base):
    """2 · round(log_b |1 − 2s + b^z|), in double (the spec's formula),
    as float64 codes."""
    base = torch.as_tensor(base, dtype=torch.float64)
    magnitude = torch.abs(1.0 - 2.0 * s + torch.pow(base, z))
    return (torch.round(torch.log(magnitude) / torch.log(base)) * 2).to(
        torch.float64)


__all__ = ["implements", "get_implementation", "set_default_implementation",
           "get_default_implementation_key", "override_implementation",
           "apply_lns_op", "implement_sbdb", "sbdb"]
