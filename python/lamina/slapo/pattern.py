"""Slapo's subgraph patterns and the matcher behind ``sch.find(pattern)``.

A pattern is a function or a :class:`Pattern` module, traced by torch.fx.
A match maps every op of the pattern to a node of a traced module so that
the dataflow of its ops is the same: an operand that is an op of the pattern
is the matched node of that op, a pattern input matches any value (as in
Slapo, where ``F.relu(x) + x`` matches ``F.relu(conv(x)) + x``), and
constants are equal. ``call_module(regex, x)``
and :class:`ModulePattern` match module calls by path; a functional call
(``F.relu``) matches a call of the equivalent module (``nn.ReLU``).
Matches do not overlap; each lists its nodes in graph order.
"""

import operator
import re

import torch
import torch.nn.functional as F
from torch import fx, nn


class Pattern(nn.Module):
    """A pattern written as a module: its submodules match module calls of
    their class (or, as ModulePattern, by path)."""

    def forward(self, *args):
        raise NotImplementedError


class ModulePattern(nn.Module):
    """Matches a call of any module whose path matches `name` (a regex)."""

    def __init__(self, name):
        super().__init__()
        self.name = name

    def forward(self, *args):
        raise NotImplementedError


def call_module(mod_name, *args):
    """In a pattern: a call of a module whose path matches `mod_name`."""
    proxies = [a for a in args if isinstance(a, fx.Proxy)]
    if not proxies:
        raise NotImplementedError("call_module only appears in patterns")
    return proxies[0].tracer.create_proxy("call_function", call_module,
                                          (mod_name, *args), {})


# A functional call matches a call of the module computing the same.
_FUNCTION_MODULES = {
    F.relu: nn.ReLU, torch.relu: nn.ReLU, F.gelu: nn.GELU,
    F.dropout: nn.Dropout, F.softmax: nn.Softmax, torch.softmax: nn.Softmax,
    F.layer_norm: nn.LayerNorm, F.linear: nn.Linear, torch.tanh: nn.Tanh,
    F.silu: nn.SiLU, torch.sigmoid: nn.Sigmoid, F.batch_norm: nn.BatchNorm2d,
    F.conv2d: nn.Conv2d, F.max_pool2d: nn.MaxPool2d, F.embedding: nn.Embedding,
}
_COMMUTATIVE = {operator.add, operator.mul, torch.add, torch.mul}


class _PatternTracer(fx.Tracer):
    def is_leaf_module(self, module, qualified_name):
        return isinstance(module, ModulePattern) or \
            super().is_leaf_module(module, qualified_name)


def pattern_graph(pattern_fn):
    """The traced pattern and its modules (path → module)."""
    if isinstance(pattern_fn, Pattern):
        graph = _PatternTracer().trace(pattern_fn)
        return graph, dict(pattern_fn.named_modules())
    if isinstance(pattern_fn, nn.Module) or not callable(pattern_fn):
        raise TypeError("a pattern is a function or a slapo.Pattern module")
    return fx.symbolic_trace(pattern_fn).graph, {}


class _Matcher:
    """Matches one pattern graph against one traced module's graph."""

    def __init__(self, pattern, pattern_modules, modules):
        self.pattern_ops = [n for n in pattern.nodes
                            if n.op not in ("placeholder", "output")]
        self.pattern_modules = pattern_modules
        self.modules = modules

    def _op_matches(self, p, g):
        if p.op == g.op and p.target == g.target and p.op != "call_module":
            return True
        if g.op != "call_module":
            return False
        module = self.modules.get(g.target)
        if p.op == "call_function":
            if p.target is call_module:
                return re.match(p.args[0], g.target) is not None
            wanted = _FUNCTION_MODULES.get(p.target)
            return wanted is not None and isinstance(module, wanted)
        if p.op == "call_module":
            pattern_module = self.pattern_modules.get(p.target)
            if isinstance(pattern_module, ModulePattern):
                return re.match(pattern_module.name, g.target) is not None
            return pattern_module is not None and \
                type(pattern_module) is type(module)
        return False

    @staticmethod
    def _tensor_args(p, g):
        """(pattern operands, graph operands) in positional order, a
        functional call against a module call comparing only tensors."""
        pattern_args = list(p.args)
        if p.op == "call_function" and p.target is call_module:
            pattern_args = pattern_args[1:]
        graph_args = list(g.args)
        if g.op == "call_module" and p.op != "call_module":
            pattern_args = [a for a in pattern_args if isinstance(a, fx.Node)]
            graph_args = [a for a in graph_args if isinstance(a, fx.Node)]
        return pattern_args, graph_args

    def _bind(self, p, g, mapping, bound):
        """Extends (mapping, bound) with p ↦ g when their operands agree;
        None otherwise."""
        if g in mapping.values() or not self._op_matches(p, g):
            return None
        pattern_args, graph_args = self._tensor_args(p, g)
        orders = [graph_args]
        if p.target in _COMMUTATIVE and len(graph_args) == 2:
            orders.append(graph_args[::-1])
        for order in orders:
            result = self._bind_operands(pattern_args, order, mapping, bound)
            if result is not None:
                new_mapping, new_bound = result
                new_mapping[p] = g
                return new_mapping, new_bound
        return None

    @staticmethod
    def _bind_operands(pattern_args, graph_args, mapping, bound):
        if len(pattern_args) != len(graph_args):
            return None
        mapping, bound = dict(mapping), dict(bound)
        for a, b in zip(pattern_args, graph_args):
            if isinstance(a, fx.Node) and a.op == "placeholder":
                bound[a] = b
            elif isinstance(a, fx.Node):
                if mapping.get(a) is not b:
                    return None
            elif a != b:
                return None
        return mapping, bound

    def _candidates(self, p, mapping, nodes):
        """Graph nodes p may map to: users of an already matched operand,
        else any node."""
        for a in p.args:
            if isinstance(a, fx.Node) and a in mapping:
                return list(mapping[a].users)
        return nodes

    def match_at(self, start, nodes, taken):
        """A match whose first op is `start`, or None."""
        def extend(index, mapping, bound):
            if index == len(self.pattern_ops):
                return mapping
            p = self.pattern_ops[index]
            candidates = [start] if index == 0 else \
                self._candidates(p, mapping, nodes)
            for g in candidates:
                if g in taken:
                    continue
                step = self._bind(p, g, mapping, bound)
                if step is not None:
                    found = extend(index + 1, *step)
                    if found is not None:
                        return found
            return None
        return extend(0, {}, {})


def find_subgraphs(root, pattern_fn):
    """[[(parent module name, node)]]: every match of `pattern_fn` in the
    traced modules under `root`."""
    pattern, pattern_modules = pattern_graph(pattern_fn)
    matches = []
    for parent_name, module in root.named_modules():
        if not isinstance(module, fx.GraphModule):
            continue
        matcher = _Matcher(pattern, pattern_modules,
                           dict(module.named_modules()))
        if not matcher.pattern_ops:
            raise ValueError("the pattern computes nothing")
        nodes = [n for n in module.graph.nodes
                 if n.op not in ("placeholder", "output", "get_attr")]
        order = {node: i for i, node in enumerate(module.graph.nodes)}
        taken = set()
        for start in nodes:
            if start in taken:
                continue
            mapping = matcher.match_at(start, nodes, taken)
            if mapping is None:
                continue
            taken.update(mapping.values())
            matched = sorted(mapping.values(), key=order.__getitem__)
            matches.append([(parent_name, node) for node in matched])
    return matches
