"""PyTorch models → lamina IR, through torch.fx.

``import_model(model, example_inputs)`` traces the model at the inputs'
shapes (:mod:`.tracer`), walks the graph (:mod:`.emitter`) and converts each
node through the tables of :mod:`.converters`, one module per op family,
printing typed IR with :mod:`.ir`. ``docs/importer-coverage.md`` lists what
imports. Anything else is an UnsupportedOperationError naming the op and
the module it is in.

Every parameter becomes an argument of the imported function, after the
model's inputs, in the order of first use; a program with an active dropout
takes the dropout seed (i64) last. Module paths are `named_modules` names.
"""

from ..errors import InputError, UnsupportedOperationError
from .model import ImportedModel, import_model
from .converters import is_layer
from .tracer import unsharded_fused_qkv

__all__ = ["ImportedModel", "InputError", "UnsupportedOperationError",
           "import_model", "is_layer", "unsharded_fused_qkv"]
