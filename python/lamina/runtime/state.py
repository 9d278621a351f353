"""The compiled module's state_dict under exactly the model's keys, and
loading one into it.

The keys are the model's own ``state_dict()`` keys: tied parameters under
every name they have (nanoGPT's ``lm_head.weight``), persistent buffers
(``attn.bias``), ``persistent=False`` buffers left out, as PyTorch does.
A parameter the compiled module holds in its own form stands under the
model's key as the model would hold it:

- on several ranks, a sharded parameter is this rank's block (a checkpoint
  per rank, as Megatron's); loading takes a block or the whole tensor;
- a parameter of a layer a schedule replaced by its LNS variant stands as
  that layer's are: its codes ``<name>_lns`` and base ``<name>_base``.
"""

import collections

import torch

from ..lns.parameters import LnsParameters
from .training import parameter_block


def _compiled_tensors(compiled, model, state):
    """Model key → the tensor the compiled module computes with, for the
    keys of `model`'s `state` (its ``state_dict(keep_vars=True)``) whose
    tensor is the compiled module's own (a parameter; an alias of a tied
    one)."""
    own = dict(compiled.named_parameters())
    first_name = {}
    for name, parameter in model.named_parameters():
        first_name[id(parameter)] = name
    tensors = {}
    for key, tensor in state.items():
        name = first_name.get(id(tensor))
        if name is None:
            continue  # a buffer: the model's own
        for candidate in (key, name, f"{name}_lns"):
            if candidate in own:
                tensors[key] = own[candidate]
                break
    return tensors


def state_dict(compiled, model, destination=None, prefix="",
               keep_vars=False):
    """`compiled`'s state under `model`'s keys (see the module docstring)."""
    state = model.state_dict(keep_vars=True)
    result = collections.OrderedDict() if destination is None \
        else destination
    metadata = getattr(state, "_metadata", None)
    if metadata is not None and destination is None:
        result._metadata = metadata
    tensors = _compiled_tensors(compiled, model, state)
    for key, tensor in state.items():
        tensor = tensors.get(key, tensor)
        if LnsParameters.holds(tensor):
            entries = {f"{key}_lns": tensor,
                       f"{key}_base": compiled.get_buffer(f"{key}_base")}
        else:
            entries = {key: tensor}
        for name, value in entries.items():
            result[prefix + name] = value if keep_vars else value.detach()
    return result


def load_state_dict(compiled, model, state, strict=True):
    """Loads `state` (the model's keys) into `compiled` and `model`: the
    next call computes with it. Returns torch's (missing_keys,
    unexpected_keys); with `strict`, raises as torch does."""
    current = model.state_dict(keep_vars=True)
    tensors = _compiled_tensors(compiled, model, current)
    for_model = collections.OrderedDict(state)
    if hasattr(state, "_metadata"):
        for_model._metadata = state._metadata
    lns = {}  # model key → (codes, base) given
    for key, tensor in tensors.items():
        if LnsParameters.holds(tensor) and f"{key}_lns" in state:
            lns[key] = (for_model.pop(f"{key}_lns"),
                        for_model.pop(f"{key}_base", None))
            # The model keeps its float tensor.
            for_model.setdefault(key, current[key].detach())
    for key, value in state.items():
        tensor = tensors.get(key)
        model_tensor = current.get(key)
        if tensor is None or tensor is model_tensor or \
                LnsParameters.holds(tensor) or \
                not isinstance(value, torch.Tensor):
            continue
        if tuple(value.shape) == tuple(tensor.shape) and \
                tuple(value.shape) != tuple(model_tensor.shape):
            # This rank's block: the model keeps its whole tensor.
            for_model[key] = model_tensor.detach()
    buffers = {key: t.detach().clone() for key, t in current.items()
               if key not in tensors}
    result = model.load_state_dict(for_model, strict)
    with torch.no_grad():
        for key, value in state.items():
            tensor = tensors.get(key)
            if tensor is None or tensor is current.get(key) or \
                    LnsParameters.holds(tensor):
                continue
            tensor.copy_(_own_form(tensor, value))
        for key, (codes, base) in lns.items():
            tensors[key].copy_(codes)
            if base is not None:
                compiled.get_buffer(f"{key}_base").copy_(base)
    # (torch loads buffers in place: `current` holds their new values.)
    changed = any(not torch.equal(current[key], before)
                  for key, before in buffers.items())
    return result, changed


def _own_form(tensor, value):
    """`value` (the model's form of a key) in the form `tensor` holds."""
    if tuple(value.shape) == tuple(tensor.shape):
        return value
    block = getattr(tensor, "_lamina_block", None)
    if block is None:
        raise RuntimeError(f"a tensor of shape {list(value.shape)} cannot "
                           f"load into one of {list(tensor.shape)}")
    return parameter_block(value, *block).detach()
