"""Slapo's Schedule: a tree of schedules, one per module, over one Lamina
schedule of the whole model.

Each ``Schedule`` here has Slapo's attributes (``mod``, ``name``, ``path``,
``parent``, ``child``, ``metadata``, ``world_size``, ``rank``) and
primitives (:mod:`.primitives`). Primitives that change the program
(shard, sync, fuse, checkpoint, ...) are recorded on the root's
:class:`lamina.Schedule` as transform ops at the module's path; primitives
that change the model (replace, trace) change the PyTorch modules, as in
Slapo, and the Lamina schedule imports the model again.
"""

import logging
import re
from collections import OrderedDict
from dataclasses import dataclass, field

from torch import fx, nn

from .. import _lamina
from .. import schedule as native
from ..errors import ScheduleError
from . import pattern as patterns
from . import primitives
from .tracer import trace_module
from .utils import common

logger = logging.getLogger("lamina.slapo")


class PathError(ScheduleError, KeyError):
    """A module path that names no schedule (Slapo raises KeyError)."""

    __str__ = ValueError.__str__


@dataclass
class ScheduleMetadata:
    """What the primitives recorded about a module (Slapo's metadata)."""

    tie_weights: dict = field(default_factory=OrderedDict)
    param_tags: set = field(default_factory=set)
    primitives: dict = field(default_factory=OrderedDict)
    # Lamina's: shard groups other than 1 (name → groups).
    shard_groups: dict = field(default_factory=dict)
    # Lamina's: cuts whose module torch.fx could not trace to find the
    # layers ending the stage (path → why).
    untraced_cuts: dict = field(default_factory=dict)


_PRIMITIVE_NAMES = ("annotate", "checkpoint", "cut_pipeline_stage",
                    "decompose", "fork_rng", "fuse", "replace", "replace_all",
                    "shard", "sync")


def list_primitives(name_only=True):
    """The primitives' names (or name → function)."""
    table = {name: getattr(primitives, name) for name in _PRIMITIVE_NAMES}
    return list(table) if name_only else table


def _tied_parameters(module):
    """Parameters reachable under more than one name (tied weights)."""
    seen, tied = {}, OrderedDict()
    for _, child in module.named_modules(remove_duplicate=False):
        for _, param in child.named_parameters(recurse=False):
            if id(param) in seen and param is not None:
                tied[param] = param
            seen[id(param)] = param
    return tied


def _is_leaf(module):
    """Slapo's rule: torch.nn's own modules (not containers) have no
    children schedules. Beyond Slapo, an nn.ModuleDict is a container too
    (nanoGPT's `transformer`: `sch["transformer.h.0"]`)."""
    origin = type(module).__module__
    return origin.startswith(("torch.nn", "torch.ao.nn")) and \
        not isinstance(module, (nn.Sequential, nn.ModuleList, nn.ModuleDict))


def _is_module_list(module):
    """A ModuleList, or the plain container torch.fx leaves in its place
    once traced (children named 0, 1, ...): its elements are schedules
    named "name.i"."""
    if isinstance(module, nn.ModuleList):
        return True
    names = [name for name, _ in module.named_children()]
    return type(module) is nn.Module and bool(names) and \
        all(name.isdigit() for name in names)


def _tokenize(path):
    """Slapo's path tokens: "layers.0.fc" → ["layers.0", "fc"]."""
    tokens = []
    for token in path.split("."):
        if token.isdigit() and tokens:
            tokens[-1] = f"{tokens[-1]}.{token}"
        else:
            tokens.append(token)
    return tokens


class Schedule:
    """The schedule of one module of the model."""

    def __init__(self, mod, name, path, parent, native_schedule):
        self.mod = mod
        self.name = name
        self.path = path
        self.parent = parent
        self.child = {}
        self.group = None
        self.metadata = ScheduleMetadata()
        self.metadata.primitives = OrderedDict(
            (name, OrderedDict()) for name in ("shard", "sync"))
        self.metadata.primitives.update(
            (name, []) for name in ("checkpoint", "cut_pipeline_stage",
                                    "fork_rng", "fuse", "annotate"))
        self._native = native_schedule
        if parent is None:
            self.metadata.tie_weights = _tied_parameters(mod)
        else:
            self.metadata.tie_weights = parent.metadata.tie_weights

    @property
    def world_size(self):
        return self._native.world_size

    @property
    def rank(self):
        # This rank's place among the schedule's ranks (the tensor axis,
        # which varies fastest on a device grid).
        return _lamina.rank() % self.world_size

    @property
    def lamina_schedule(self):
        """The :class:`lamina.Schedule` of the whole model this schedule
        records on."""
        return self._native

    def __repr__(self):
        return f"Schedule({self.path or '<root>'}: {type(self.mod).__name__})"

    # -- the tree ------------------------------------------------------------

    def _build_children(self):
        self.child = {}
        if _is_leaf(self.mod):
            return
        for child_name, submodule in self.mod.named_children():
            if _is_module_list(submodule):
                for index, layer in submodule.named_children():
                    self._add_child(f"{child_name}.{index}", layer)
            else:
                self._add_child(child_name, submodule)

    def _add_child(self, name, module):
        path = f"{self.path}.{name}" if self.path else name
        child = Schedule(module, name, path, self, self._native)
        child._build_children()
        self.child[name] = child

    def __getitem__(self, full_path):
        if not full_path:
            return self
        current = self
        for token in _tokenize(full_path):
            head, _, index = token.partition(".")
            if index and token not in current.child and \
                    head in current.child:
                current, token = current.child[head], index
            if token not in current.child:
                raise PathError(
                    f"The schedule of '{full_path}' ({token}) is not a child "
                    f"of '{current.path or current.name or '<root>'}'; its "
                    f"children are {sorted(current.child)}")
            current = current.child[token]
        return current

    def __contains__(self, full_path):
        try:
            self[full_path]
        except PathError:
            return False
        return True

    def get_top_schedule(self):
        return self if self.parent is None else \
            self.parent.get_top_schedule()

    def get_module(self, name):
        return dict(self.mod.named_modules())[name]

    def named_schedules(self, prefix=""):
        yield prefix, self
        for name, child in self.child.items():
            yield from child.named_schedules(
                f"{prefix}.{name}" if prefix else name)

    def _layer_path(self, local=""):
        """The model path of this module's submodule `local` ("" for this
        module itself)."""
        return ".".join(p for p in (self.path, local) if p)

    def _swap_module(self, new_mod):
        """Puts `new_mod` in this module's place in the model."""
        if self.parent is None:
            self._native.model = new_mod
        else:
            owner = self.parent.mod
            head, _, index = self.name.partition(".")
            if index:
                getattr(owner, head)[int(index)] = new_mod
            else:
                setattr(owner, self.name, new_mod)
        self.mod = new_mod
        self._build_children()

    def _model_changed(self):
        self._native.model_changed()

    # -- finding -------------------------------------------------------------

    def trace(self, recursive=True, flatten=False, **kwargs):
        """Traces this module into an fx.GraphModule in its place (Slapo's
        trace): True once traced, False (with a warning) when torch.fx
        cannot trace it."""
        if isinstance(self.mod, fx.GraphModule):
            return True
        tracer = kwargs.pop("tracer", "pytorch")
        if tracer != "pytorch":
            raise ScheduleError(
                f"trace(tracer={tracer!r}): Lamina traces with torch.fx "
                "('pytorch'); the HuggingFace and dynamo tracers are not "
                "available")
        try:
            traced = trace_module(self.mod, flatten=flatten or not recursive,
                                  **kwargs)
        except Exception as error:  # torch.fx raises anything
            logger.warning("Failed to trace %s: %s", self.path or "<root>",
                           error)
            return False
        # The module's Python hooks stay on it (Slapo's trace keeps them).
        common.transfer_hooks(self.mod, traced)
        self._swap_module(traced)
        self._model_changed()
        return True

    def trace_until(self, paths, **kwargs):
        """Traces from the top module down to the modules at `paths`,
        keeping their children as leaves."""
        if self.parent is not None:
            raise ScheduleError("trace_until can only be called on the top "
                                "module")
        if isinstance(self.mod, fx.GraphModule):
            raise ScheduleError("the top module has been traced already")
        leaves = []
        for path in paths if isinstance(paths, (list, tuple)) else [paths]:
            leaves += list(self[path].child)
        return self.trace(flatten=False,
                          leaf_modules=leaves + kwargs.pop("leaf_modules", []),
                          **kwargs)

    def find_node(self, regex_or_pattern_fn):
        """[(parent module name, fx.Node)] of the call_module nodes whose
        target matches the regex, or of the nodes the predicate accepts."""
        if not isinstance(regex_or_pattern_fn, str) and \
                not callable(regex_or_pattern_fn):
            raise ScheduleError("find takes a regular expression or a "
                                "callable")
        if isinstance(regex_or_pattern_fn, str):
            try:
                regex = re.compile(regex_or_pattern_fn)
            except re.error as error:
                raise ScheduleError(f"find: '{regex_or_pattern_fn}' is not a "
                                    f"valid regular expression ({error})") \
                    from None
            accept = lambda node: node.op == "call_module" and \
                regex.match(node.target)  # noqa: E731
        else:
            accept = regex_or_pattern_fn
        self.trace()
        return [(name, node) for name, module in self.mod.named_modules()
                if isinstance(module, fx.GraphModule)
                for node in module.graph.nodes if accept(node)]

    def find_subgraph(self, pattern_fn):
        """Every subgraph matching `pattern_fn` (a function or a Pattern
        module), as lists of (parent module name, fx.Node)."""
        self.trace()
        return patterns.find_subgraphs(self.mod, pattern_fn)

    def find(self, regex_or_pattern_fn):
        """Slapo's find: a regex gives nodes (find_node), a function or
        Pattern gives subgraphs (find_subgraph)."""
        if isinstance(regex_or_pattern_fn, str):
            return self.find_node(regex_or_pattern_fn)
        if isinstance(regex_or_pattern_fn, patterns.Pattern) or \
                callable(regex_or_pattern_fn):
            return self.find_subgraph(regex_or_pattern_fn)
        raise ScheduleError(f"find takes a regex, a function or a Pattern, "
                            f"got {type(regex_or_pattern_fn).__name__}")


for _name in _PRIMITIVE_NAMES:
    setattr(Schedule, _name, getattr(primitives, _name))


def create_schedule(root, name="", path="", parent=None, group=None,
                    world_size=None, example_inputs=None, **kwargs):
    """Slapo's create_schedule over :func:`lamina.create_schedule`: the
    world is the launched MPI world (`group` must be None: Lamina's ranks
    are the MPI world). `world_size` and `example_inputs` are Lamina's
    (see lamina.create_schedule)."""
    if group is not None:
        raise ScheduleError("create_schedule(group=...): Lamina runs a "
                            "schedule on the MPI world it was launched in; "
                            "process groups are not taken")
    if parent is not None or path:
        raise ScheduleError("create_schedule builds the top schedule; "
                            "address submodules with sch[path]")
    if kwargs:
        raise ScheduleError(f"create_schedule got unknown arguments "
                            f"{sorted(kwargs)}")
    if not isinstance(root, nn.Module):
        raise ScheduleError(f"create_schedule takes an nn.Module, got "
                            f"{type(root).__name__}")
    lamina_schedule = native.create_schedule(root, world_size=world_size,
                                             example_inputs=example_inputs)
    top = Schedule(root, name, "", None, lamina_schedule)
    top._build_children()
    return top


__all__ = ["Schedule", "ScheduleMetadata", "create_schedule",
           "list_primitives", "PathError"]
