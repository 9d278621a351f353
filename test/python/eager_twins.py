"""A model compiled and its eager twin with the same weights: outputs, the
input's gradient and every parameter's gradient compared (the LLaMA ops'
and the convolutions' tests)."""

import torch

import lamina

TOL = dict(rtol=1e-5, atol=1e-5)


def twins(make):
    """Two `make()` modules with the first one's weights."""
    torch.manual_seed(0)
    model = make()
    eager = make()
    eager.load_state_dict(model.state_dict())
    return model, eager


def results_and_input_gradients_match(compiled, eager, x, cotangent_seed):
    """Calls `compiled` and `eager` on copies of `x` and checks, at TOL,
    their results and the input's gradients for the cotangent drawn from
    `cotangent_seed`."""
    ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
    y, y_eager = compiled(ours), eager(theirs)
    torch.testing.assert_close(y, y_eager, **TOL)
    weight = torch.randn(
        y.shape, generator=torch.Generator().manual_seed(cotangent_seed))
    (y * weight).sum().backward()
    (y_eager * weight).sum().backward()
    torch.testing.assert_close(ours.grad, theirs.grad, **TOL)


def compiled_matches_eager(make, shape):
    """Builds `make()` and checks its result on an input of `shape`, the
    input's gradient and every parameter's against an eager twin's at
    rtol = atol = 1e-5; the compiled module."""
    model, eager = twins(make)
    compiled = lamina.build(lamina.create_schedule(model))
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    results_and_input_gradients_match(compiled, eager, x, cotangent_seed=2)
    grads = dict(eager.named_parameters())
    for name, parameter in compiled.named_parameters():
        torch.testing.assert_close(parameter.grad, grads[name].grad, **TOL,
                                   msg=lambda m: f"{name}: {m}")
    return compiled
