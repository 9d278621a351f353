"""Slapo's helpers for module hooks and schedules: the hooks a module
carries by kind, moving them to a replacement, and small predicates."""

import importlib
import types

from torch import nn

from ...errors import ScheduleError

# Slapo's hook kinds and the nn.Module attribute holding each.
HOOK_TYPE_TO_ATTR = {
    "fwd_pre": "_forward_pre_hooks",
    "fwd_post": "_forward_hooks",
    "bwd_post": "_backward_hooks",
}


def get_hooks(mod):
    """The hooks registered on `mod`: {"fwd_pre": [...], "fwd_post": [...],
    "bwd_post": [...]}, each in registration order."""
    return {kind: list(getattr(mod, attribute).values())
            for kind, attribute in HOOK_TYPE_TO_ATTR.items()}


def has_hook(mod, hook_type):
    """Whether `mod` has a hook of kind `hook_type`."""
    return bool(getattr(mod, HOOK_TYPE_TO_ATTR[hook_type]))


def transfer_hooks(old_mod, new_mod, hook_types=None):
    """Gives `new_mod` the hooks of `old_mod` of the kinds `hook_types`
    (all when None), replacing its own of those kinds."""
    for kind in HOOK_TYPE_TO_ATTR if hook_types is None else hook_types:
        attribute = HOOK_TYPE_TO_ATTR[kind]
        setattr(new_mod, attribute, getattr(old_mod, attribute))


def transfer_hooks_for_fusion(sch, subgraphs, new_mod):
    """Moves the hooks of the modules a fusion replaces onto `new_mod`
    (move_hooks), `subgraphs` as sch.find gives them."""
    move_hooks(sch.get_module, [[node for _, node in group]
                                for group in subgraphs], new_mod)


def move_hooks(module_of, chains, new_mod):
    """Moves the Python hooks of the modules the fx nodes `chains` call
    (`module_of(target)`) onto `new_mod`, as Slapo does: the first module's
    fwd_pre and bwd_post hooks, the last one's fwd_post hooks. A hook with
    no place in `new_mod` (inside the chain, in a horizontal replacement of
    several chains, or any when `new_mod` is a function) raises
    ScheduleError."""
    calls = [[n for n in chain if n.op == "call_module"] for chain in chains]
    if len(calls) > 1 or not isinstance(new_mod, nn.Module):
        for node in (n for chain in calls for n in chain):
            if any(has_hook(module_of(node.target), kind)
                   for kind in HOOK_TYPE_TO_ATTR):
                raise ScheduleError(
                    f"module '{node.target}' has Python hooks, which cannot "
                    "move onto a function or a horizontal replacement")
        return
    chain = calls[0]
    for index, node in enumerate(chain):
        module = module_of(node.target)
        first, last = index == 0, index == len(chain) - 1
        movable = ([k for k in ("fwd_pre", "bwd_post") if first] +
                   (["fwd_post"] if last else []))
        misplaced = [k for k in HOOK_TYPE_TO_ATTR
                     if k not in movable and has_hook(module, k)]
        if misplaced:
            raise ScheduleError(
                f"the {misplaced[0]} hooks of module '{node.target}' have no "
                "place in the new module (only the first module's fwd_pre "
                "and bwd_post hooks and the last one's fwd_post hooks move)")
        transfer_hooks(module, new_mod,
                       [k for k in movable if has_hook(module, k)])


def is_lambda_function(obj):
    """Whether `obj` is a function written as a lambda."""
    return isinstance(obj, types.LambdaType) and obj.__name__ == "<lambda>"


def is_module_list(module, name="", parent=None):
    """Whether `module` is a list of modules (nn.ModuleList or an
    nn.Sequential of numbered children used as one)."""
    if isinstance(module, nn.ModuleList):
        return True
    return isinstance(module, nn.Sequential) and bool(module._modules) and \
        all(key.isdigit() for key in module._modules)


def importlib_or_none(name):
    """The module `name`, or None when it cannot be imported."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None
