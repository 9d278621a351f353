"""LNS layers in compiled float models, trained: a layer replaced by its
LNS variant (`replace(LNSLinear)`) and an LNSLinear written in the model
hold LNS parameters (`<name>_lns` codes, `<name>_base`), get gradient codes
from the compiled backward and are stepped by the LNS optimizers,
bit-identical with the eager LNS layer (lamina.lns, itself checked against
the reference's golden data) at every step."""

import copy

import pytest
import torch
from torch import nn

import lamina
from lamina import lns

F_BITS = 10


class OneLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(x)


def _replaced(model, x, path="fc"):
    sch = lamina.create_schedule(model, example_inputs=(x,))
    sch[path].replace(lns.LNSLinear(8, 4, weight_f=F_BITS))
    return lamina.build(sch, (x,))


def _codes(groups):
    return [group["params"][0] for group in groups]


def test_a_replaced_layer_holds_lns_parameters():
    torch.manual_seed(0)
    model = OneLayer()
    compiled = _replaced(model, torch.randn(3, 8))
    assert [n for n, _ in compiled.named_parameters()] == ["fc.weight_lns",
                                                           "fc.bias_lns"]
    assert [n for n, _ in compiled.named_buffers()] == ["fc.weight_base",
                                                        "fc.bias_base"]
    eager = lns.LNSLinear.from_linear(model.fc, weight_f=F_BITS)
    for got, want in zip(_codes(compiled.lns_parameters()),
                         _codes(eager.lns_parameters())):
        assert got.dtype == torch.float64
        assert torch.equal(got, want)
    # The layer's parameters read as LNS tensors, as on the eager layer.
    assert isinstance(compiled.fc.weight, lns.LNSTensor)
    assert torch.equal(compiled.fc.weight.codes, eager.weight.codes)
    assert compiled.fc.bias.lns_base == lns.Base(f=F_BITS)
    # The state dict loads into the eager layer (codes and bases).
    state = {k.removeprefix("fc."): v for k, v in
             compiled.state_dict().items()}
    loaded = lns.LNSLinear(8, 4, weight_f=F_BITS)
    loaded.load_state_dict(state)
    assert torch.equal(loaded.weight.codes, eager.weight.codes)


@pytest.mark.parametrize("make", [
    lambda groups: lns.LNSSGD(groups, lr=0.1, momentum=0.9),
    lambda groups: lns.LNSAdam(groups, lr=0.01, amsgrad=True),
])
def test_a_replaced_layer_trains_as_the_eager_lns_layer(make):
    torch.manual_seed(1)
    model = OneLayer()
    x = torch.randn(5, 8, requires_grad=True)
    compiled = _replaced(model, x.detach())
    eager = lns.LNSLinear.from_linear(model.fc, weight_f=F_BITS)
    opt, eager_opt = make(compiled.lns_parameters()), \
        make(eager.lns_parameters())
    for _ in range(3):
        g = torch.randn(5, 4)
        x_eager = x.detach().clone().requires_grad_()
        opt.zero_grad()
        eager_opt.zero_grad()
        x.grad = None
        y = compiled(x)
        y_eager = eager(x_eager)
        assert torch.equal(y.detach(), y_eager.detach())
        y.backward(g)
        y_eager.backward(g)
        for got, want in zip(_codes(compiled.lns_parameters()),
                             _codes(eager.lns_parameters())):
            assert torch.equal(got.grad, want.grad)
        assert torch.equal(x.grad, x_eager.grad)
        opt.step()
        eager_opt.step()
        # The next call computes with the stepped codes.
        for got, want in zip(_codes(compiled.lns_parameters()),
                             _codes(eager.lns_parameters())):
            assert torch.equal(got, want)


def test_gradients_of_successive_backward_calls_add_in_lns():
    torch.manual_seed(2)
    model = OneLayer()
    x = torch.randn(3, 8)
    compiled = _replaced(model, x)
    eager = lns.LNSLinear.from_linear(model.fc, weight_f=F_BITS)
    for _ in range(2):
        g = torch.randn(3, 4)
        compiled(x).backward(g)
        eager(x).backward(g)
    for got, want in zip(_codes(compiled.lns_parameters()),
                         _codes(eager.lns_parameters())):
        assert torch.equal(got.grad, want.grad)
    compiled.zero_grad()
    for codes in _codes(compiled.lns_parameters()):
        assert bool((codes.grad == lns.autograd.ZERO).all())


class Mixed(nn.Module):
    """A float layer after an LNS one. fc2's weights and the cotangents
    are multiples of 1/4, so the float backward into the LNS layer is
    exact in any order of additions: compiled and eager cotangents agree
    bit for bit before they are encoded."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 6)
        self.fc2 = nn.Linear(6, 4)
        with torch.no_grad():
            self.fc2.weight.copy_(torch.randint(-4, 5, (4, 6)) / 4.0)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def test_a_float_model_with_an_lns_layer_trains_both():
    torch.manual_seed(3)
    model = Mixed()
    x = torch.randn(5, 8)
    sch = lamina.create_schedule(model, example_inputs=(x,))
    sch["fc1"].replace(lns.LNSLinear(8, 6, weight_f=F_BITS))
    compiled = lamina.build(sch, (x,))
    eager = copy.deepcopy(model)
    eager.fc1 = lns.LNSLinear.from_linear(model.fc1, weight_f=F_BITS)
    assert sorted(n for n, _ in compiled.named_parameters()) == sorted(
        n for n, _ in eager.named_parameters())
    float_params = lambda m: [p for n, p in m.named_parameters()  # noqa
                              if not n.endswith("_lns")]
    opts = [(torch.optim.SGD(float_params(m), lr=0.05),
             lns.LNSSGD(m.lns_parameters() if m is compiled else
                        m.fc1.lns_parameters(), lr=0.05))
            for m in (compiled, eager)]
    for _ in range(2):
        g = torch.randint(-2, 3, (5, 4)) / 4.0
        for m, (sgd, lns_sgd) in zip((compiled, eager), opts):
            sgd.zero_grad()
            lns_sgd.zero_grad()
            m(x).backward(g)
        for got, want in zip(_codes(compiled.lns_parameters()),
                             _codes(eager.fc1.lns_parameters())):
            assert torch.equal(got.grad, want.grad)
        torch.testing.assert_close(compiled.fc2.weight.grad,
                                   eager.fc2.weight.grad, rtol=1e-5,
                                   atol=1e-5)
        for sgd, lns_sgd in opts:
            sgd.step()
            lns_sgd.step()
    torch.testing.assert_close(compiled(x), eager(x), rtol=1e-5, atol=1e-5)
    # zero_grad on a layer: a float layer's gradients become zeros, an LNS
    # layer's the zero code.
    for layer in (compiled.fc1, compiled.fc2):
        layer.zero_grad(set_to_none=False)
    assert not compiled.fc2.weight.grad.any()
    for codes in _codes(compiled.lns_parameters()):
        assert bool((codes.grad == lns.autograd.ZERO).all())


def test_an_lns_layer_of_the_model_trains_compiled():
    torch.manual_seed(4)
    model = nn.Sequential(lns.LNSLinear(8, 4, weight_f=F_BITS), nn.ReLU())
    eager = copy.deepcopy(model)
    x = torch.randn(3, 8)
    compiled = lamina.build(lamina.create_schedule(model, example_inputs=(x,)),
                            (x,))
    assert [n for n, _ in compiled.named_parameters()] == ["0.weight_lns",
                                                           "0.bias_lns"]
    opt = lns.LNSAdam(compiled.lns_parameters(), lr=0.02)
    eager_opt = lns.LNSAdam(eager[0].lns_parameters(), lr=0.02)
    for _ in range(3):
        g = torch.randn(3, 4)
        for m, o in ((compiled, opt), (eager, eager_opt)):
            o.zero_grad()
            m(x).backward(g)
            o.step()
        for got, want in zip(_codes(compiled.lns_parameters()),
                             _codes(eager[0].lns_parameters())):
            assert torch.equal(got.grad, want.grad)
            assert torch.equal(got, want)
    # The compiled module trained the model's own code Parameters.
    assert compiled.lns_parameters()[0]["params"][0] is model[0].weight.lns
