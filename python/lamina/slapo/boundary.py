"""Where a block's inputs enter and its outputs leave, in the model's fx
graph: the layers a sync on a block (or on the program's inputs) acts on."""

from ..errors import ScheduleError
from ..importer import is_layer
from ..importer import tracer as importer_tracer


def _graph(sch):
    """The whole model's fx graph, shapes propagated when the schedule has
    its example inputs."""
    model = sch._native.model
    inputs = sch._native.example_inputs
    if inputs is not None:
        return importer_tracer.trace(model, inputs)
    return importer_tracer.Tracer().trace(model)


def _inside(node, path):
    where = node.target if node.op == "call_module" else \
        node.meta.get("lamina_path", "")
    if node.op == "placeholder":
        return False
    return not path or where == path or where.startswith(path + ".")


def _crossings(sch, mode):
    """[(value, node)]: fwd_pre / bwd_post: each value from outside the
    block and the block's node reading it; fwd_post: each value of the
    block read outside it, and that value's node."""
    graph = _graph(sch)
    inside = {n for n in graph.nodes if _inside(n, sch.path)}
    crossings = []
    for node in graph.nodes:
        if mode == "fwd_post":
            if node in inside and any(u not in inside or u.op == "output"
                                      for u in node.users):
                crossings.append((node, node))
        elif node in inside:
            for arg in node.all_input_nodes:
                if arg not in inside and arg.op != "get_attr":
                    crossings.append((arg, node))
    return crossings


def values(sch, mode):
    """The fx nodes of the values a sync of `mode` on `sch` acts on."""
    crossings = _crossings(sch, mode)
    seen = []
    for value, _ in crossings:
        if value not in seen:
            seen.append(value)
    return seen


def layers(sch, mode):
    """The paths of the layers that take a sync of `mode` on block `sch`:
    those reading the block's inputs (fwd_pre, bwd_post) or computing its
    outputs (fwd_post)."""
    crossings = _crossings(sch, mode)
    modules = dict(sch._native.model.named_modules())
    paths = []
    for value, node in crossings:
        module = modules.get(node.target) if node.op == "call_module" \
            else None
        if module is None or not is_layer(module):
            what = "computes its output" if mode == "fwd_post" else \
                "reads its input"
            raise ScheduleError(
                f"sync {mode} on '{sch.path or '<root>'}': its value "
                f"'{value.name}' {what} in '{node.name}', which is not a "
                "Lamina layer; put the sync on a layer "
                "(sch[path].sync(...))")
        if node.target not in paths:
            paths.append(node.target)
    if not paths:
        raise ScheduleError(f"sync {mode} on '{sch.path or '<root>'}': the "
                            "block has no such boundary")
    return paths
