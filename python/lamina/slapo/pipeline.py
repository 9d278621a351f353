"""Slapo's pipeline partition of a traced model: the modules cut by
`cut_pipeline_stage` end stages, and the top module becomes one call of
each stage's module (`submod_0`, `submod_1`, ...) in order, the shape
DeepSpeed's pipeline engine takes. Lamina compiles the model either way (its
own stages come from the cuts); this gives Slapo's users the module
structure their scripts expect. And which parameters are tied across
stages."""

import operator

from torch import fx
from torch.fx.passes.split_module import split_module

from ..errors import ScheduleError

_BOUNDARY = "lamina_stage_end"


def generate_pipeline_partition(sch):
    """Splits the traced top module of `sch` after each cut module
    (`sch[...].cut_pipeline_stage()`), through every traced module between
    the cut and the top: each is split at the cut and its pieces inlined
    into its caller. Returns the top schedule, whose children are the
    stages `submod_0`, `submod_1`, ..."""
    top = sch.get_top_schedule()
    cuts = [path for _, child in top.named_schedules()
            for path in child.metadata.primitives["cut_pipeline_stage"]]
    if not cuts:
        raise ScheduleError("generate_pipeline_partition: no module is cut "
                            "(cut_pipeline_stage)")
    if not isinstance(top.mod, fx.GraphModule):
        raise ScheduleError("generate_pipeline_partition needs the top "
                            "module traced (sch.trace_until(...))")
    pending = set()
    for path in cuts:
        owner = _mark_cut(top, path)
        pending.add(owner)
    # Deepest first: a split inlined into its caller marks the caller.
    for owner in sorted(pending, key=lambda s: -s.path.count(".") - bool(
            s.path)):
        while owner.parent is not None:
            owner = _inline_split(owner)
    stages = _split(top.mod)
    top._swap_module(stages)
    top._model_changed()
    return top


def _mark_cut(top, path):
    """Marks the node calling the module at `path` as ending a stage, in
    the traced module that calls it; that module's schedule."""
    for owner_path in _ancestors(path):
        try:
            owner = top[owner_path] if owner_path else top
        except KeyError:  # a ModuleList: its elements are its parent's
            continue
        if not isinstance(owner.mod, fx.GraphModule):
            continue
        target = path[len(owner_path) + 1:] if owner_path else path
        for node in owner.mod.graph.nodes:
            if node.op == "call_module" and node.target == target:
                node.meta[_BOUNDARY] = True
                return owner
    raise ScheduleError(f"generate_pipeline_partition: no traced module "
                        f"calls the cut module '{path}'; trace down to it "
                        "(trace_until)")


def _ancestors(path):
    """The paths above `path`, nearest first ("" last)."""
    parts = path.split(".")
    return [".".join(parts[:i]) for i in range(len(parts) - 1, -1, -1)]


def _split(graph_module):
    """`graph_module` split after each node marked as a stage end: a
    GraphModule calling `submod_0`, `submod_1`, ... in order."""
    stage, stages = 0, {}
    for node in graph_module.graph.nodes:
        stages[node] = stage
        if node.meta.get(_BOUNDARY):
            stage += 1
    return split_module(graph_module, None, stages.__getitem__,
                        keep_original_order=True)


def _inline_split(owner):
    """Splits `owner`'s module at its marked nodes and puts the pieces'
    calls in place of the call of `owner` in its parent's graph, each but
    the last ending a stage there (the last one does if the call did).
    Returns the parent's schedule."""
    parent = owner.parent
    caller = parent.mod
    if not isinstance(caller, fx.GraphModule):
        raise ScheduleError(f"generate_pipeline_partition: '{parent.path}' "
                            "is not traced; trace down to the cut modules")
    pieces = _split(owner.mod)
    call = next((n for n in caller.graph.nodes
                 if n.op == "call_module" and n.target == owner.name), None)
    if call is None:
        raise ScheduleError(f"generate_pipeline_partition: '{parent.path}' "
                            f"does not call '{owner.name}'")
    placeholders = [n for n in pieces.graph.nodes if n.op == "placeholder"]
    values = dict(zip(placeholders, list(call.args) +
                      list(call.kwargs.values())))
    ended = call.meta.get(_BOUNDARY, False)
    calls, result = [], None
    point = call
    for node in pieces.graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "output":
            result = fx.map_arg(node.args[0], values.__getitem__)
            continue
        if node.op == "call_module":
            name = _free_name(caller, node.target)
            caller.add_module(name, pieces.get_submodule(node.target))
        with caller.graph.inserting_after(point):
            copied = caller.graph.node_copy(node, values.__getitem__)
        if node.op == "call_module":
            copied.target = name
            calls.append(copied)
        values[node] = point = copied
    for index, copied in enumerate(calls):
        if index < len(calls) - 1 or ended:
            copied.meta[_BOUNDARY] = True
    if isinstance(result, (tuple, list)):
        _replace_unpacked(call, result)
    else:
        call.replace_all_uses_with(result)
    caller.graph.erase_node(call)
    caller.delete_all_unused_submodules()
    caller.graph.lint()
    caller.recompile()
    parent._build_children()
    return parent


def _replace_unpacked(call, results):
    """Uses of `call`'s tuple result, through getitem, become the pieces'
    values."""
    for user in list(call.users):
        if user.op == "call_function" and user.target == operator.getitem:
            user.replace_all_uses_with(results[user.args[1]])
            user.graph.erase_node(user)
    if call.users:
        raise ScheduleError("generate_pipeline_partition: a split module's "
                            "tuple result is used other than by indexing")


def _free_name(module, name):
    """`name`, or `name_1`, `name_2`, ... if `module` has that child."""
    candidate, index = name, 0
    while hasattr(module, candidate):
        index += 1
        candidate = f"{name}_{index}"
    return candidate


def analyze_tie_weights(top_mod, is_pipeline_partitioned):
    """{parameter: [(name, stage)]} of the parameters held under several
    names (tied weights). In a model partitioned into pipeline stages (the
    top module's children), only ties across stages count, each name
    relative to its stage; otherwise every name, stage 0."""
    if is_pipeline_partitioned:
        roots = [(stage, module) for stage, (_, module) in
                 enumerate(top_mod.named_children())]
    else:
        roots = [(0, top_mod)]
    places = {}  # id(parameter) → (parameter, [(name, stage)])
    for stage, root in roots:
        seen_in_stage = set()
        for name, parameter in _every_parameter(root):
            if is_pipeline_partitioned and id(parameter) in seen_in_stage:
                continue  # tied within the stage: one place there
            seen_in_stage.add(id(parameter))
            places.setdefault(id(parameter), (parameter, []))[1].append(
                (name, stage))
    return {parameter: names for parameter, names in places.values()
            if len(names) > 1}


def _every_parameter(module, prefix=""):
    """(name, parameter) of every place a parameter is held, tied ones
    under each of their names (named_parameters lists each once)."""
    for name, parameter in module._parameters.items():
        if parameter is not None:
            yield f"{prefix}{name}", parameter
    for name, child in module._modules.items():
        if child is not None:
            yield from _every_parameter(child, f"{prefix}{name}.")
