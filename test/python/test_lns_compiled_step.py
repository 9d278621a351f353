"""lamina.lns.compile_step: forward, backward and optimizer update of an
LNS network as one compiled program, against the reference's golden
training runs and the eager LNS path, and what it refuses to compile."""

import copy

import pytest
import torch
import torch.nn.functional as F

from lamina import lns
from test_lns_training_golden import (MLP_FILES, PARAMETERS, assert_codes,
                                      assert_state, codes_tensor, load,
                                      make_optimizer, parameter, Net)


@pytest.mark.parametrize("name", MLP_FILES)
def test_compiled_steps_match_the_reference(name):
    d = load(name)
    f = int(d["f"])
    net = Net(d, f)
    optimizer = make_optimizer(d, net)
    step = lns.compile_step(net, F.mse_loss, optimizer,
                            (codes_tensor(d["x"][0], f),
                             codes_tensor(d["target"][0], f)))
    for s in range(int(d["steps"])):
        loss = step(codes_tensor(d["x"][s], f), codes_tensor(d["target"][s], f))
        assert_codes(loss.codes, d["loss"][s], f"{name} step {s} loss")
        for p in PARAMETERS:
            assert_codes(parameter(net, p).grad.codes, d[f"grad_{p}"][s],
                         f"{name} step {s} grad_{p}")
            assert_codes(parameter(net, p).codes, d[p][s + 1],
                         f"{name} step {s} {p}")
            assert_state(d, optimizer.state[parameter(net, p).lns], p, s,
                         f"{name} step {s}")


class Deep(lns.LNSModule):
    """Three layers in two bases, a scaled residual-free chain with every
    compiled op kind: linear, relu, matmul, element-wise ops with
    constants, powers, sums."""

    def __init__(self):
        super().__init__()
        self.fc1 = lns.LNSLinear(12, 16, weight_f=14)
        self.fc2 = lns.LNSLinear(16, 16, weight_f=12, bias_f=14)
        self.fc3 = lns.LNSLinear(16, 4, bias=False, weight_f=14)
        self.register_parameter("mix", lns.lnstensor(torch.randn(4, 4) * 0.5,
                                                     f=14))

    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = F.relu(self.fc2(h) * 0.5 - 0.125)
        return torch.matmul(self.fc3(h), self.mix) / 2.0


def loss_with_powers(y, target):
    return torch.sum(torch.square(F.mse_loss(y, target, reduction="none"))) \
        * 0.25


@pytest.mark.parametrize("make", [
    lambda groups: lns.LNSSGD(groups, lr=0.01, momentum=0.9, nesterov=True,
                              weight_decay=0.001),
    lambda groups: lns.LNSAdam(groups, lr=0.003, weight_decay=0.01,
                               amsgrad=True),
    lambda groups: lns.LNSSGD(groups, lr=0.02, maximize=True),
])
def test_compiled_steps_equal_eager_steps(make):
    torch.manual_seed(7)
    eager = Deep()
    compiled = copy.deepcopy(eager)
    eager_opt = make(eager.lns_parameters())
    compiled_opt = make(compiled.lns_parameters())
    batches = [(lns.lnstensor(torch.randn(6, 12), f=14),
                lns.lnstensor(torch.randn(6, 4), f=14)) for _ in range(4)]
    step = lns.compile_step(compiled, loss_with_powers, compiled_opt,
                            batches[0])
    for x, t in batches:
        eager_opt.zero_grad()
        loss = loss_with_powers(eager(x), t)
        loss.backward()
        eager_opt.step()
        compiled_loss = step(x, t)
        assert torch.equal(compiled_loss.codes, loss.codes)
        for (name, a), (_, b) in zip(eager.named_lns_parameters(),
                                     compiled.named_lns_parameters()):
            assert torch.equal(a.codes, b.codes), name
            assert torch.equal(a.grad.codes, b.grad.codes), name
    # The compiled step leaves state an eager step continues from.
    x, t = batches[0]
    for model, opt in ((eager, eager_opt), (compiled, compiled_opt)):
        opt.zero_grad()
        loss_with_powers(model(x), t).backward()
        opt.step()
    for (name, a), (_, b) in zip(eager.named_lns_parameters(),
                                 compiled.named_lns_parameters()):
        assert torch.equal(a.codes, b.codes), name


def _net_and_sgd(f=10):
    net = torch.nn.Sequential(lns.LNSLinear(8, 4, weight_f=f))
    return net, lns.LNSSGD(net[0].lns_parameters(), lr=0.1)


def _inputs(f=10, rows=3):
    return (lns.lnstensor(torch.randn(rows, 8), f=f),
            lns.lnstensor(torch.randn(rows, 4), f=f))


# An LNS tensor the loss uses that no recorded operation made.
OUTSIDE = lns.lnstensor(torch.ones(3, 4), f=10)


@pytest.mark.parametrize("loss_fn,message", [
    (lambda y, t: F.mse_loss(F.dropout(y, 0.5), t),
     "dropout does not compile into an LNS training step"),
    (lambda y, t: F.mse_loss(y * OUTSIDE, t),
     "does not record \\(indexing, .* a tensor made outside the model"),
    (lambda y, t: torch.sum(y + torch.sum(t, dim=0)),
     "broadcasting operands do not compile"),
    (lambda y, t: torch.sum(y - t, dim=0), "the loss must be a scalar"),
    (lambda y, t: torch.sum(torch.sum(y - t, dim=1, keepdim=True)),
     "keepdim=True\\) does not compile"),
])
def test_what_does_not_compile_is_named(loss_fn, message):
    net, sgd = _net_and_sgd()
    with pytest.raises(lns.CompileError, match=message):
        lns.compile_step(net, loss_fn, sgd, _inputs())


def test_fan_out_does_not_compile_either():
    net, sgd = _net_and_sgd()

    def twice(y, t):
        return F.mse_loss(y, t) + F.mse_loss(y, t)

    with pytest.raises(lns.CompileError, match="the loss cannot be "
                       "differentiated: .*an LNS value, feeds more than one "
                       "operation \\(fan-out\\)"):
        lns.compile_step(net, twice, sgd, _inputs())


def test_compile_step_checks_its_arguments():
    net, sgd = _net_and_sgd()
    with pytest.raises(lns.CompileError, match="takes an LNS optimizer "
                       "\\(lamina.lns.optim\\), got SGD"):
        lns.compile_step(net, F.mse_loss,
                         torch.optim.SGD(net.parameters(), lr=0.1), _inputs())
    with pytest.raises(lns.CompileError, match="LNS tensors .* as example"):
        lns.compile_step(net, F.mse_loss, sgd,
                         (torch.randn(3, 8), torch.randn(3, 4)))
    other = lns.LNSLinear(2, 2, weight_f=10)
    sgd_other = lns.LNSSGD(net[0].lns_parameters() + other.lns_parameters(),
                           lr=0.1)
    with pytest.raises(lns.CompileError, match="do not take part in the loss"):
        lns.compile_step(net, F.mse_loss, sgd_other, _inputs())
    step = lns.compile_step(net, F.mse_loss, sgd, _inputs())
    with pytest.raises(ValueError, match="compiled for inputs of shapes"):
        step(*_inputs(rows=5))
    adam = lns.LNSAdam(net[0].lns_parameters(), eps=0.0)
    with pytest.raises(lns.CompileError, match="needs eps > 0"):
        lns.compile_step(net, F.mse_loss, adam, _inputs())(*_inputs())


def test_a_torch_zero_grad_after_a_compiled_step_keeps_the_sum():
    # A torch optimizer zeroing .grad in place must not zero the stored
    # LNS sum: the next backward adds its gradient to the compiled step's,
    # as after an eager step.
    torch.manual_seed(5)
    net, sgd = _net_and_sgd()
    twin = copy.deepcopy(net)
    twin_sgd = lns.LNSSGD(twin[0].lns_parameters(), lr=0.1)
    x, t = _inputs()
    lns.compile_step(net, F.mse_loss, sgd, (x, t))(x, t)
    twin_sgd.zero_grad()
    F.mse_loss(twin(x), t).backward()
    twin_sgd.step()
    floats = torch.optim.SGD(list(net.parameters()) +
                             list(twin.parameters()), lr=0.0)
    floats.zero_grad(set_to_none=False)
    for model in (net, twin):
        F.mse_loss(model(x), t).backward()
    for a, b in zip(net[0].lns_parameters(), twin[0].lns_parameters()):
        grad, expected = a["params"][0].grad, b["params"][0].grad
        assert torch.equal(grad, expected)
        assert not torch.equal(grad, torch.zeros_like(grad))


def test_hyper_parameters_change_without_recompiling():
    torch.manual_seed(3)
    net, sgd = _net_and_sgd(f=16)
    twin = copy.deepcopy(net)
    twin_sgd = lns.LNSSGD(twin[0].lns_parameters(), lr=0.1)
    x, t = _inputs(f=16)
    step = lns.compile_step(net, F.mse_loss, sgd, (x, t))
    step(x, t)
    for group in sgd.param_groups:
        group["lr"] = lns.optim.HyperParameter("lr", 0.025)
    step(x, t)
    assert len(step._programs) == 1
    for lr in (0.1, 0.025):
        for group in twin_sgd.param_groups:
            group["lr"] = lns.optim.HyperParameter("lr", lr)
        twin_sgd.zero_grad()
        F.mse_loss(twin(x), t).backward()
        twin_sgd.step()
    assert torch.equal(net[0].weight.codes, twin[0].weight.codes)


class ScaledSGD(lns.LNSSGD):
    """SGD whose step is lr²·g: a user's own update, stated once."""

    @staticmethod
    def update(a, plan, w, g, hyper, state):
        return lns.LNSSGD.update(a, plan, w, a.mul(g, hyper("lr")), hyper,
                                 state)


def test_an_optimizer_update_is_written_once():
    # The compiled step evaluates the optimizer's own `update`: overriding
    # it changes eager and compiled steps alike.
    torch.manual_seed(3)
    eager, _ = _net_and_sgd()
    compiled, plain = copy.deepcopy(eager), copy.deepcopy(eager)
    opts = [ScaledSGD(m[0].lns_parameters(), lr=0.5, momentum=0.5)
            for m in (eager, compiled)]
    plain_opt = lns.LNSSGD(plain[0].lns_parameters(), lr=0.5, momentum=0.5)
    step = lns.compile_step(compiled, F.mse_loss, opts[1], _inputs())
    for _ in range(2):
        x, t = _inputs()
        for model, opt in ((eager, opts[0]), (plain, plain_opt)):
            opt.zero_grad()
            F.mse_loss(model(x), t).backward()
            opt.step()
        step(x, t)
        for a, b, c in zip(eager[0].lns_parameters(),
                           compiled[0].lns_parameters(),
                           plain[0].lns_parameters()):
            assert torch.equal(a["params"][0], b["params"][0])
            assert not torch.equal(a["params"][0], c["params"][0])
