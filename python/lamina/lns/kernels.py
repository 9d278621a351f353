"""LNS arithmetic on int64 code arrays, running Lamina's compiled kernels.

Every function takes the base as ``f=`` (fractional bits) or ``b=`` (an
explicit base), never both; operands given in another base (``y_f=``,
``weight_f=``, ``bias_f=`` ...) are converted to the first operand's base by
the spec's mixed-base rule, and results are in that base. Codes are bit-exact
with the xlnstorch reference. Each (operation, shapes, bases) is compiled
once and cached.
"""

import functools

import numpy as np

from .._lamina import Program

DEFAULT_F = 23
# The largest f whose base 2^(2^-f) is not 1.0 in double (the lns dialect's
# bound).
MAX_F = 52
# The code of zero: -(2^53) | 1.
_ZERO = np.int64(-(2**53) | 1)


def num_type(f=None, b=None):
    """The MLIR type of an LNS number in base 2^(2^-f) (default f = 23) or
    b."""
    return _num(f, b)


def _num(f=None, b=None):
    """The MLIR type of an LNS number in base 2^(2^-f) or b."""
    if f is not None and b is not None:
        raise ValueError("give the base as f= or b=, not both")
    if b is not None:
        if not (b > 1.0 and np.isfinite(b)):
            raise ValueError(f"an LNS base must be a finite number greater "
                             f"than 1, got {b}")
        return f"!lns.num<b = {float(b)!r}>"
    if f is None:
        f = DEFAULT_F
    if isinstance(f, (bool, np.bool_)) or not isinstance(f, (int, np.integer)):
        raise ValueError(f"f (the fractional bits of the base) must be an "
                         f"integer, got {f!r}")
    if not 0 <= f <= MAX_F:
        raise ValueError(f"f (the fractional bits of the base) must be in "
                         f"[0, {MAX_F}], got {f}")
    return f"!lns.num<f = {int(f)}>"


def _tensor(shape, element):
    return "tensor<" + "".join(f"{s}x" for s in shape) + element + ">"


@functools.lru_cache(maxsize=256)
def _program(source):
    return Program(source)


def _call(source, *arrays):
    program = _program(source)
    results = program.run(program.prepare(list(arrays)))
    return results[0] if len(results) == 1 else tuple(results)


def _host(array):
    """A torch tensor (codes that may carry autograd) as a NumPy array of
    its values, detached; anything else unchanged."""
    if hasattr(array, "detach") and hasattr(array, "numpy"):
        return array.detach().cpu().numpy()
    return array


def _contiguous(array, dtype):
    """A C-contiguous copy only when needed; unlike np.ascontiguousarray,
    0-d arrays stay 0-d. Torch tensors are read detached."""
    array = np.asarray(_host(array), dtype=dtype)
    return array if array.flags.c_contiguous else array.copy()


def _codes(array):
    return _contiguous(array, np.int64)


def _check_finite(x):
    """NaN and ±inf have no LNS code (the spec's encoding takes finite
    numbers): a ValueError naming the first one, in every path alike."""
    bad = ~np.isfinite(x)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(f"cannot encode {x[index]} (at index {index}) in "
                         f"LNS: only finite numbers have codes")


def encode(x, f=None, b=None):
    """Floats → codes: x == 0 → zero, else roundHalfEven(log|x| / log b).
    NaN and ±inf raise ValueError (they have no code)."""
    x = _contiguous(x, np.float64)
    _check_finite(x)
    t = _tensor(x.shape, _num(f, b))
    source = f"""func.func @main(%x: {_tensor(x.shape, 'f64')}) -> {t} {{
  %0 = lns.encode %x : {_tensor(x.shape, 'f64')} -> {t}
  return %0 : {t}
}}"""
    return _call(source, x)


def decode(codes, f=None, b=None):
    """Codes → float64 values."""
    codes = _codes(codes)
    t = _tensor(codes.shape, _num(f, b))
    out = _tensor(codes.shape, "f64")
    source = f"""func.func @main(%x: {t}) -> {out} {{
  %0 = lns.decode %x : {t} -> {out}
  return %0 : {out}
}}"""
    return _call(source, codes)


def _unary(op, x, f, b):
    x = _codes(x)
    t = _tensor(x.shape, _num(f, b))
    source = f"""func.func @main(%x: {t}) -> {t} {{
  %0 = lns.{op} %x : {t}
  return %0 : {t}
}}"""
    return _call(source, x)


def _binary_operands(x, y, f, b, y_f, y_b):
    """x and y broadcast to one shape, with their tensor types (y in its
    own base when y_f/y_b is given, else in x's)."""
    x, y = np.broadcast_arrays(_codes(x), _codes(y))
    x, y = _contiguous(x, np.int64), _contiguous(y, np.int64)
    tx = _tensor(x.shape, _num(f, b))
    ty = _tensor(y.shape, _num(y_f, y_b) if (y_f, y_b) != (None, None)
                 else _num(f, b))
    return x, y, tx, ty


def _binary(op, x, y, f, b, y_f, y_b, sbdb):
    x, y, tx, ty = _binary_operands(x, y, f, b, y_f, y_b)
    mode = f"sbdb {sbdb} " if sbdb != "ideal" else ""
    source = f"""func.func @main(%x: {tx}, %y: {ty}) -> {tx} {{
  %0 = lns.{op} %x, %y {mode}: {tx}, {ty}
  return %0 : {tx}
}}"""
    return _call(source, x, y)


def neg(x, f=None, b=None):
    return _unary("neg", x, f, b)


def abs(x, f=None, b=None):  # noqa: A001 - the spec's name
    return _unary("abs", x, f, b)


def sqrt(x, f=None, b=None):
    return _unary("sqrt", x, f, b)


def relu(x, f=None, b=None):
    """The rectifier on the sign bit: negative codes (and Z) become Z."""
    return _unary("relu", x, f, b)


def relu_grad(grad, output, f=None, b=None):
    """The rectifier's backward: `grad` where the forward's `output` is
    non-zero, Z elsewhere (the spec's mul(g, isZ(out) ? Z : c1))."""
    grad, output = _codes(grad), _codes(output)
    t = _tensor(grad.shape, _num(f, b))
    source = f"""func.func @main(%g: {t}, %o: {t}) -> {t} {{
  %0 = lns.relu_grad %g, %o : {t}
  return %0 : {t}
}}"""
    return _call(source, grad, output)


def powi(x, n, f=None, b=None):
    """x ** n for an integer n: the exponent times n (the spec's powi)."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"powi takes an integer exponent, got {n!r}")
    x = _codes(x)
    t = _tensor(x.shape, _num(f, b))
    source = f"""func.func @main(%x: {t}) -> {t} {{
  %0 = lns.powi %x, {int(n)} : {t}
  return %0 : {t}
}}"""
    return _call(source, x)


def change_base(x, f=None, b=None, to_f=None, to_b=None):
    """Codes in base f/b → codes in base to_f/to_b by the spec's mixed-base
    rule (zero stays zero)."""
    x = _codes(x)
    source_type = _tensor(x.shape, _num(f, b))
    target_type = _tensor(x.shape, _num(to_f, to_b))
    source = f"""func.func @main(%x: {source_type}) -> {target_type} {{
  %0 = lns.change_base %x : {source_type} -> {target_type}
  return %0 : {target_type}
}}"""
    return _call(source, x)


_PREDICATES = ("eq", "ne", "lt", "le", "gt", "ge")


def compare(predicate, x, y, f=None, b=None, y_f=None, y_b=None):
    """Element-wise comparison (a bool array): eq/ne on codes, lt/le/gt/ge
    in the reference's order (sign, then exponent; lns.cmp)."""
    if predicate not in _PREDICATES:
        raise ValueError(f"predicate must be one of {', '.join(_PREDICATES)}, "
                         f"got {predicate!r}")
    x, y, tx, ty = _binary_operands(x, y, f, b, y_f, y_b)
    tr, t8 = _tensor(x.shape, "i1"), _tensor(x.shape, "i32")
    # Results go back as i32: the runtime returns no i1 arrays.
    source = f"""func.func @main(%x: {tx}, %y: {ty}) -> {t8} {{
  %0 = lns.cmp {predicate}, %x, %y : {tx}, {ty} -> {tr}
  %1 = arith.extui %0 : {tr} to {t8}
  return %1 : {t8}
}}"""
    return _call(source, x, y).astype(bool)


def maximum(x, y, f=None, b=None, y_f=None, y_b=None):
    """gt(x, y) ? x : y element-wise (lns.max)."""
    return _binary("max", x, y, f, b, y_f, y_b, "ideal")


def minimum(x, y, f=None, b=None, y_f=None, y_b=None):
    """lt(x, y) ? x : y element-wise (lns.min)."""
    return _binary("min", x, y, f, b, y_f, y_b, "ideal")


def mul(x, y, f=None, b=None, y_f=None, y_b=None):
    return _binary("mul", x, y, f, b, y_f, y_b, "ideal")


_ZERO_DIVISORS = ("raise", "formula")


def div(x, y, f=None, b=None, y_f=None, y_b=None, *, zero_divisor="raise"):
    """x / y. A zero in y raises ZeroDivisionError by default (the spec's
    error); with zero_divisor="formula" it gives the division formula's
    code (x − y + 1) ^ 1 instead, as the IR's lns.div does at run time and
    the xlnstorch reference returns (a zero dividend stays zero)."""
    if zero_divisor not in _ZERO_DIVISORS:
        raise ValueError(f"zero_divisor must be 'raise' or 'formula', got "
                         f"{zero_divisor!r}")
    zeros = (_codes(y) | 1) == _ZERO
    if zero_divisor == "raise" and zeros.any():
        index = tuple(int(i) for i in np.argwhere(zeros)[0]) \
            if zeros.ndim else ()
        raise ZeroDivisionError(f"LNS division by zero (the divisor is zero "
                                f"at index {index})")
    return _binary("div", x, y, f, b, y_f, y_b, "ideal")


def add(x, y, f=None, b=None, y_f=None, y_b=None, sbdb="ideal"):
    return _binary("add", x, y, f, b, y_f, y_b, sbdb)


def sub(x, y, f=None, b=None, y_f=None, y_b=None, sbdb="ideal"):
    return _binary("sub", x, y, f, b, y_f, y_b, sbdb)


def sum(codes, axis=None, f=None, b=None, sbdb="ideal",  # noqa: A001
        order="sequential"):
    """Sum over `axis` (None: all) in the reference's sequential order, or,
    with order="pairwise", as a pairwise tree (not the reference)."""
    if order not in ("sequential", "pairwise"):
        raise ValueError(f"order must be 'sequential' or 'pairwise', got "
                         f"{order!r}")
    codes = _codes(codes)
    rank = codes.ndim
    if axis is None:
        dims = list(range(rank))
    else:
        axes = np.atleast_1d(axis)
        if axes.dtype.kind not in "iu":
            raise TypeError(f"axis must be an integer or a tuple of "
                            f"integers, got {axis!r}")
        for a in axes:
            if not -rank <= a < rank:
                raise np.AxisError(int(a), rank)
        dims = sorted(int(a) % rank for a in axes)
        if len(set(dims)) != len(dims):
            raise ValueError(f"duplicate value in 'axis': {axis!r}")
    kept = [s for d, s in enumerate(codes.shape) if d not in dims]
    element = _num(f, b)
    t = _tensor(codes.shape, element)
    r = _tensor(kept, element)
    mode = f"sbdb {sbdb} " if sbdb != "ideal" else ""
    if order == "pairwise":
        mode = "order pairwise " + mode
    source = f"""func.func @main(%x: {t}) -> {r} {{
  %0 = lns.sum %x dims [{', '.join(map(str, dims))}] {mode}: {t} -> {r}
  return %0 : {r}
}}"""
    return _call(source, codes)


def matmul(a, c, f=None, b=None, c_f=None, c_b=None, sbdb="ideal"):
    """a[..., M, K] · c[..., K, N], sequential over K, batch broadcast.
    1-D operands follow torch.matmul: a (K,) is taken as (1, K) and c (K,)
    as (K, 1), and the added dim is removed from the result."""
    a, c = _codes(a), _codes(c)
    if a.ndim == 0 or c.ndim == 0:
        raise ValueError(f"matmul takes operands of at least one dimension, "
                         f"got shapes {a.shape} and {c.shape}")
    if a.shape[-1] != c.shape[-2 if c.ndim > 1 else 0]:
        raise ValueError(f"matmul: the inner dimensions differ, shapes "
                         f"{a.shape} and {c.shape}")
    if a.ndim == 1 or c.ndim == 1:
        product = matmul(a[None, :] if a.ndim == 1 else a,
                         c[:, None] if c.ndim == 1 else c, f, b, c_f, c_b,
                         sbdb)
        if a.ndim == 1:
            product = product[..., 0, :]
        if c.ndim == 1:
            product = product[..., 0]
        return _contiguous(product, np.int64)
    batch = np.broadcast_shapes(a.shape[:-2], c.shape[:-2])
    out_shape = tuple(batch) + (a.shape[-2], c.shape[-1])
    ta = _tensor(a.shape, _num(f, b))
    tc = _tensor(c.shape, _num(c_f, c_b) if (c_f, c_b) != (None, None)
                 else _num(f, b))
    to = _tensor(out_shape, _num(f, b))
    mode = f"sbdb {sbdb} " if sbdb != "ideal" else ""
    source = f"""func.func @main(%a: {ta}, %c: {tc}) -> {to} {{
  %0 = lns.matmul %a, %c {mode}: {ta}, {tc} -> {to}
  return %0 : {to}
}}"""
    return _call(source, a, c)


def linear(x, weight, bias=None, f=None, b=None, weight_f=None, weight_b=None,
           bias_f=None, bias_b=None, sbdb="ideal"):
    """x[..., K] · weightᵀ + bias, the bias added once after the sum."""
    x, weight = _codes(x), _codes(weight)
    element = _num(f, b)

    def other(of, ob):
        return _num(of, ob) if (of, ob) != (None, None) else element

    tx = _tensor(x.shape, element)
    tw = _tensor(weight.shape, other(weight_f, weight_b))
    ty = _tensor(x.shape[:-1] + (weight.shape[0],), element)
    mode = f"sbdb {sbdb} " if sbdb != "ideal" else ""
    args, operands, types, inputs = f"%x: {tx}, %w: {tw}", "%x, %w", f"{tx}, {tw}", [x, weight]
    if bias is not None:
        bias = _codes(bias)
        tb = _tensor(bias.shape, other(bias_f, bias_b))
        args += f", %b: {tb}"
        operands += " bias %b"
        types += f", {tb}"
        inputs.append(bias)
    source = f"""func.func @main({args}) -> {ty} {{
  %0 = lns.linear {operands} {mode}: {types} -> {ty}
  return %0 : {ty}
}}"""
    return _call(source, *inputs)
