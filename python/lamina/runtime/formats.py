"""Number formats of a compiled model's parameters, so that the autograd
over compiled programs (training.py) names none of them: how each format's
parameters are registered on the built module, under which name, and how
their gradients accumulate. Float parameters are PyTorch's own; LNS ones
are ``lamina.lns.parameters``. A format is a class with the static methods
below; the first that holds a parameter is its format.
"""

from ..lns.layers import LNSModule
from ..lns.parameters import LnsParameters


class FloatParameters:
    """PyTorch's parameters: registered under their names, their gradients
    handed to autograd, which adds them."""

    @staticmethod
    def holds(parameter):
        return True

    @staticmethod
    def registered_name(name):
        return name

    @staticmethod
    def copy_registration(module, model):
        pass

    @staticmethod
    def register(module, name, tensor, base):
        return False

    @staticmethod
    def accumulate(parameter, gradient):
        return gradient


FORMATS = (LnsParameters, FloatParameters)

# What a module of the compiled model's tree derives from, so that each
# format's parameters read as its tensors there (an LNS layer's weight as
# an LNSTensor).
MODULE_BASES = (LNSModule,)


def of(parameter):
    """The format of `parameter`."""
    return next(f for f in FORMATS if f.holds(parameter))


def registered_name(name, own):
    """The name under which `own` (a module's named parameters) holds the
    model's parameter `name` in whichever format (PyTorch's own name
    first); None if it does not."""
    for number_format in reversed(FORMATS):
        key = number_format.registered_name(name)
        if key in own:
            return key
    return None


def copy_registration(module, model):
    """What each format registers besides its parameters (an LNS layer's
    names and bases), from `model` onto the compiled `module`'s tree."""
    for number_format in FORMATS:
        number_format.copy_registration(module, model)


def register_parameters(module, model, imported, scheduled):
    """Registers on the compiled `module`'s tree, in place of each of
    `model`'s Parameters that the `scheduled` module takes in another
    format (a layer replaced by its LNS variant takes LNS codes), that
    format's parameter. The first compile converts the model's weights;
    later compiles keep them."""
    bases = scheduled.argument_lns_bases(
        imported.entry)[imported.num_inputs:]
    names = {id(p): n for n, p in model.named_parameters()}
    own = dict(module.named_parameters())
    for (_, tensor), base in zip(imported.parameters, bases):
        name = names.get(id(tensor))
        if name is None or own.get(name) is not tensor:
            continue  # a buffer, or converted already
        for number_format in FORMATS:
            if number_format.register(module, name, tensor, base):
                break
