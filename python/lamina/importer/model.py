"""import_model: a PyTorch model traced into a lamina module, and the
ImportedModel describing how to call it."""

from torch import fx

from . import ir
from .emitter import Emitter
from .tracer import trace


class ImportedModel:
    """The result of importing: the IR text and how to call it.

    `argument_types` and `result_types` are the function's types
    (:class:`lamina.importer.ir.TensorType`, the seed's
    :data:`lamina.importer.ir.I64`), in order.
    """

    def __init__(self, text, entry, parameters, num_inputs, has_seed,
                 num_results, single_result, argument_types=(),
                 result_types=()):
        self.text = text
        self.entry = entry
        # (name, tensor) of each parameter argument, in argument order.
        self.parameters = parameters
        self.num_inputs = num_inputs
        self.has_seed = has_seed
        self.num_results = num_results
        self.single_result = single_result
        self.argument_types = list(argument_types)
        self.result_types = list(result_types)


def import_model(model, example_inputs, world_size=1):
    """Traces `model` on `example_inputs` (tensors fixing the shapes) into
    a lamina module declaring `world_size` ranks."""
    graph = trace(model, example_inputs)
    emitter = Emitter(model)
    output = None
    for node in graph.nodes:
        if node.op == "output":
            output = node
            continue
        emitter.visit(node)
    results = emitter.results(output)
    arguments = emitter.arguments()
    text = ir.function("forward", arguments, results, emitter.builder.body(),
                       world_size)
    single = isinstance(output.args[0], fx.Node)
    return ImportedModel(text, "forward", emitter.parameters,
                         len(emitter.inputs), emitter.seed_value is not None,
                         len(results), single and len(results) == 1,
                         [a.type for a in arguments],
                         [r.type for r in results])
