"""slapo.Verify: the primitives applied inside the block are checked, at
its end, against the model as it was at its start: outputs, and beyond
Slapo the gradients of the parameters and of the inputs that require
them."""

import copy

import torch

from .. import _lamina
from ..importer import unsharded_fused_qkv
from ..errors import ScheduleError
from .build import build, materialise_meta


def _as_list(values):
    return [values] if isinstance(values, torch.Tensor) else list(values)


def _block_of(full, block, ranks, rank):
    """This rank's block of `full`, shaped as `block` (the axis whose size
    differs is the sharded one)."""
    if full.shape == block.shape:
        return full
    axes = [a for a, (f, b) in enumerate(zip(full.shape, block.shape))
            if f != b]
    return torch.chunk(full, ranks, dim=axes[0])[rank]


class Verify:
    """Slapo's Verify(sch, example_inputs, ...) context manager."""

    def __init__(self, sch, example_inputs, example_outputs=None,
                 loss_fn=None, init_weights=None, device="cpu",
                 eval_mode=True, enable=True, rtol=None, atol=None,
                 check_gradients=True):
        # A CUDA device names the rank's device in Slapo's scripts; Lamina
        # verifies each rank's process on the CPU.
        if torch.device(device).type not in ("cpu", "cuda"):
            raise ScheduleError(f"Verify(device={device!r}): Lamina verifies "
                                "on the CPU (each MPI rank is one process)")
        if isinstance(example_inputs, torch.Tensor):
            example_inputs = [example_inputs]
        self.sch = sch
        self.inputs = [torch.as_tensor(x) for x in example_inputs]
        self.example_outputs = example_outputs
        self.loss_fn = loss_fn
        self.init_weights = init_weights
        self.eval_mode = eval_mode
        self.enable = enable
        self.rtol, self.atol = rtol, atol
        self.check_gradients = check_gradients
        self._reference = None
        self._memo = None

    def __enter__(self):
        if self.enable:
            top = self.sch.get_top_schedule()
            materialise_meta(top.mod, self.init_weights)
            self._memo = {}
            self._reference = copy.deepcopy(top.mod, self._memo)
            # The primitives in the block are checked as they are applied.
            top.lamina_schedule.trace(tuple(self.inputs))
        return self

    def __exit__(self, kind, value, traceback):
        if kind is not None or not self.enable:
            return False
        top = self.sch.get_top_schedule()
        reference = self._reference
        was_training = top.mod.training
        mode = not self.eval_mode and was_training
        reference.train(mode)
        top.mod.train(mode)
        try:
            self._compare(top, reference)
        finally:
            top.mod.train(was_training)
        return False

    def _run(self, model):
        inputs = [x.detach().clone().requires_grad_(x.is_floating_point())
                  for x in self.inputs]
        outputs = _as_list(model(*inputs))
        return inputs, outputs

    def _compare(self, top, reference):
        with unsharded_fused_qkv(reference):
            want_inputs, want = self._run(reference)
        with torch.set_grad_enabled(self.check_gradients and
                                    torch.is_grad_enabled()):
            # Forward only (Slapo's check): the backward is not compiled.
            compiled, _ = build(top, init_weights=False,
                                example_inputs=tuple(self.inputs))
            got_inputs, got = self._run(compiled)
        if len(got) != len(want):
            raise AssertionError(f"the scheduled model returns {len(got)} "
                                 f"results, the original {len(want)}")
        ranks = compiled.world_size
        rank = _lamina.rank() % ranks
        axes = compiled.result_shard_axes()
        for index, (g, w, axis) in enumerate(zip(got, want, axes)):
            if axis is not None:
                w = torch.chunk(w, ranks, dim=axis)[rank]
            self._close(g, w, f"result {index}")
        if self.example_outputs is not None:
            for index, (g, w) in enumerate(zip(got, _as_list(
                    self.example_outputs))):
                self._close(g, w, f"result {index} against example_outputs")
        if not self.check_gradients or not torch.is_grad_enabled():
            return
        self._compare_gradients(compiled, top, got, want, got_inputs,
                                want_inputs, axes, ranks, rank)

    def _loss(self, outputs, axes, ranks, rank, cotangents):
        if self.loss_fn is not None:
            return self.loss_fn(*outputs)
        total = 0
        for value, cotangent, axis in zip(outputs, cotangents, axes):
            if axis is not None:
                cotangent = torch.chunk(cotangent, ranks, dim=axis)[rank]
            total = total + (value * cotangent).sum()
        return total

    def _compare_gradients(self, compiled, top, got, want, got_inputs,
                           want_inputs, axes, ranks, rank):
        differentiable = [w for w in want if w.requires_grad]
        if not differentiable:
            return
        generator = torch.Generator().manual_seed(0)
        cotangents = [torch.randn(w.shape, generator=generator, dtype=w.dtype)
                      for w in want]
        self._loss(want, [None] * len(want), 1, 0, cotangents).backward()
        self._loss(got, axes, ranks, rank, cotangents).backward()
        scheduled = dict(top.mod.named_parameters())
        checks = []
        for name, param in compiled.named_parameters():
            original = scheduled.get(name)
            twin = self._memo.get(id(original)) if original is not None \
                else None
            if twin is None or twin.grad is None:
                continue
            if param.grad is None:
                raise AssertionError(f"parameter '{name}' has no gradient "
                                     "in the scheduled model")
            checks.append((param.grad, twin, f"the gradient of '{name}'"))
        for index, (g, w) in enumerate(zip(got_inputs, want_inputs)):
            if w.grad is not None and g.grad is not None:
                checks.append((g.grad, w, f"the gradient of input {index}"))
        exact = None
        for got_grad, twin, what in checks:
            expected = _block_of(twin.grad, got_grad, ranks, rank)
            try:
                self._close(got_grad, expected, what)
            except AssertionError:
                # A sum over many rows (a weight's gradient over thousands
                # of tokens) differs by the order of its fp32 additions:
                # judged against the exact (float64) gradient instead.
                if exact is None:
                    exact = self._exact_gradients(want_inputs, cotangents)
                if id(twin) not in exact:
                    raise
                self._close_to_exact(
                    got_grad, expected,
                    _block_of(exact[id(twin)], got_grad, ranks, rank), what)

    def _exact_gradients(self, inputs, cotangents):
        """{id of a reference parameter or input: its gradient in float64},
        from a float64 copy of the reference model run on the same inputs
        and cotangents."""
        memo = {}
        exact_model = copy.deepcopy(self._reference, memo).double()
        exact_inputs = [x.detach().double().requires_grad_()
                        if x.is_floating_point() else x for x in inputs]
        with unsharded_fused_qkv(exact_model):
            outputs = _as_list(exact_model(*exact_inputs))
        self._loss(outputs, [None] * len(outputs), 1, 0,
                   [c.double() for c in cotangents]).backward()
        grads = {id(param): memo[id(param)].grad
                 for param in self._reference.parameters()
                 if id(param) in memo and memo[id(param)].grad is not None}
        for original, exact in zip(inputs, exact_inputs):
            if exact.grad is not None:
                grads[id(original)] = exact.grad
        return grads

    def _close_to_exact(self, got, want, exact, what):
        """`got` within the tolerance of the exact value, widened by what
        summing in fp32 may cost: twice eager fp32's own error there, or
        the rounding error expected of a sum over the inputs' rows in any
        order, 2·√rows·u of the tensor's largest value (u: fp32's unit
        roundoff), whichever is larger. A wrong schedule is off by the
        values themselves (a missing all-reduce, a block twice)."""
        rtol = 1.3e-6 if self.rtol is None else self.rtol
        atol = 1e-5 if self.atol is None else self.atol
        exact = exact.to(got.dtype)
        rows = max(x.numel() // max(x.shape[-1], 1) for x in self.inputs
                   if x.dim() > 0) if self.inputs else 1
        roundoff = torch.finfo(got.dtype).eps / 2
        summation = 2 * rows ** 0.5 * roundoff * float(exact.abs().max())
        bound = atol + rtol * exact.abs() + torch.clamp(
            2 * (want - exact).abs(), min=summation)
        excess = (got - exact).abs() - bound
        if bool((excess > 0).any()):
            raise AssertionError(
                f"{what} of the scheduled model differs from the exact "
                f"(float64) value by up to {float(excess.max()):.3g} more "
                "than fp32 summation allows")

    def _close(self, got, want, what):
        try:
            torch.testing.assert_close(got, want.to(got.dtype),
                                       rtol=self.rtol, atol=self.atol)
        except AssertionError as error:
            raise AssertionError(f"{what} of the scheduled model differs "
                                 f"from the original: {error}") from None
