"""Incremental decoding of a traced language model: the graphs of its
prefill and of its one-token decode step with a key/value cache.

A model called on a growing sequence of tokens (its own ``generate``)
computes every position again at every call. What one more token changes
is found by tracing the model at two lengths, the longest it takes (L) and
L - 1, and comparing the traces node by node: an axis whose size follows
the length is a *sequence axis*.

- A value with one sequence axis is a *row* value, computed position by
  position: the decode step computes it for the new position only.
- A value with two (the last two axes) is a *score* value: query positions
  by key positions. The decode step computes its one query row against
  all L key positions.
- The right operand of a matmul that makes or consumes scores (Kᵀ of
  ``q @ k.transpose(-2, -1)``, V of ``att @ v``) is *cached*: the step
  takes its L positions as an input, writes the new position's row into it
  (:func:`write_row`, at the position the step takes as an input) and
  returns the result, the next step's cache.
- A constant with sequence axes (a causal mask sliced from a buffer, rotary
  tables, ``torch.arange(t)``) becomes an input: its row at the new
  position, which the caller slices from the traced value.
- A number in an op's arguments that follows the length (``view(B, T, nh,
  hs)``) becomes the step's length, 1.

What the analysis cannot place (a value with other length-dependent sizes,
an op reducing over positions other than selecting the last, a result that
has a sequence axis) raises UnsupportedOperationError naming it: the model
is then called whole. The caller checks the steps against the model once
before it uses them (runtime/generation.py).
"""

import operator

import torch
from torch import fx

from ..errors import UnsupportedOperationError
from .tracer import Tracer, _value_of, run_node

_MATMULS = {operator.matmul, torch.matmul, "matmul"}


def unsupported(what):
    """The error saying why a model's calls cannot be served from a key /
    value cache."""
    return UnsupportedOperationError(
        f"generation with a key/value cache: {what}")


def _fail(what):
    raise unsupported(what)


def _sequence_axes(longest, shorter, length):
    """The axes of a value traced at `length` (`longest`) and at `length` -
    1 (`shorter`) whose size is the length."""
    if longest.dim() != shorter.dim():
        return None
    axes = []
    for axis, (a, b) in enumerate(zip(longest.shape, shorter.shape)):
        if a == b:
            continue
        if (a, b) != (length, length - 1):
            _fail(f"a value of shape {tuple(longest.shape)} whose size "
                  f"{a} follows the sequence length otherwise than as a "
                  "sequence axis")
        axes.append(axis)
    return tuple(axes)


def _is_last_row(node, axis):
    """Whether `node` selects the last position along `axis` of its
    operand (``h[:, [-1], :]``, ``h[:, -1]``)."""
    if node.op != "call_function" or node.target is not operator.getitem:
        return False
    index = node.args[1]
    index = index if isinstance(index, tuple) else (index,)
    if Ellipsis in index or len(index) <= axis:
        return False
    if any(i != slice(None) for i in index[:axis]):
        return False
    last = index[axis]
    return last == -1 or last == [-1] or last == slice(-1, None, None)


def row_at(value, axis, position):
    """The input of the decode step at `position` for a constant traced as
    `value` with its (query) sequence axis `axis`: its row there (booleans
    as 0 / 1 codes)."""
    row = value.narrow(axis, position, 1)
    return (row.to(torch.int64) if row.dtype == torch.bool else row) \
        .contiguous()


def write_row(cache, row, position, axis):
    """`cache` with `row` (size 1 along `axis`) written at `position` (an
    int64 tensor [1]) along `axis`: ``tensor.insert_slice`` in a program."""
    return cache.index_copy(axis, position, row)


class Step:
    """The decode step of a model at maximum length `length`: its graph
    and what its inputs after the tokens are."""

    def __init__(self, graph, rows, caches):
        self.graph = graph
        # (traced value, its sequence axis) of each constant whose row at
        # the new position is an input, in input order after the tokens.
        self.rows = rows
        # (shape, sequence axis, dtype) of each cache, in input order after
        # the rows and the position.
        self.caches = caches


class Analysis:
    """The traces of `model` at the longest length and one less, matched
    node by node: each value's sequence axes, the cached operands."""

    def __init__(self, longest, shorter, length):
        self.graph = longest
        self.length = length
        nodes, others = list(longest.nodes), list(shorter.nodes)
        if len(nodes) != len(others) or any(
                (a.op, a.target) != (b.op, b.target)
                for a, b in zip(nodes, others)):
            _fail("the model's trace changes with the sequence length")
        self.twin = dict(zip(nodes, others))
        self.axes = {}
        for node in nodes:
            value = node.meta.get("lamina_value")
            if isinstance(value, torch.Tensor):
                axes = _sequence_axes(value,
                                      self.twin[node].meta["lamina_value"],
                                      length)
                if axes is None:
                    _fail(f"'{node.name}' changes rank with the length")
                self.axes[node] = axes
        self.cached = {}  # matmul node → its cached right operand
        for node in nodes:
            self._check(node)

    def axes_of(self, value):
        return self.axes.get(value, ()) if isinstance(value, fx.Node) else ()

    def _check(self, node):
        if node.op == "placeholder":
            if node in self.axes and self.axes[node] != (1,):
                _fail(f"input '{node.target}' is not [batch, positions]")
            return
        if node.op == "output":
            for result in _nodes_in(node.args):
                if self.axes_of(result):
                    _fail(f"result '{result.name}' holds every position "
                          "(a decode step computes the last one)")
            return
        axes = self.axes.get(node)
        if axes is None:
            return
        rank = node.meta["lamina_value"].dim()
        if len(axes) > 2 or (len(axes) == 2 and axes != (rank - 2,
                                                         rank - 1)):
            _fail(f"'{node.name}' has sequence axes {axes} (scores are "
                  "queries × keys on the last two axes)")
        if node.op in ("call_function", "call_method") and \
                node.target in _MATMULS:
            self._check_matmul(node)
            return
        for operand in _nodes_in((node.args, node.kwargs)):
            inner = self.axes_of(operand)
            if len(inner) > len(axes) and not (
                    len(inner) == 1 and not axes and
                    _is_last_row(node, inner[0])):
                _fail(f"'{node.name}' ({_describe(node)}) reduces over "
                      "positions")

    def _check_matmul(self, node):
        left, right = node.args[0], node.args[1]
        la, ra, out = self.axes_of(left), self.axes_of(right), \
            self.axes[node]
        if not ra:
            if la and out != la:
                _fail(f"'{node.name}' contracts the positions of its left "
                      "operand")
            return
        nl = left.meta["lamina_value"].dim()
        nr = right.meta["lamina_value"].dim()
        n = node.meta["lamina_value"].dim()
        makes_scores = la == (nl - 2,) and ra == (nr - 1,) and \
            out == (n - 2, n - 1)
        reads_scores = la == (nl - 2, nl - 1) and ra == (nr - 2,) and \
            out == (n - 2,)
        if not (makes_scores or reads_scores):
            _fail(f"'{node.name}' multiplies positions otherwise than as "
                  "attention (q @ kᵀ, scores @ v)")
        self.cached[node] = right

    def step(self):
        """The decode step's graph: inputs the tokens of the new position,
        the rows of each constant with a sequence axis, the new position
        (int64 [1]), then each cache's L positions; results the model's,
        then the caches with the new position's rows written."""
        graph = fx.Graph()
        env, rows, caches = {}, [], []
        constants = [n for n in self.graph.nodes if n.op == "get_attr" and
                     self.axes_of(n)]
        for node in self.graph.nodes:
            if node.op == "placeholder":
                env[node] = _copy(graph, node, node.args, node.kwargs)
        for node in constants:
            value = node.meta["lamina_value"]
            axis = self.axes[node][0]
            env[node] = _placeholder(graph, f"{node.name}_row", node)
            if value.dtype == torch.bool:
                # Programs take no i1 arguments: 0 / 1 codes compared.
                env[node] = _copy(graph, node, (env[node], 0), {},
                                  operator.ne)
            rows.append((value, axis))
        tokens = next(n for n in self.graph.nodes if n.op == "placeholder")
        position = _placeholder(graph, "position", tokens)
        written = {}
        for operand in self.cached_operands():
            value = operand.meta["lamina_value"]
            axis = self.axes[operand][0]
            written[operand] = _placeholder(graph, f"{operand.name}_cache",
                                            operand)
            caches.append((tuple(value.shape), axis, value.dtype))
        full = {}
        for node in self.graph.nodes:
            if node.op == "placeholder" or node in env:
                continue
            if node.op == "output":
                results, needed = _map(node.args[0], env)
                graph.output((results, needed,
                              tuple(full[o] for o in written)))
                continue
            args = self._arguments(node, node.args, self.twin[node].args,
                                   env)
            kwargs = self._arguments(node, node.kwargs,
                                     self.twin[node].kwargs, env)
            if node in self.cached:
                args = (args[0], full[self.cached[node]]) + tuple(args[2:])
            env[node] = _copy(graph, node, args, kwargs)
            if node in written:
                full[node] = _copy(graph, node, (
                    written[node], env[node], position, self.axes[node][0]),
                    {}, write_row)
        return Step(graph, rows, caches)

    def cached_operands(self):
        """The cached operands, in the order of the step's caches."""
        return list(dict.fromkeys(self.cached.values()))

    def _arguments(self, node, longest, shorter, env):
        """`node`'s arguments for the step: nodes mapped, numbers that
        follow the length made the step's."""
        if isinstance(longest, fx.Node):
            return env[longest]
        if isinstance(longest, (tuple, list)):
            return type(longest)(self._arguments(node, a, b, env)
                                 for a, b in zip(longest, shorter))
        if isinstance(longest, dict):
            return {k: self._arguments(node, v, shorter[k], env)
                    for k, v in longest.items()}
        if isinstance(longest, slice):
            return slice(*(self._arguments(node, a, b, env) for a, b in
                           zip((longest.start, longest.stop, longest.step),
                               (shorter.start, shorter.stop, shorter.step))))
        if longest == shorter or isinstance(longest, bool):
            return longest
        if isinstance(longest, int) and len(self.axes_of(node)) < 2:
            length = self.length
            if longest % length == 0 and shorter % (length - 1) == 0 and \
                    longest // length == shorter // (length - 1):
                return longest // length
        _fail(f"'{node.name}' ({_describe(node)}) takes {longest!r}, which "
              "follows the sequence length")


def _describe(node):
    return getattr(node.target, "__name__", str(node.target))


def _nodes_in(structure):
    found = []
    fx.graph.map_arg(structure, found.append)
    return found


def _map(structure, env):
    return fx.graph.map_arg(structure, lambda n: env[n])


def _copy(graph, source, args, kwargs, target=None):
    """A copy of `source` in `graph` on `args` and `kwargs`, or a call of
    function `target` in its place; either in its module (path)."""
    if target is not None:
        node = graph.create_node("call_function", target, args, kwargs)
        node.meta["lamina_path"] = source.meta.get("lamina_path", "")
        return node
    node = graph.create_node(source.op, source.target, args, kwargs,
                             name=source.name)
    for key in ("lamina_path", "lamina_module", "lamina_constant"):
        if key in source.meta:
            node.meta[key] = source.meta[key]
    return node


def _placeholder(graph, name, source):
    node = graph.create_node("placeholder", name, (), {}, name=name)
    node.meta["lamina_path"] = source.meta.get("lamina_path", "")
    return node


def with_results(graph, extra):
    """`graph` (traced at any length, node for node like the analysed one)
    returning also the values of `extra` (nodes of it)."""
    output = next(n for n in graph.nodes if n.op == "output")
    results, needed = output.args[0]
    output.args = ((results, needed, tuple(extra)),)
    return graph


def evaluate(graph, model, inputs):
    """Records on every node of `graph` (nodes of `model`'s trace) its value
    on `inputs`, one per placeholder, as the tracer does; a constant keeps
    the value it was traced with."""
    inputs = iter(inputs)
    for node in graph.nodes:
        if node.op == "output":
            continue
        args, kwargs = _value_of(node.args), _value_of(node.kwargs)
        if node.op == "placeholder":
            value = next(inputs)
        elif node.op == "get_attr" and "lamina_value" in node.meta:
            value = node.meta["lamina_value"]
        elif node.op == "call_module" and "lamina_module" in node.meta:
            value = node.meta["lamina_module"](*args, **kwargs)
        else:
            value = run_node(model, node.op, node.target, args, kwargs)
        Tracer._record(node, value)
    return graph
