"""Slapo's helpers for module hooks and schedules: the hooks a module
carries by kind, moving them to a replacement, and small predicates."""

import importlib
import types

from torch import nn

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
    """Moves the hooks of the modules a fusion replaces onto `new_mod`: the
    first module's fwd_pre and bwd_post hooks, the last one's fwd_post
    hooks. A hook anywhere else (a module inside the chain, or in a
    horizontal fusion of several chains) has no place in the fused module:
    RuntimeError naming it."""
    chains = list(subgraphs)
    if len(chains) > 1:
        for chain in chains:
            for _, node in chain:
                if node.op != "call_module":
                    continue
                module = sch.get_module(node.target)
                for kind in HOOK_TYPE_TO_ATTR:
                    if has_hook(module, kind):
                        raise RuntimeError(
                            f"cannot fuse horizontally: module {node.target} "
                            f"has a {kind} hook")
        return
    chain = chains[0]
    last = len(chain) - 1
    for index, (_, node) in enumerate(chain):
        if node.op != "call_module":
            continue
        module = sch.get_module(node.target)
        if index == 0:
            if has_hook(module, "fwd_post"):
                raise RuntimeError(f"cannot move the fwd_post hook of "
                                   f"{node.target}, the first fused module")
            transfer_hooks(module, new_mod, ["fwd_pre", "bwd_post"])
        elif index == last:
            if has_hook(module, "fwd_pre") or has_hook(module, "bwd_post"):
                raise RuntimeError(f"cannot move the fwd_pre or bwd_post "
                                   f"hooks of {node.target}, the last fused "
                                   "module")
            transfer_hooks(module, new_mod, ["fwd_post"])
        elif any(has_hook(module, kind) for kind in HOOK_TYPE_TO_ATTR):
            raise RuntimeError(f"cannot keep the hooks of {node.target}, "
                               "inside the fused chain")


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
