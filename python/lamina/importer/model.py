"""import_model: a PyTorch model traced into a lamina module, and the
ImportedModel describing how to call it."""

import torch

from . import ir
from ..errors import InputError
from .emitter import Emitter
from .formulas import recognise_gelu
from .rotary import recognise_rope
from .side_effects import recorded_side_effects
from .tracer import trace


class ImportedModel:
    """The result of importing: the IR text and how to call it.

    `argument_types` and `result_types` are the function's types
    (:class:`lamina.importer.ir.TensorType`, the seed's
    :data:`lamina.importer.ir.I64`), in order.
    """

    def __init__(self, text, entry, parameters, num_inputs, has_seed,
                 num_results, structure, argument_types=(),
                 result_types=(), index_bounds=(), located_text=None,
                 side_effects=()):
        self.text = text
        # The text with each op's module path as its location: what Lamina
        # parses (ops then carry `lamina.module`, which checkpoints of whole
        # modules read).
        self.located_text = located_text or text
        self.entry = entry
        # (name, tensor) of each parameter argument, in argument order.
        self.parameters = parameters
        self.num_inputs = num_inputs
        self.has_seed = has_seed
        self.num_results = num_results
        # What the model returns, with result indices for its tensors:
        # 0, (0, None), (0, 1), [0, (1, 2)] ...
        self.structure = structure
        self.argument_types = list(argument_types)
        self.result_types = list(result_types)
        # (input position, rows, ignored index or None, what) of the int64
        # inputs used as indices.
        self.index_bounds = list(index_bounds)
        # The attributes the model's forward sets (SideEffect).
        self.side_effects = list(side_effects)
        # The indices of results returned after the model's own and its
        # side effects' (import_graph's `extra`).
        self.extra_results = ()

    def restructure(self, results):
        """`results` (one per result of the function) in the structure the
        model returns."""
        return _restructure(self.structure, results)

    def apply_side_effects(self, model, results):
        """Sets the attributes the model's forward sets, with the values of
        the call that returned `results`."""
        for effect in self.side_effects:
            effect.apply(model, results)

    def check_indices(self, inputs):
        """Raises InputError if an input used as indices has one outside
        the rows (or classes) it indexes."""
        for position, bound, ignored, what in self.index_bounds:
            values = torch.as_tensor(inputs[position])
            bad = (values < 0) | (values >= bound)
            if ignored is not None:
                bad &= values != ignored
            if bool(bad.any()):
                first = values[bad].reshape(-1)[0].item()
                raise InputError(f"input {position} holds the index {first}, "
                                 f"outside the {bound} rows of {what}")


def _restructure(item, results):
    """`item` of a model's result structure with `results` in its places.
    (A module-level function: a nested one calling itself would be a
    reference cycle holding `results`, and with them the autograd graph and
    the values saved for its backward, until the cycle collector ran.)"""
    if item is None:
        return None
    if isinstance(item, int):
        return results[item]
    return type(item)(_restructure(i, results) for i in item)


def result_tensors(result):
    """The tensors of a model's result structure, in order (None left
    out)."""
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return [t for item in result for t in result_tensors(item)]
    return []


def trace_model(model, example_inputs):
    """(graph, side effects) of `model` traced on `example_inputs`: the
    graph's output returns the model's results, then the tensors its side
    effects need from each call."""
    effects = []
    with recorded_side_effects(model, effects):
        graph = trace(model, example_inputs)
    output = next(n for n in graph.nodes if n.op == "output")
    needed = [node for effect in effects for node in effect.nodes]
    output.args = ((output.args[0], tuple(needed)),)
    return graph, effects


def import_graph(model, graph, effects=(), world_size=1, entry="forward"):
    """The lamina module of a traced `graph` of `model` (every node holding
    its value; the output returning the model's results, the tensors
    `effects` need, and optionally a tuple of more results, whose indices
    become `extra_results`) as function `entry` declaring `world_size`
    ranks."""
    output = next(n for n in graph.nodes if n.op == "output")
    graph = recognise_rope(recognise_gelu(graph))
    emitter = Emitter(model)
    for node in graph.nodes:
        if node.op != "output":
            emitter.visit(node)
    results, (structure, effect_results, *extra) = emitter.results(output)
    indices = iter(effect_results)
    for effect in effects:
        effect.results = [next(indices) for _ in effect.nodes]
    arguments = emitter.arguments()
    text = ir.function(entry, arguments, results, emitter.builder.body(),
                       world_size)
    located = ir.function(entry, arguments, results,
                          emitter.builder.body(located=True), world_size)
    imported = ImportedModel(text, entry, emitter.parameters,
                             len(emitter.inputs),
                             emitter.seed_value is not None, len(results),
                             structure, [a.type for a in arguments],
                             [r.type for r in results],
                             emitter.index_bounds, located, effects)
    # The indices of the results the graph returns after the effects'.
    imported.extra_results = extra[0] if extra else ()
    imported.explicit_casts = [cast_last(node)
                               for node in emitter.result_nodes]
    return imported


# Tensor methods that only move or view elements, and those that cast them.
_MOVES = {"view", "reshape", "transpose", "permute", "contiguous", "squeeze",
          "unsqueeze", "flatten", "expand", "t"}
_CASTS = {"float", "double", "half", "bfloat16", "to", "type", "type_as"}


def cast_last(node):
    """Whether `node` is an explicit dtype cast (`.float()`, `.to(...)`,
    `.type_as(...)`), moved or viewed since: the dtype a result has under
    torch.autocast is then the one it names, which a cast to the traced
    dtype leaves out of the IR."""
    while node.op == "call_method" and node.target in _MOVES:
        node = node.args[0]
    return node.op == "call_method" and node.target in _CASTS


def import_model(model, example_inputs, world_size=1):
    """Traces `model` on `example_inputs` (tensors fixing the shapes) into
    a lamina module declaring `world_size` ranks."""
    graph, effects = trace_model(model, example_inputs)
    return import_graph(model, graph, effects, world_size)
