"""Hand-written formulas recognised as the ops they compute, by rewriting
the traced graph before emission.

GELU is often written out (the GPT-2 code's
``0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 *
torch.pow(x, 3.0))))``, or ``x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))``).
As a call of ``F.gelu`` it becomes one `lamina.activation` that epilogue
fusion folds into the linear layer before it; as arithmetic it would stay a
chain of element-wise ops. The match is on the dataflow, in any order of
the products and sums, with the constants equal to the formula's to 1e-6.
"""

import math
import operator

import torch
import torch.nn.functional as F
from torch import fx

# The targets of products and sums (rotary.py's formulas too).
PRODUCTS = {operator.mul, torch.mul, "mul"}
SUMS = {operator.add, torch.add, "add"}
_QUOTIENTS = {operator.truediv, torch.div, "div"}
_POWERS = {operator.pow, torch.pow, "pow"}


def _is(node, targets):
    return isinstance(node, fx.Node) and node.op in (
        "call_function", "call_method") and node.target in targets and \
        not node.kwargs


def _terms(node, targets):
    """The operands of a tree of `targets` ops rooted at `node` (through
    inner nodes used once), numbers separate: (nodes, numbers)."""
    if not _is(node, targets) or len(node.args) != 2:
        return [node], []
    nodes, numbers = [], []
    for operand in node.args:
        if isinstance(operand, (int, float)) and not isinstance(operand, bool):
            numbers.append(float(operand))
        elif isinstance(operand, fx.Node) and len(operand.users) == 1:
            inner_nodes, inner_numbers = _terms(operand, targets)
            nodes += inner_nodes
            numbers += inner_numbers
        else:
            nodes.append(operand)
    return nodes, numbers


def _close(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def _factors(node):
    """The factors of a product, x / c counted as x · (1/c)."""
    nodes, numbers = _terms(node, PRODUCTS)
    flat = []
    for factor in nodes:
        if _is(factor, _QUOTIENTS) and isinstance(factor.args[1],
                                                  (int, float)):
            flat.append(factor.args[0])
            numbers.append(1.0 / float(factor.args[1]))
        else:
            flat.append(factor)
    return flat, math.prod(numbers)


def _is_cube_of(node, x):
    if _is(node, _POWERS) and node.args[0] is x and \
            isinstance(node.args[1], (int, float)) and \
            float(node.args[1]) == 3.0:
        return True
    factors, scale = _factors(node)
    return scale == 1.0 and factors == [x, x, x]


def _one_plus(node, functions):
    """u when `node` is 1 + f(u) for f in `functions`, else None."""
    nodes, numbers = _terms(node, SUMS)
    if len(nodes) != 1 or len(numbers) != 1 or not _close(numbers[0], 1.0):
        return None, None
    inner = nodes[0]
    if isinstance(inner, fx.Node) and inner.op in ("call_function",
                                                   "call_method") and \
            inner.target in functions and len(inner.args) == 1:
        return inner.target, inner.args[0]
    return None, None


def _tanh_argument_is(node, x):
    """Whether `node` is √(2/π)·(x + 0.044715·x³)."""
    factors, scale = _factors(node)
    if len(factors) != 1 or not _close(scale, math.sqrt(2.0 / math.pi)):
        return False
    nodes, numbers = _terms(factors[0], SUMS)
    if numbers or len(nodes) != 2 or x not in nodes:
        return False
    other = nodes[1] if nodes[0] is x else nodes[0]
    cube, coefficient = _factors(other)
    return len(cube) in (1, 3) and _close(coefficient, 0.044715) and (
        _is_cube_of(cube[0], x) if len(cube) == 1 else cube == [x, x, x])


def _gelu_of(node):
    """(x, approximate) when `node` computes GELU(x), else None."""
    factors, scale = _factors(node)
    if len(factors) != 2 or not _close(scale, 0.5):
        return None
    for x, rest in ((factors[0], factors[1]), (factors[1], factors[0])):
        function, u = _one_plus(rest, {torch.tanh, "tanh", torch.erf, "erf"})
        if function in (torch.tanh, "tanh") and _tanh_argument_is(u, x):
            return x, "tanh"
        if function in (torch.erf, "erf"):
            inner, c = _factors(u)
            if inner == [x] and _close(c, 1.0 / math.sqrt(2.0)):
                return x, "none"
    return None


def recognise_gelu(graph):
    """Replaces every hand-written GELU in `graph` by `F.gelu(x,
    approximate=...)`; the formula's nodes are removed when nothing else
    uses them."""
    for node in list(graph.nodes):
        if node.op not in ("call_function", "call_method") or \
                node.target not in PRODUCTS:
            continue
        match = _gelu_of(node)
        if match is None:
            continue
        x, approximate = match
        with graph.inserting_before(node):
            gelu = graph.call_function(F.gelu, (x,),
                                       {"approximate": approximate})
        gelu.meta.update(node.meta)
        node.replace_all_uses_with(gelu)
        erase_unused(graph, node)
    return graph


def erase_unused(graph, node):
    """Erases `node` and then each of its operands nothing uses any more
    (the formula's arithmetic)."""
    pending = [node]
    while pending:
        current = pending.pop()
        if current.users or current.op not in ("call_function",
                                                "call_method"):
            continue
        operands = [a for a in current.all_input_nodes]
        graph.erase_node(current)
        pending += operands
