"""A sharded parameter's block, initialised without its whole tensor.

Under ``init_empty_weights``, build gives each rank only its block of a
sharded parameter. The module's initialiser (``reset_parameters``,
``_init_weights`` or the user's function) runs on a :class:`BlockInit`: a
tensor of the parameter's whole shape that stores only this rank's block.

- Its random fills (``uniform_``, ``normal_``, ``bernoulli_``, …) draw the
  whole parameter's stream in chunks and keep the block's elements.
  PyTorch's CPU generator fills a tensor element by element in order
  (``normal_`` in groups of 16, the last 16 redrawn when the size is not a
  multiple), so chunks of a multiple of 16 elements, the last one at least
  16, draw the numbers the whole tensor would: the block holds exactly the
  values an unsharded initialisation gives it.
- Its element-wise in-place operations (``zero_``, ``fill_``, ``mul_``,
  ``clamp_``, ``erfinv_``, ``copy_``, …) act on the block, whole-shaped
  tensor operands cut to it.
- Anything else (a view written in place, a QR decomposition) raises
  :class:`WholeTensorNeeded`; build then initialises that module's
  parameters whole and keeps the blocks.
"""

import math

import torch

# Elements drawn at a time: a multiple of 16.
_CHUNK = 1 << 16

_RANDOM_FILLS = frozenset({
    "uniform_", "normal_", "bernoulli_", "random_", "exponential_",
    "log_normal_", "cauchy_", "geometric_"})

_ELEMENTWISE = frozenset({
    "zero_", "fill_", "copy_", "add_", "sub_", "mul_", "div_", "clamp_",
    "clamp_min_", "clamp_max_", "erfinv_", "neg_", "abs_", "exp_", "sqrt_",
    "addcmul_", "addcdiv_", "pow_"})


class WholeTensorNeeded(Exception):
    """An initialiser used an operation a block alone cannot compute."""


class BlockInit(torch.Tensor):
    """The whole shape of a parameter, holding the elements of `keep` (the
    indices this rank owns along `axis`) only, in `block`."""

    @staticmethod
    def __new__(cls, shape, dtype, axis, keep):
        return torch.Tensor._make_wrapper_subclass(cls, shape, dtype=dtype)

    def __init__(self, shape, dtype, axis, keep):
        self.axis = axis
        self.keep = torch.as_tensor(keep, dtype=torch.long)
        block_shape = list(shape)
        block_shape[axis] = len(self.keep)
        self.block = torch.zeros(block_shape, dtype=dtype)

    __torch_function__ = torch._C._disabled_torch_function_impl

    def __repr__(self):
        return (f"BlockInit(shape={tuple(self.shape)}, axis={self.axis}, "
                f"block={tuple(self.block.shape)})")

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        target = args[0] if args and isinstance(args[0], BlockInit) else None
        if target is None:
            raise WholeTensorNeeded(name)
        if name in ("detach", "alias"):
            return target._alias()
        if name in _RANDOM_FILLS:
            target._draw(lambda chunk: func(chunk, *args[1:], **kwargs))
            return target
        if name in _ELEMENTWISE:
            func(target.block, *(target._cut(a) for a in args[1:]),
                 **{k: target._cut(v) for k, v in kwargs.items()})
            return target
        raise WholeTensorNeeded(name)

    def _alias(self):
        """The same block under another tensor (``.data``, ``detach``)."""
        alias = BlockInit(self.shape, self.dtype, self.axis, self.keep)
        alias.block = self.block
        return alias

    def _cut(self, operand):
        """A whole-shaped tensor operand cut to the block; others as they
        are (numbers, tensors broadcast along the axis)."""
        if isinstance(operand, BlockInit):
            if operand.axis != self.axis or \
                    not torch.equal(operand.keep, self.keep):
                raise WholeTensorNeeded("operands of different blocks")
            return operand.block
        if isinstance(operand, torch.Tensor) and \
                operand.dim() == self.dim() and \
                operand.shape[self.axis] == self.shape[self.axis] > 1:
            return operand.index_select(self.axis, self.keep)
        return operand

    def _draw(self, fill):
        """Runs `fill` over the whole tensor's elements in chunks, keeping
        the block's."""
        shape = self.shape
        axis_size = shape[self.axis]
        inner = math.prod(shape[self.axis + 1:])
        total = math.prod(shape)
        position = torch.full((axis_size,), -1, dtype=torch.long)
        position[self.keep] = torch.arange(len(self.keep))
        flat = self.block.view(-1)
        start = 0
        while start < total:
            size = min(_CHUNK, total - start)
            if 0 < total - start - size < 16:
                size = total - start  # the last chunk takes the short tail
            chunk = torch.empty(size, dtype=self.dtype)
            fill(chunk)
            index = torch.arange(start, start + size)
            along = position[(index // inner) % axis_size]
            kept = along >= 0
            target = (index // (axis_size * inner)) * (len(self.keep) *
                                                       inner) + \
                along * inner + index % inner
            flat[target[kept]] = chunk[kept]
            start += size


def block_indices(size, rank, ranks, groups=1):
    """The indices along an axis of `size` that rank `rank` of `ranks`
    owns: its contiguous block of each of `groups` equal parts."""
    part = size // groups
    local = part // ranks
    return [g * part + rank * local + i
            for g in range(groups) for i in range(local)]
