"""lamina.lns.compile_step on the networks people train with xlnstorch:
activations, log_softmax / softmax with nll, cross entropy and mse losses,
2-D convolutions, reshapes between them. Every compiled step is compared
code for code with the eager path (zero_grad, backward, step), which the
golden tests hold bit-identical with the reference; the reference's own
MNIST example loop is checked against its golden codes, eager and
compiled."""

import copy
import pathlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lamina import lns
from lamina.lns.convolution import LNSConv1d, LNSConv2d

F_BITS = 14


def _batches(count, shape, classes, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [(lns.lnstensor(torch.randn(*shape, generator=generator),
                           f=F_BITS),
             torch.randint(0, classes, (shape[0],), generator=generator))
            for _ in range(count)]


def _assert_steps_equal(model, loss_fn, make_optimizer, batches):
    """Runs every batch eagerly on `model` and compiled on a copy; losses,
    parameters and gradients must agree bit for bit after each step."""
    eager, compiled = model, copy.deepcopy(model)
    eager_opt = make_optimizer(eager.lns_parameters())
    compiled_opt = make_optimizer(compiled.lns_parameters())
    step = lns.compile_step(compiled, loss_fn, compiled_opt, batches[0])
    for number, (x, t) in enumerate(batches):
        eager_opt.zero_grad()
        loss = loss_fn(eager(x), t)
        loss.backward()
        eager_opt.step()
        compiled_loss = step(x, t)
        assert torch.equal(compiled_loss.codes, loss.codes), number
        for (name, a), (_, b) in zip(eager.named_lns_parameters(),
                                     compiled.named_lns_parameters()):
            assert torch.equal(a.grad.codes, b.grad.codes), (number, name)
            assert torch.equal(a.codes, b.codes), (number, name)
    return step


class Mlp(lns.LNSModule):
    def __init__(self, activation, head=lambda y: F.log_softmax(y, dim=1)):
        super().__init__()
        self.fc1 = lns.LNSLinear(12, 16, weight_f=F_BITS)
        self.fc2 = lns.LNSLinear(16, 5, weight_f=F_BITS)
        self.activation, self.head = activation, head

    def forward(self, x):
        return self.head(self.fc2(self.activation(self.fc1(x))))


ACTIVATIONS = {
    "relu": F.relu,
    "leaky_relu": lambda h: F.leaky_relu(h, 0.1),
    "leaky_relu_negative_slope": lambda h: F.leaky_relu(h, -0.5),
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "nn_modules": torch.nn.Sequential(torch.nn.Tanh(), torch.nn.LeakyReLU()),
}


@pytest.mark.parametrize("activation", ACTIVATIONS, ids=str)
def test_activations_with_log_softmax_and_nll(activation):
    torch.manual_seed(1)
    _assert_steps_equal(Mlp(ACTIVATIONS[activation]), F.nll_loss,
                        lambda p: lns.LNSSGD(p, lr=0.1, momentum=0.9),
                        _batches(3, (6, 12), 5))


@pytest.mark.parametrize("loss_fn", [
    lambda y, t: F.nll_loss(y, t, reduction="sum"),
    lambda y, t: F.nll_loss(y, t, ignore_index=2),
    torch.nn.NLLLoss(ignore_index=0, reduction="sum"),
], ids=["sum", "mean_ignore_index", "module_sum_ignore_index"])
def test_nll_reductions_and_ignored_targets(loss_fn):
    torch.manual_seed(2)
    batches = _batches(2, (8, 12), 5, seed=3)
    assert any((t == 2).any() for _, t in batches)
    _assert_steps_equal(Mlp(F.relu), loss_fn,
                        lambda p: lns.LNSSGD(p, lr=0.05), batches)


def test_cross_entropy_is_log_softmax_and_nll():
    torch.manual_seed(3)
    x, t = _batches(1, (6, 12), 5)[0]
    y = Mlp(F.relu, head=lambda y: y)(x)
    assert torch.equal(F.cross_entropy(y, t).codes,
                       F.nll_loss(F.log_softmax(y, dim=1), t).codes)
    _assert_steps_equal(Mlp(torch.tanh, head=lambda y: y),
                        torch.nn.CrossEntropyLoss(),
                        lambda p: lns.LNSAdam(p, lr=0.01),
                        _batches(3, (6, 12), 5))


def test_softmax_exp_log_and_transpose_in_the_loss():
    def loss_fn(y, t):
        probabilities = F.softmax(y, dim=0).transpose(0, 1)
        return F.mse_loss(torch.log(torch.exp(probabilities) * 2.0), t)

    torch.manual_seed(4)
    generator = torch.Generator().manual_seed(5)
    batches = [(lns.lnstensor(torch.randn(4, 12, generator=generator),
                              f=F_BITS),
                lns.lnstensor(torch.rand(5, 4, generator=generator),
                              f=F_BITS)) for _ in range(2)]
    _assert_steps_equal(Mlp(torch.sigmoid, head=lambda y: y), loss_fn,
                        lambda p: lns.LNSSGD(p, lr=0.1), batches)


class Cnn(lns.LNSModule):
    def __init__(self, spatial, **conv):
        super().__init__()
        self.conv = LNSConv2d(2, 3, 3, weight_f=F_BITS, **conv)
        with torch.no_grad():
            features = self.conv(lns.lnstensor(torch.zeros(1, 2, *spatial),
                                                f=F_BITS)).numel()
        self.fc = lns.LNSLinear(features, 4, weight_f=F_BITS)

    def forward(self, x):
        h = F.relu(self.conv(x))
        return F.log_softmax(self.fc(h.view(h.shape[0], -1)), dim=1)


@pytest.mark.parametrize("conv", [
    {},
    {"stride": 2, "padding": 1},
    {"stride": (1, 2), "padding": (2, 0), "dilation": (2, 1)},
    {"padding": "same", "bias": False},
], ids=["plain", "stride_padding", "mixed", "same_no_bias"])
def test_convolution_networks(conv):
    torch.manual_seed(6)
    _assert_steps_equal(Cnn((7, 6), **conv), F.nll_loss,
                        lambda p: lns.LNSSGD(p, lr=0.1, momentum=0.5),
                        _batches(2, (3, 2, 7, 6), 4, seed=7))


class EvenKernel(lns.LNSModule):
    def __init__(self):
        super().__init__()
        self.conv = LNSConv2d(1, 2, (2, 4), padding="same", weight_f=F_BITS)
        self.fc = lns.LNSLinear(2 * 5 * 5, 3, weight_f=F_BITS)

    def forward(self, x):
        h = torch.flatten(torch.tanh(self.conv(x)), 1)
        return F.log_softmax(self.fc(h), dim=1)


def test_even_kernel_same_padding_pads_after():
    """padding='same' with an even kernel pads one more after, as torch."""
    torch.manual_seed(8)
    _assert_steps_equal(EvenKernel(), F.nll_loss,
                        lambda p: lns.LNSSGD(p, lr=0.1),
                        _batches(2, (2, 1, 5, 5), 3, seed=9))


class ReferenceMnistNet(lns.LNSModule):
    """The network of xlnstorch's MNIST example, as written there (inputs
    flattened with view(-1, 784), relu after both layers, log_softmax)."""

    def __init__(self):
        super().__init__()
        self.fc1 = lns.LNSLinear(784, 100)
        self.fc2 = lns.LNSLinear(100, 10)
        weight1, weight2 = torch.empty(100, 784), torch.empty(10, 100)
        torch.nn.init.normal_(weight1, mean=0.0, std=0.1)
        torch.nn.init.normal_(weight2, mean=0.0, std=0.1)
        self.fc1.weight_lns.data.copy_(lns.lnstensor(weight1)._lns)
        self.fc2.weight_lns.data.copy_(lns.lnstensor(weight2)._lns)
        self.fc1.bias_lns.data.copy_(lns.lnstensor(torch.zeros(100))._lns)
        self.fc2.bias_lns.data.copy_(lns.lnstensor(torch.zeros(10))._lns)

    def forward(self, x):
        x = x.view(-1, 784)
        x = torch.nn.functional.relu(self.fc1(x))
        x = torch.nn.functional.relu(self.fc2(x))
        return torch.nn.functional.log_softmax(x, dim=1)


def test_the_reference_mnist_example_compiles_as_written():
    torch.manual_seed(10)
    model = ReferenceMnistNet()
    generator = torch.Generator().manual_seed(11)
    batches = [(lns.lnstensor(torch.rand(8, 1, 28, 28, generator=generator)),
                torch.randint(0, 10, (8,), generator=generator))
               for _ in range(2)]
    _assert_steps_equal(
        model, torch.nn.NLLLoss(),
        lambda p: lns.LNSSGD(p, lr=0.1, momentum=0.9), batches)


# -- what does not compile, and says so ---------------------------------------

def _compile(model, loss_fn, inputs):
    sgd = lns.LNSSGD(model.lns_parameters(), lr=0.1)
    return lns.compile_step(model, loss_fn, sgd, inputs)


def test_grouped_convolutions_do_not_compile():
    model = torch.nn.Sequential(LNSConv2d(2, 2, 3, groups=2, weight_f=10))
    model.lns_parameters = model[0].lns_parameters
    x = lns.lnstensor(torch.randn(1, 2, 4, 4), f=10)
    t = lns.lnstensor(torch.randn(1, 2, 2, 2), f=10)
    with pytest.raises(lns.CompileError, match="groups=2 does not compile"):
        _compile(model, F.mse_loss, (x, t))


def test_one_dimensional_convolutions_do_not_compile():
    model = torch.nn.Sequential(LNSConv1d(2, 2, 3, padding=1, weight_f=10))
    model.lns_parameters = model[0].lns_parameters
    x = lns.lnstensor(torch.randn(2, 2, 4), f=10)
    t = lns.lnstensor(torch.randn(2, 2, 4), f=10)
    with pytest.raises(lns.CompileError,
                       match="conv1d does not compile into an LNS training"):
        _compile(model, F.mse_loss, (x, t))


def test_nll_errors():
    model = Mlp(F.relu)
    x, t = _batches(1, (4, 12), 5)[0]
    weight = lns.lnstensor(torch.rand(5) + 0.5, f=F_BITS)
    with pytest.raises(lns.CompileError, match="class weights does not"):
        _compile(model, lambda y, t: F.nll_loss(y, t, weight=weight), (x, t))
    with pytest.raises(lns.CompileError, match="must be the step's last"):
        _compile(model, lambda y, t: F.nll_loss(y, t.flip(0)), (x, t))
    with pytest.raises(ValueError, match="class indices"):
        F.cross_entropy(model(x), torch.rand(4, 5))
    with pytest.raises(ValueError, match="label_smoothing"):
        F.cross_entropy(model(x), t, label_smoothing=0.1)


def test_inputs_must_be_lns_or_class_indices():
    model = Mlp(F.relu)
    x, _ = _batches(1, (4, 12), 5)[0]
    with pytest.raises(lns.CompileError, match="class indices as example"):
        _compile(model, F.nll_loss, (x, torch.rand(4)))


def test_activations_without_a_compiled_form_say_so():
    model = Mlp(F.softmin)
    with pytest.raises(lns.CompileError, match="softmin does not compile"):
        _compile(model, F.nll_loss, _batches(1, (4, 12), 5)[0])


# -- the NumPy spec of these steps (the benchmark's baseline) -----------------

def test_the_numpy_spec_steps_equal_the_compiled_steps():
    """lamina.lns.numpy_spec's network steps, written independently in
    NumPy, give the compiled step's codes."""
    from lamina.lns import numpy_spec as spec

    class SpecCnn(lns.LNSModule):
        def __init__(self):
            super().__init__()
            self.conv = LNSConv2d(1, 2, 3, weight_f=F_BITS)
            self.fc = lns.LNSLinear(2 * 4 * 4, 3, weight_f=F_BITS)

        def forward(self, x):
            h = F.relu(self.conv(x))
            return F.log_softmax(self.fc(h.flatten(1)), dim=1)

    torch.manual_seed(12)
    model = SpecCnn()
    params = [t.codes.numpy() for t in (model.conv.weight, model.conv.bias,
                                        model.fc.weight, model.fc.bias)]
    sgd = lns.LNSSGD(model.lns_parameters(), lr=0.1, momentum=0.9)
    base = lns.Base(f=F_BITS)
    hp = dict(lr=int(sgd.param_groups[0]["lr"].code_in(base)),
              momentum=int(sgd.param_groups[0]["momentum"].code_in(base)),
              dampening=spec.ZERO, weight_decay=spec.ZERO, nesterov=False,
              maximize=False)
    states = [{} for _ in params]
    batches = _batches(2, (3, 1, 6, 6), 3, seed=13)
    step = lns.compile_step(model, F.nll_loss, sgd, batches[0])
    for x, t in batches:
        loss = step(x, t)
        spec_loss, params = spec.mnist_cnn_step(
            x.codes.numpy(), t.numpy(), params, states, hp, F_BITS)
        assert int(loss.codes) == int(spec_loss)
        for tensor, codes in zip((model.conv.weight, model.conv.bias,
                                  model.fc.weight, model.fc.bias), params):
            assert torch.equal(tensor.codes, torch.from_numpy(codes).double())


# -- the reference's own loop -------------------------------------------------

GOLDEN = pathlib.Path(__file__).resolve().parents[1] / "data" / \
    "lns-golden-ops" / "training"


class GoldenMlp(lns.LNSModule):
    def __init__(self):
        super().__init__()
        self.fc1 = lns.LNSLinear(64, 16)
        self.fc2 = lns.LNSLinear(16, 10)

    def forward(self, x):
        x = x.view(-1, 64)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return F.log_softmax(x, dim=1)


class GoldenCnn(lns.LNSModule):
    def __init__(self):
        super().__init__()
        self.register_parameter("conv_weight",
                                lns.lnstensor(torch.zeros(2, 1, 3, 3)))
        self.register_parameter("conv_bias", lns.lnstensor(torch.zeros(2)))
        self.fc = lns.LNSLinear(2 * 8 * 8, 10)

    def forward(self, x):
        h = F.relu(F.conv2d(x, self.conv_weight, self.conv_bias, padding=1))
        return F.log_softmax(self.fc(h.view(h.shape[0], -1)), dim=1)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name,make", [("mnist_mlp", GoldenMlp),
                                       ("cnn", GoldenCnn)])
def test_the_reference_training_loop(name, make, compiled):
    """xlnstorch's MNIST example loop, eager and compiled, against the
    reference's codes after every step."""
    golden = np.load(GOLDEN / f"{name}.npz", allow_pickle=False)
    model = make()
    parameters = dict(model.named_parameters())
    names = str(golden["parameters"]).split()
    assert sorted(names) == sorted(parameters)
    with torch.no_grad():
        for n in names:
            parameters[n].copy_(torch.from_numpy(golden[f"{n}_0"]).double())
    optimizer = lns.LNSSGD(model.parameter_groups(), lr=0.1, momentum=0.9)
    loss_func = torch.nn.NLLLoss()
    step = None
    for s in range(int(golden["steps"])):
        x = lns.lnstensor(torch.from_numpy(golden["images"][s]))
        target = torch.from_numpy(golden["targets"][s])
        if compiled:
            step = step or lns.compile_step(model, loss_func, optimizer,
                                            (x, target))
            loss = step(x, target)
        else:
            optimizer.zero_grad()
            loss = loss_func(model(x), target)
            loss.backward()
            optimizer.step()
        assert int(loss.codes) == int(golden[f"loss_{s}"]), s
        for n in names:
            assert torch.equal(parameters[n].detach(), torch.from_numpy(
                golden[f"{n}_{s + 1}"]).double()), (s, n)
