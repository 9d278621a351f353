"""Graph surgery on traced modules: a found subgraph replaced by a call of
a module or a function, or wrapped into a module of its own (fuse,
checkpoint)."""

import inspect
import operator

from torch import fx, nn

from ..errors import ScheduleError
from .utils import common


def _unique_name(module, name):
    """`name_i` for the first i neither used in `module` nor handed out
    before (a replace that failed took its name, as Slapo's does, though
    it leaves no module behind)."""
    taken = module.__dict__.setdefault("_lamina_names_given", set())
    names = dict(module.named_modules())
    index = 0
    while f"{name}_{index}" in names or f"{name}_{index}" in taken:
        index += 1
    taken.add(f"{name}_{index}")
    return f"{name}_{index}"


def _normalize(target_ops):
    """[[(parent, node)]]: subgraphs from find(pattern), nodes from
    find(regex), or one (parent, node)."""
    if isinstance(target_ops, tuple) and len(target_ops) == 2 and \
            isinstance(target_ops[1], fx.Node):
        return [[target_ops]]
    if not isinstance(target_ops, list) or not target_ops:
        raise ScheduleError("replace: target_ops must be what find returned "
                            "(a non-empty list of subgraphs or nodes)")
    if all(isinstance(item, tuple) for item in target_ops):
        return [[item] for item in target_ops]
    return [list(group) for group in target_ops]


def _owner(sch, parent):
    module = sch.mod.get_submodule(parent) if parent else sch.mod
    if not isinstance(module, fx.GraphModule):
        raise ScheduleError(f"'{parent}' is not traced; find its subgraphs "
                            "after sch.trace()")
    return module, sch[parent] if parent else sch


def _external_inputs(nodes):
    inputs = []
    for node in nodes:
        for arg in node.all_input_nodes:
            if arg not in nodes and arg not in inputs:
                inputs.append(arg)
    return inputs


def _check_closed(nodes):
    """Only the last node of a vertical subgraph may be used outside it."""
    for node in nodes[:-1]:
        outside = [u for u in node.users if u not in nodes]
        if outside:
            raise ScheduleError(
                f"the subgraph's node '{node.name}' is also used by "
                f"'{outside[0].name}' outside it; a replaced subgraph may "
                "only be used through its last node")


def _required_arguments(callee):
    try:
        signature = inspect.signature(
            callee.forward if isinstance(callee, nn.Module) else callee)
    except (TypeError, ValueError):
        return None
    if any(p.kind == p.VAR_POSITIONAL for p in signature.parameters.values()):
        return None  # takes any number (a wrapper)
    return [name for name, p in signature.parameters.items()
            if p.default is inspect.Parameter.empty and
            p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _vertical(graph_module, nodes, callee, target, concrete_args):
    _check_closed(nodes)
    inputs = _external_inputs(nodes)
    concrete_args = dict(concrete_args or {})
    required = _required_arguments(callee)
    if required is not None and \
            len(inputs) + len(concrete_args) != len(required):
        raise ScheduleError(
            f"The number of arguments (w/o default values) of the new module "
            f"({len(required)}) does not match the number of arguments of "
            f"the original subgraph ({len(inputs)}). Please use "
            "`concrete_args` to specify the arguments.")
    graph = graph_module.graph
    with graph.inserting_after(nodes[-1]):
        if target is None:
            call = graph.call_function(callee, tuple(inputs), concrete_args)
        else:
            call = graph.call_module(target, tuple(inputs), concrete_args)
    nodes[-1].replace_all_uses_with(call)
    for node in reversed(nodes):
        graph.erase_node(node)


def _horizontal(graph_module, groups, callee, target):
    graph = graph_module.graph
    first = groups[0][0]
    last = max((n for group in groups for n in group),
               key=list(graph.nodes).index)
    with graph.inserting_after(last):
        if target is None:
            call = graph.call_function(callee, first.args, first.kwargs)
        else:
            call = graph.call_module(target, first.args, first.kwargs)
    with graph.inserting_after(call):
        for index, group in enumerate(groups):
            _check_closed(group)
            item = graph.call_function(operator.getitem, (call, index))
            group[-1].replace_all_uses_with(item)
    for group in groups:
        for node in reversed(group):
            graph.erase_node(node)


def _rebuilt(graph_module):
    graph_module.graph.lint()
    graph_module.recompile()


def replace(sch, callee, target_ops, name, concrete_args, is_function):
    """Replaces `target_ops` (found in this schedule's traced module) by a
    call of `callee`."""
    groups = _normalize(target_ops)
    parents = {parent for group in groups for parent, _ in group}
    if len(parents) != 1:
        raise ScheduleError("replace: the subgraphs lie in different modules "
                            f"({sorted(parents)})")
    graph_module, owner = _owner(sch, parents.pop())
    node_groups = [[node for _, node in group] for group in groups]
    # (Lamina compiles no Python hook: a model still holding one when it is
    # built raises UnsupportedOperationError there.)
    common.move_hooks(graph_module.get_submodule, node_groups, callee)
    target = None
    if not is_function:
        target = _unique_name(graph_module,
                              name or type(callee).__name__.split(".")[-1])
        graph_module.add_module(target, callee)
    try:
        if len(node_groups) == 1:
            _vertical(graph_module, node_groups[0], callee, target,
                      concrete_args)
        else:
            if concrete_args:
                raise ScheduleError("concrete_args is not supported for "
                                    "horizontal fusion")
            _horizontal(graph_module, node_groups, callee, target)
    except ScheduleError:
        if target is not None:
            delattr(graph_module, target)
        raise
    _rebuilt(graph_module)
    owner._build_children()
    sch._model_changed()
    return owner[target] if target is not None else owner


def calls_module(sch, subgraph, accept):
    """Whether a node of `subgraph` calls a module that `accept` takes."""
    for group in _normalize(subgraph):
        for parent, node in group:
            if node.op == "call_module":
                owner, _ = _owner(sch, parent)
                if accept(owner.get_submodule(node.target)):
                    return True
    return False


def _one_vertical_subgraph(sch, subgraph, name):
    """(the traced module holding it, its (parent, node) pairs) of the one
    vertical subgraph of `subgraph`, checked to be used only through its
    last node."""
    groups = _normalize(subgraph)
    if len(groups) != 1:
        raise ScheduleError(f"only one vertical subgraph can be wrapped into "
                            f"{name}, got {len(groups)}")
    graph_module, _ = _owner(sch, groups[0][0][0])
    _check_closed([node for _, node in groups[0]])
    return graph_module, list(groups[0])


def wrap(sch, subgraph, name, wrapper=None):
    """Puts the one vertical subgraph of `subgraph` into a GraphModule of
    its own (inside `wrapper(graph_module)` when given), called in its
    place; its schedule."""
    graph_module, group = _one_vertical_subgraph(sch, subgraph, name)
    nodes = [node for _, node in group]
    graph = fx.Graph()
    remap = {arg: graph.placeholder(arg.name)
             for arg in _external_inputs(nodes)}
    modules = {}
    for node in nodes:
        remap[node] = graph.node_copy(node, remap.__getitem__)
        if node.op == "call_module":
            modules[node.target] = graph_module.get_submodule(node.target)
        elif node.op == "get_attr":
            modules[node.target] = getattr(graph_module, node.target)
    graph.output(remap[nodes[-1]])
    region = fx.GraphModule(modules, graph, name)
    if wrapper is not None:
        region = wrapper(region)
    return replace(sch, region, [group], name, None, False)


def sequential(sch, subgraph, name):
    """Slapo's fuse without a compiler: the modules called by the one
    vertical subgraph of `subgraph`, in order, as the children 0, 1, … of
    an nn.Sequential subclass named `name`, called in its place. None when
    a node of it is not a module call (the subgraph is then wrapped whole,
    see `wrap`)."""
    graph_module, group = _one_vertical_subgraph(sch, subgraph, name)
    nodes = [node for _, node in group]
    if any(node.op != "call_module" for node in nodes):
        return None
    # Each module takes its predecessor's result as its only argument.
    for previous, node in zip(nodes, nodes[1:]):
        if node.args != (previous,) or node.kwargs:
            return None
    fused_class = type(name, (nn.Sequential,), {})
    fused = fused_class(*(graph_module.get_submodule(node.target)
                          for node in nodes))
    return replace(sch, fused, [group], name, None, False)
