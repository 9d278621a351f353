"""Mixed precision as torch.autocast computes it: the lower precision a
call runs its layer matmuls in (``build(precision=...)``, or the
``torch.autocast("cpu", ...)`` region the call runs in), and the pass that
makes a scheduled program do so (``lamina-autocast``: operands cast to it,
f32 accumulation, f32 master weights and gradients)."""

import torch

# build's `precision`: None follows torch.autocast at each call.
CHOICES = (None, "bf16", "f32")
_ELEMENTS = {torch.bfloat16: "bf16", torch.float16: "f16"}
_DTYPES = {element: dtype for dtype, element in _ELEMENTS.items()}


def check(precision, target):
    if precision not in CHOICES:
        raise ValueError(f"precision must be None, 'bf16' or 'f32', not "
                         f"{precision!r}")
    if precision == "bf16" and target != "cpu":
        raise ValueError("precision='bf16' is for target='cpu'; on GPUs "
                         "give the model bf16 layers (model.to(torch."
                         "bfloat16))")


def of_call(precision):
    """The element type a call's layer matmuls compute in ("bf16", "f16"),
    or None for f32."""
    if precision == "bf16":
        return "bf16"
    if precision == "f32" or not torch.is_autocast_cpu_enabled():
        return None
    dtype = torch.get_autocast_cpu_dtype()
    if dtype not in _ELEMENTS:
        raise ValueError(f"torch.autocast with dtype {dtype}: Lamina "
                         f"computes in bfloat16 or float16")
    return _ELEMENTS[dtype]


def tracing_in_f32():
    """A context tracing the model as written: an enclosing torch.autocast
    region would give the traced layers bf16 results (the program is
    lowered to the autocast precision after, by `lowered`)."""
    return torch.autocast("cpu", enabled=False)


def lowered(scheduled, element):
    """`scheduled` (a ``_lamina.Module``) with its f32 layer matmuls in
    `element`."""
    return scheduled.transform(pipeline=f"lamina-autocast{{element={element}}}")


def as_autocast_results(results, elements):
    """`results` of a call in a torch.autocast region as eager autocast
    returns them: each with an element in `elements` ("bf16", "f16";
    `autocast_elements` of the compiled program) in that dtype, an exact
    cast that autograd follows back to f32; the others as computed, in
    f32."""
    if len(results) != len(elements):
        return results
    return [result.to(_DTYPES[element])
            if element in _DTYPES and isinstance(result, torch.Tensor) and
            result.dtype == torch.float32 else result
            for result, element in zip(results, elements)]
