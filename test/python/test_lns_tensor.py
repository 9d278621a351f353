"""lamina.lns.LNSTensor: factories, bases, operators and torch functions,
the spec's fixes of the reference's backward (sum, mse_loss, broadcasting,
transpose, change of base, zero hyper-parameters), and the operations
training needs beyond the golden set, checked against float autograd."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lamina import lns, lns_numpy

ZERO = -(2**53) | 1


def codes_of(values, f):
    return lns_numpy.encode(np.asarray(values, np.float64), f)


def from_codes(codes, f, requires_grad=False):
    return lns.lnstensor(torch.tensor(np.asarray(codes), dtype=torch.float64),
                         from_lns=True, f=f, requires_grad=requires_grad)


def test_factories_and_attributes():
    x = lns.lnstensor([1.0, -2.0, 0.0, 0.5], f=10)
    np.testing.assert_array_equal(x.codes.numpy(),
                                  codes_of([1.0, -2.0, 0.0, 0.5], 10))
    assert x.lns.dtype == torch.float64 and x.f == 10
    assert float(x.base) == 2.0 ** (2.0 ** -10)
    assert x.lns_base == lns.Base(b=2.0 ** (2.0 ** -10))  # the same base
    torch.testing.assert_close(x.value, torch.tensor([1.0, -2.0, 0.0, 0.5],
                                                     dtype=torch.float64),
                               rtol=1e-3, atol=0)
    assert lns.lnstensor(3.0).f == 23  # the reference's default base
    assert lns.lnstensor(np.ones((2, 3)), b=1.5).lns_base == lns.Base(b=1.5)
    again = lns.lnstensor(x.lns, from_lns=True, f=10)
    assert again.lns is x.lns  # codes kept, autograd history too
    converted = lns.lnstensor(x, f=12)
    np.testing.assert_array_equal(
        converted.codes.numpy(),
        lns.change_base(x.codes.numpy(), f=10, to_f=12))
    assert lns.zeros(2, 3, f=10).codes.eq(ZERO).all()
    assert lns.ones(4, f=10).codes.eq(0).all()
    assert lns.full((2,), -2.0, f=10).codes.eq(int(codes_of(-2.0, 10))).all()
    assert lns.ones_like(x).lns_base == x.lns_base
    assert lns.rand(3, 4, f=10).shape == (3, 4)
    assert "LNSTensor(value=" in repr(x)
    with pytest.raises(ValueError, match="f= or b=, not both"):
        lns.lnstensor(1.0, f=10, b=1.5)
    with pytest.raises(ValueError, match="only finite numbers have codes"):
        lns.lnstensor([1.0, float("nan")])
    with pytest.raises(TypeError, match="cannot make an LNS tensor"):
        lns.lnstensor("1.0")


def test_operators_follow_the_kernels_and_mixed_bases():
    x = lns.lnstensor(torch.randn(3, 4), f=10)
    y = lns.lnstensor(torch.randn(3, 4), f=12)
    xc, yc = x.codes.numpy(), y.codes.numpy()
    np.testing.assert_array_equal((x + y).codes.numpy(),
                                  lns.add(xc, yc, f=10, y_f=12))
    np.testing.assert_array_equal((x * y).codes.numpy(),
                                  lns.mul(xc, yc, f=10, y_f=12))
    assert (x - y).lns_base == lns.Base(f=10)  # the first operand's base
    assert (y - x).lns_base == lns.Base(f=12)
    np.testing.assert_array_equal((x * 2.0).codes.numpy(),
                                  lns.mul(xc, codes_of(2.0, 10), f=10))
    np.testing.assert_array_equal((1.0 - x).codes.numpy(),
                                  lns.sub(codes_of(np.ones((3, 4)), 10), xc,
                                          f=10))
    np.testing.assert_array_equal((-x).codes.numpy(), xc ^ 1)
    np.testing.assert_array_equal(
        (x @ y.T).codes.numpy(),
        lns.matmul(xc, lns.change_base(yc, f=12, to_f=10).T.copy(), f=10))


def test_mixed_base_gradient_codes():
    torch.manual_seed(4)
    x = lns.lnstensor(torch.randn(5), f=10, requires_grad=True)
    y = lns.lnstensor(torch.randn(5), f=16, requires_grad=True)
    g = lns.lnstensor(torch.randn(5), f=10)
    (x * y).backward(g)
    assert y.grad.lns_base == lns.Base(f=16)  # back in the operand's base
    gc = g.codes.numpy()
    xc, yc = x.codes.numpy(), y.codes.numpy()
    y10 = lns.change_base(yc, f=16, to_f=10)
    np.testing.assert_array_equal(x.grad.codes.numpy(), lns.mul(gc, y10, f=10))
    np.testing.assert_array_equal(
        y.grad.codes.numpy(),
        lns.change_base(lns.mul(gc, xc, f=10), f=10, to_f=16))


def test_broadcast_gradients_are_lns_sums():
    """Spec §5.3: add(X[2,2], y[2]) with g = [[0.5, 0.25], [2, 4]] gives
    gy = [2.5, 4.25] (the reference: a float sum of codes, [1, 1])."""
    f = 20
    x = lns.lnstensor(torch.ones(2, 2), f=f, requires_grad=True)
    y = lns.lnstensor(torch.ones(2), f=f, requires_grad=True)
    (x + y).backward(lns.lnstensor([[0.5, 0.25], [2.0, 4.0]], f=f))
    torch.testing.assert_close(y.grad.value,
                               torch.tensor([2.5, 4.25], dtype=torch.float64),
                               rtol=1e-5, atol=0)
    g = codes_of([[0.5, 0.25], [2.0, 4.0]], f)
    np.testing.assert_array_equal(y.grad.codes.numpy(),
                                  lns.sum(g, axis=0, f=f))
    assert x.grad.shape == (2, 2)


def test_sum_and_mse_backward_use_the_cotangent():
    """Spec §5.1–2: with g ≠ 1 the gradients scale with g (the reference
    ignores g)."""
    f = 20
    x = lns.lnstensor([1.0, 2.0, 3.0], f=f, requires_grad=True)
    (torch.sum(x) * 3.0).backward()
    torch.testing.assert_close(x.grad.value, torch.full((3,), 3.0,
                                                        dtype=torch.float64),
                               rtol=1e-5, atol=0)
    p = lns.lnstensor([1.0, 2.0], f=f, requires_grad=True)
    t = lns.lnstensor([0.0, 0.5], f=f)
    (F.mse_loss(p, t) * 4.0).backward()
    # d/dp mean((p - t)^2) = (p - t) · 2 / n, times 4.
    torch.testing.assert_close(p.grad.value, torch.tensor(
        [4.0, 6.0], dtype=torch.float64), rtol=1e-5, atol=0)
    q = lns.lnstensor([1.0, 2.0], f=f, requires_grad=True)
    F.mse_loss(q, t, reduction="none").backward(
        lns.lnstensor([1.0, 0.5], f=f))
    torch.testing.assert_close(q.grad.value, torch.tensor(
        [2.0, 1.5], dtype=torch.float64), rtol=1e-5, atol=0)
    with pytest.raises(ValueError, match="one shape"):
        F.mse_loss(q, lns.lnstensor([1.0, 2.0, 3.0], f=f))


def test_transpose_backward_transposes_the_cotangent():
    """Spec §5.4: the reference's transpose backward crashes; here gx is
    g transposed, code for code."""
    x = lns.lnstensor(torch.randn(2, 3), f=10, requires_grad=True)
    g = lns.lnstensor(torch.randn(3, 2), f=10)
    torch.transpose(x, 0, 1).backward(g)
    assert torch.equal(x.grad.codes, g.codes.T)
    y = lns.lnstensor(torch.randn(2, 3), f=10, requires_grad=True)
    y.reshape(3, 2).backward(g)
    assert torch.equal(y.grad.codes, g.codes.reshape(2, 3))


def test_zero_survives_a_change_of_base_and_powi():
    """Spec §5.5 and §5.7: zero stays Z (the reference turns it into a
    tiny code)."""
    z = np.array([ZERO, -(2**53), 0, 6], dtype=np.int64)
    converted = lns.change_base(z, f=23, to_f=10)
    assert converted[0] == ZERO and converted[1] == ZERO
    assert lns.powi(z, 5, f=10)[0] == ZERO
    sgd = lns.LNSSGD([{"params": [torch.zeros(2, dtype=torch.float64)],
                       "base": torch.tensor(2.0 ** (2.0 ** -10),
                                            dtype=torch.float64)}],
                     lr=0.1, momentum=0.0)
    group = sgd.param_groups[0]
    assert int(group["momentum"].code_in(lns.Base(f=10))) == ZERO


def test_division_by_zero_is_an_error_of_the_kernel_only():
    # LNS tensors divide by zero as the reference does (the formula's codes,
    # decoding to ±inf: test_lns_regressions.py); the kernel raises.
    x = lns.lnstensor([1.0, 2.0], f=10)
    with pytest.raises(ZeroDivisionError, match="divisor is zero at index"):
        lns.div(x.codes.numpy(), lns.encode(np.array([1.0, 0.0]), f=10),
                f=10)
    assert torch.isinf((x / lns.lnstensor([1.0, 0.0], f=10)).value[1])
    assert torch.isinf(torch.reciprocal(lns.lnstensor([0.0], f=10)).value[0])


def test_requires_grad_twice_records_one_gradient():
    """Spec §5.10: calling requires_grad_() again changes nothing."""
    x = lns.lnstensor([1.0, 2.0], f=16, requires_grad=True)
    x.requires_grad_()
    (x * 3.0).sum().backward()
    torch.testing.assert_close(x.grad.value, torch.full((2,), 3.0,
                                                        dtype=torch.float64),
                               rtol=1e-4, atol=0)


def test_backward_takes_a_cotangent_of_the_result_shape():
    x = lns.lnstensor([1.0, 2.0], f=16, requires_grad=True)
    with pytest.raises(ValueError, match="gradient has shape"):
        (x * 2.0).backward(lns.lnstensor([1.0], f=16))


def test_fan_out_of_an_input_is_rejected():
    x = lns.lnstensor([1.0, 2.0], f=16, requires_grad=True)
    with pytest.raises(RuntimeError, match="Fan-out in autograd graph is not "
                       "allowed, found: an LNS tensor of shape \\(2,\\) "
                       "used 2 times"):
        (x * x).sum().backward()
    assert x.grad is None


def test_comparisons_order_by_sign_then_exponent():
    values = [ZERO, -(2**53), 0, 1, 2, 3, 40, 41]
    x, y = np.meshgrid(values, values)
    x, y = x.reshape(-1), y.reshape(-1)
    a, b = from_codes(x, 10), from_codes(y, 10)

    def key(p):  # the reference's order
        sign, e = p & 1, p >> 1
        return (1 - sign, e if sign == 0 else -e)

    expected_gt = np.array([key(p) > key(q) for p, q in zip(x, y)])
    assert np.array_equal(torch.gt(a, b).numpy(), expected_gt)
    assert np.array_equal((a < b).numpy(),
                          np.array([key(p) < key(q) for p, q in zip(x, y)]))
    assert np.array_equal((a >= b).numpy(), ~(a < b).numpy())
    assert np.array_equal((a <= b).numpy(), ~(a > b).numpy())
    assert np.array_equal((a == b).numpy(), x == y)  # codes: Z != -2^53
    assert np.array_equal(torch.ne(a, b).numpy(), x != y)
    assert torch.equal(a, from_codes(x, 10)) and not torch.equal(a, b)
    np.testing.assert_array_equal(torch.maximum(a, b).codes.numpy(),
                                  np.where(expected_gt, x, y))
    np.testing.assert_array_equal(
        torch.minimum(a, b).codes.numpy(),
        np.where(np.array([key(p) < key(q) for p, q in zip(x, y)]), x, y))


def test_maximum_splits_the_gradient_of_ties():
    f = 16
    a = lns.lnstensor([1.0, 3.0, 2.0], f=f, requires_grad=True)
    b = lns.lnstensor([2.0, 1.0, 2.0], f=f, requires_grad=True)
    torch.maximum(a, b).backward(lns.lnstensor([4.0, 4.0, 4.0], f=f))
    torch.testing.assert_close(a.grad.value, torch.tensor(
        [0.0, 4.0, 2.0], dtype=torch.float64), rtol=1e-4, atol=0)
    torch.testing.assert_close(b.grad.value, torch.tensor(
        [4.0, 0.0, 2.0], dtype=torch.float64), rtol=1e-4, atol=0)


@pytest.mark.parametrize("op", [
    lambda t: torch.square(t), lambda t: torch.reciprocal(t),
    lambda t: t ** 3, lambda t: torch.pow(t, 2), lambda t: torch.sqrt(t),
    lambda t: torch.abs(t - 1.0), lambda t: F.relu(t - 1.0) * 2.0,
    lambda t: (t * 3.0 - 1.0) / 2.0,
    lambda t: torch.sum(t.reshape(2, 3), dim=1, keepdim=True) * 2.0,
])
def test_gradients_agree_with_float_autograd(op):
    """At f = 30 LNS values carry about nine digits: the LNS gradient of
    each operation equals float64 autograd to that precision."""
    values = torch.tensor([0.5, 1.25, 2.0, 0.75, 3.0, 1.5], dtype=torch.float64)
    x = lns.lnstensor(values, f=30, requires_grad=True)
    op(x).sum().backward()
    reference = values.clone().requires_grad_()
    op(reference).sum().backward()
    torch.testing.assert_close(x.grad.value, reference.grad, rtol=1e-7,
                               atol=0)


def test_matmul_with_1d_operands_and_sum_keepdim():
    a = lns.lnstensor(torch.randn(4), f=12)
    b = lns.lnstensor(torch.randn(4, 3), f=12)
    out = a @ b
    assert out.shape == (3,)
    np.testing.assert_array_equal(
        out.codes.numpy(), lns.matmul(a.codes.numpy()[None], b.codes.numpy(),
                                      f=12)[0])
    s = torch.sum(b, dim=0, keepdim=True)
    assert s.shape == (1, 3)
    np.testing.assert_array_equal(s.codes.numpy()[0],
                                  lns.sum(b.codes.numpy(), axis=0, f=12))


def test_lns_dropout_keeps_or_zeroes_each_element():
    torch.manual_seed(5)
    x = lns.lnstensor(torch.rand(200) + 0.5, f=16, requires_grad=True)
    assert F.dropout(x, 0.3, training=False) is x
    y = F.dropout(x, 0.3, training=True)
    kept = y.codes != ZERO
    assert 0.55 < kept.double().mean() < 0.85
    scale = int(codes_of(1.0 / 0.7, 16))
    np.testing.assert_array_equal(
        y.codes[kept].numpy(), lns.mul(x.codes[kept].numpy(),
                                       np.int64(scale), f=16))
    y.backward(lns.ones_like(y))
    np.testing.assert_array_equal(x.grad.codes.numpy(),
                                  np.where(kept.numpy(), scale, ZERO))
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(x, 1.5)


def test_operations_lamina_does_not_implement_say_so():
    x = lns.lnstensor([1.0, 2.0], f=10)
    with pytest.raises(TypeError, match="gelu is not an operation Lamina "
                       "implements on LNS tensors"):
        torch.nn.functional.gelu(x)
    with pytest.raises(TypeError, match="real exponent"):
        x ** torch.tensor(True)
    with pytest.raises(TypeError, match="stay float64"):
        x.to(torch.float32)


def test_optimizer_arguments_are_checked():
    params = [torch.zeros(2, dtype=torch.float64)]
    with pytest.raises(ValueError, match="Invalid lr value"):
        lns.LNSSGD([{"params": params, "base": torch.tensor(1.5)}], lr=-1.0)
    with pytest.raises(ValueError, match="Nesterov momentum requires"):
        lns.LNSSGD([{"params": params, "base": torch.tensor(1.5)}],
                   lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 1"):
        lns.LNSAdam([{"params": params, "base": torch.tensor(1.5)}],
                    betas=(0.9, 1.0))
    p = torch.zeros(2, dtype=torch.float64)
    p.grad = torch.zeros(2, dtype=torch.float64)
    sgd = lns.LNSSGD([p], lr=0.1)
    with pytest.raises(ValueError, match="needs a 'base' entry"):
        sgd.step()


def test_hyper_parameters_may_be_lns_numbers():
    layer = lns.LNSLinear(3, 2, weight_f=10)
    lr = lns.lnstensor(0.5, f=10)
    sgd = lns.LNSSGD(layer.lns_parameters(), lr=lr)
    before = layer.weight.codes.numpy()
    F.mse_loss(layer(lns.lnstensor(torch.ones(1, 3), f=10)),
               lns.lnstensor(torch.zeros(1, 2), f=10)).backward()
    grad = layer.weight.grad.codes.numpy()
    sgd.step()
    np.testing.assert_array_equal(
        layer.weight.codes.numpy(),
        lns.sub(before, lns.mul(grad, lr.codes.numpy(), f=10), f=10))
