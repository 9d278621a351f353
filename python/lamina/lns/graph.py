"""Running a backward call over LNS codes: the fan-out check before it and
the LNS accumulation of leaf gradients after it (LNS training spec §3)."""

import torch

from . import kernels as K
from .autograd import ZERO, codes, tensor

FANOUT_MESSAGE = "Fan-out in autograd graph is not allowed, found:"


def _walk(root):
    """Every autograd node reachable from `root` with the number of edges
    reaching it. The node objects are kept alive, so their ids stay
    unique during the walk."""
    seen, counts, stack = {}, {}, [root]
    seen[id(root)] = root
    counts[id(root)] = 0
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None:
                continue
            key = id(child)
            counts[key] = counts.get(key, 0) + 1
            if key not in seen:
                seen[key] = child
                stack.append(child)
    return seen, counts


def _describe(node):
    variable = getattr(node, "variable", None)
    if variable is not None:
        kind = "parameter" if isinstance(variable, torch.nn.Parameter) \
            else "tensor"
        return f"an LNS {kind} of shape {tuple(variable.shape)}"
    return f"the result of {type(node).__name__}"


def leaves_and_fanout(root):
    """The leaf tensors reachable from `root` (a code tensor), after
    checking that no tensor in its graph has two consumers."""
    if root.grad_fn is None:
        return [root] if root.requires_grad else []
    seen, counts = _walk(root.grad_fn)
    offenders = [seen[key] for key, count in counts.items() if count > 1]
    if offenders:
        uses = "; ".join(f"{_describe(node)} used {counts[id(node)]} times"
                         for node in offenders)
        raise RuntimeError(
            f"{FANOUT_MESSAGE} {uses}. A tensor may feed one operation of "
            f"an LNS graph: the reference adds no two LNS gradients in one "
            f"backward call (use a copy, or call backward once per use)")
    return [node.variable for node in seen.values()
            if hasattr(node, "variable")]


def run_backward(root, seed, retain_graph=None, create_graph=False,
                 inputs=None):
    """Runs torch's engine from code tensor `root` with cotangent codes
    `seed`, then sets each reached leaf's .grad to the LNS sum, in call
    order, of every gradient it received since its last zero_grad."""
    leaves = leaves_and_fanout(root)
    previous = {id(leaf): leaf.grad for leaf in leaves}
    for leaf in leaves:
        leaf.grad = None
    try:
        torch.autograd.backward(root, seed, retain_graph=retain_graph,
                                create_graph=create_graph, inputs=inputs)
    finally:
        for leaf in leaves:
            received = leaf.grad
            leaf.grad = previous[id(leaf)]
            if received is not None:
                accumulate(leaf, received)


def accumulate(leaf, received):
    """Adds gradient `received` to `leaf.grad`: for an LNS leaf, `.grad`
    becomes the LNS sum, in call order, of every gradient it received since
    its last clear_gradient (the zero_grad of an LNS optimizer, an
    LNSModule or a compiled model), whatever `.grad` held in between, as
    the reference's hooks compute it: a torch optimizer's zero_grad (None,
    or zeros in place) does not forget them, so the next `.grad` adds them
    again."""
    base = getattr(leaf, "_lns_base", None)
    if base is None:  # not an LNS leaf: torch's own rule
        leaf.grad = received if leaf.grad is None else leaf.grad + received
        return
    received = received.detach().clone()
    incoming = getattr(leaf, "_lns_incoming", None)
    total = getattr(leaf, "_lns_total", None)
    if not incoming or total is None:
        incoming, total = [], codes(received)
    else:
        # `incoming` is summed by a left fold: the previous total plus this
        # call's gradient is the same sum, one addition per call.
        total = K.add(codes(total), codes(received), **base.kw())
    incoming.append(received)
    leaf._lns_incoming = incoming
    leaf._lns_total = tensor(total)
    # .grad is its own tensor: zeroing it in place keeps the sum.
    leaf.grad = tensor(total)


def clear_gradient(leaf, set_to_none=True):
    """zero_grad for one leaf: an LNS leaf's gradient becomes None or the
    zero code and forgets its accumulated gradients; any other leaf's
    follows torch's rule (None, or zeros)."""
    if getattr(leaf, "_lns_base", None) is None:  # as accumulate decides
        if leaf.grad is not None:
            if set_to_none:
                leaf.grad = None
            else:
                leaf.grad.detach_()
                leaf.grad.zero_()
        return
    leaf._lns_incoming = []
    leaf._lns_total = None
    if leaf.grad is None:
        return
    if set_to_none:
        leaf.grad = None
    else:
        leaf.grad = torch.full_like(leaf.grad, float(ZERO))
