"""LNS training against the xlnstorch reference: the two-layer network of
test/data/lns-golden-train (LNSLinear → relu → LNSLinear → mse_loss)
trained three steps with every optimizer configuration, and gradients
accumulated over three backward calls — every activation, gradient,
optimizer state and parameter code compared."""

import io
import pathlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from lamina import lns

GOLDEN = (pathlib.Path(__file__).resolve().parents[1] / "data"
          / "lns-golden-train")
ZERO = -(2**53) | 1


def load(name):
    return np.load(GOLDEN / name, allow_pickle=False)


def codes_tensor(codes, f):
    return lns.lnstensor(torch.from_numpy(np.asarray(codes, np.float64)),
                         from_lns=True, f=f)


def assert_codes(actual, expected, what):
    actual = np.asarray(actual, dtype=np.int64)
    assert actual.shape == expected.shape, (what, actual.shape, expected.shape)
    differing = np.flatnonzero(actual.reshape(-1) != expected.reshape(-1))
    assert differing.size == 0, (
        f"{what}: {differing.size} of {actual.size} codes differ, first at "
        f"{differing[0]}: {actual.reshape(-1)[differing[0]]} vs "
        f"{expected.reshape(-1)[differing[0]]}")


class Net(lns.LNSModule):
    def __init__(self, d, f, index=0):
        super().__init__()
        k, h, n = int(d["K"]), int(d["H"]), int(d["N"])
        self.l1 = lns.LNSLinear(k, h, weight_f=f)
        self.l2 = lns.LNSLinear(h, n, weight_f=f)
        for layer, w, b in ((self.l1, "w1", "b1"), (self.l2, "w2", "b2")):
            layer.weight = codes_tensor(d[w][index], f)
            layer.bias = codes_tensor(d[b][index], f)

    def forward(self, x):
        self.h_pre = self.l1(x)
        self.h = F.relu(self.h_pre)
        self.y = self.l2(self.h)
        return self.y


PARAMETERS = {"w1": ("l1", "weight"), "b1": ("l1", "bias"),
              "w2": ("l2", "weight"), "b2": ("l2", "bias")}


def parameter(net, name):
    layer, attribute = PARAMETERS[name]
    return getattr(getattr(net, layer), attribute)


def make_optimizer(d, net):
    kind = str(d["optimizer"])
    hp = {k[3:]: d[k].item() for k in d.files
          if k.startswith("hp_") and "_code" not in k}
    groups = net.lns_parameters()
    if kind == "LNSSGD":
        return lns.LNSSGD(groups, lr=hp["lr"], momentum=hp["momentum"],
                          dampening=hp["dampening"],
                          weight_decay=hp["weight_decay"],
                          nesterov=bool(hp["nesterov"]),
                          maximize=bool(hp["maximize"]))
    assert kind == "LNSAdam"
    return lns.LNSAdam(groups, lr=hp["lr"], betas=(hp["beta1"], hp["beta2"]),
                       eps=hp["eps"], weight_decay=hp["weight_decay"],
                       amsgrad=bool(hp["amsgrad"]),
                       maximize=bool(hp["maximize"]))


MLP_FILES = sorted(p.name for p in GOLDEN.glob("mlp_*.npz"))
# Elements where the reference's optimizer state holds a tiny code instead
# of Z: its base conversion turns a zero weight decay into a tiny non-zero
# code (spec §4; the fix keeps Z). Counted over all steps and parameters.
TINY_STATE_CODES = {"mlp_sgd_momentum_f10.npz": 12,
                    "mlp_sgd_nesterov_f10.npz": 12, "mlp_adam_f10.npz": 24}


def is_tiny(codes):
    """Codes of magnitude below b^-2^30: what a zero turned into by the
    reference's base conversion becomes."""
    return (codes >> 1) < -(2**30)


def test_all_network_files_are_covered():
    assert len(MLP_FILES) == 18


@pytest.mark.parametrize("name", MLP_FILES)
def test_hyper_parameters_are_encoded_as_the_reference(name):
    d = load(name)
    base = lns.Base(f=int(d["f"]))
    optimizer = make_optimizer(d, Net(d, int(d["f"])))
    group = optimizer.param_groups[0]
    for key in d.files:
        if not (key.startswith("hp_") and key.endswith("_code")):
            continue
        hyper = key[3:-5]
        value = group[hyper].code_in(base)
        assert int(group[hyper].code) == int(d[f"hp_{hyper}_code_default_base"])
        if d[f"hp_{hyper}"].item() == 0.0:
            assert int(value) == ZERO  # the fix: zero stays zero
        else:
            assert int(value) == int(d[key]), hyper


@pytest.mark.parametrize("name", MLP_FILES)
def test_training_steps_match_the_reference(name):
    d = load(name)
    f = int(d["f"])
    net = Net(d, f)
    optimizer = make_optimizer(d, net)
    names = list(PARAMETERS)
    tiny = 0
    for step in range(int(d["steps"])):
        optimizer.zero_grad()
        x, target = codes_tensor(d["x"][step], f), codes_tensor(
            d["target"][step], f)
        y = net(x)
        loss = F.mse_loss(y, target)
        for key, tensor in (("h_pre", net.h_pre), ("h", net.h), ("y", y),
                            ("loss", loss)):
            assert_codes(tensor.codes, d[key][step], f"{name} step {step} {key}")
        for key, tensor in (("grad_y", y), ("grad_h", net.h),
                            ("grad_h_pre", net.h_pre)):
            tensor.lns.retain_grad()
        loss.backward()
        for key, tensor in (("grad_y", y), ("grad_h", net.h),
                            ("grad_h_pre", net.h_pre)):
            assert_codes(tensor.lns.grad, d[key][step],
                         f"{name} step {step} {key}")
        for p in names:
            assert_codes(parameter(net, p).grad.codes, d[f"grad_{p}"][step],
                         f"{name} step {step} grad_{p}")
        optimizer.step()
        for p in names:
            assert_codes(parameter(net, p).codes, d[p][step + 1],
                         f"{name} step {step} {p}")
            tiny += assert_state(d, optimizer.state[parameter(net, p).lns],
                                 p, step, f"{name} step {step}")
    assert tiny == TINY_STATE_CODES.get(name, 0)


def assert_state(d, state, p, step, what):
    """The optimizer state of parameter `p` after `step` equals the golden
    state, except where the reference holds a tiny code for the fix's Z
    (its zero hyper-parameters, spec §4); returns how many such codes."""
    if "hp_momentum" in d.files and d["hp_momentum"].item() == 0:
        assert state == {}  # the fix: no momentum buffer
        return 0
    tiny = 0
    for key in d.files:
        if not (key.startswith("state_") and key.endswith("_" + p)):
            continue
        slot = key[len("state_"):-len(p) - 1]
        expected = d[key][step]
        if slot == "step":
            assert state["step"] == int(expected)
            continue
        actual = state[slot].numpy().astype(np.int64)
        differs = (actual == ZERO) & is_tiny(expected) & (expected != ZERO)
        tiny += int(differs.sum())
        assert_codes(actual[~differs], expected[~differs], f"{what} {key}")
    return tiny


ACCUMULATE_FILES = sorted(p.name for p in GOLDEN.glob("accumulate_*.npz"))


@pytest.mark.parametrize("name", ACCUMULATE_FILES)
def test_gradients_accumulate_in_call_order(name):
    d = load(name)
    f = int(d["f"])
    net = Net(d, f)
    optimizer = lns.LNSSGD(net.lns_parameters(), lr=d["hp_lr"].item())
    assert int(optimizer.param_groups[0]["lr"].code_in(lns.Base(f=f))) == \
        int(d["hp_lr_code"])
    optimizer.zero_grad()
    for call in range(int(d["n_micro"])):
        loss = F.mse_loss(net(codes_tensor(d["x"][call], f)),
                          codes_tensor(d["target"][call], f))
        assert_codes(loss.codes, d["loss"][call], f"{name} loss {call}")
        loss.backward()
        for p in PARAMETERS:
            leaf = parameter(net, p).lns
            assert_codes(leaf._lns_incoming[call], d[f"micro_grad_{p}"][call],
                         f"{name} call {call} micro_grad_{p}")
            assert_codes(leaf.grad, d[f"grad_after_{p}"][call],
                         f"{name} call {call} grad_after_{p}")
    for p in PARAMETERS:
        # The other order of the same three LNS additions differs: the
        # accumulation order is part of the result.
        other = d[f"grad_other_order_{p}"]
        assert (parameter(net, p).grad.codes.numpy() != other).sum() == \
            d["n_order_sensitive"][list(PARAMETERS).index(p)]
    optimizer.step()
    for p in PARAMETERS:
        assert_codes(parameter(net, p).codes, d[f"{p}_after_step"],
                     f"{name} {p}_after_step")


@pytest.mark.parametrize("name", ACCUMULATE_FILES)
def test_fan_out_is_rejected_as_the_reference(name):
    d = load(name)
    f = int(d["f"])
    tied = lns.LNSLinear(int(d["K"]), int(d["K"]), weight_f=f)
    x = codes_tensor(d["x"][0], f)
    out = tied(F.relu(tied(x)))
    with pytest.raises(RuntimeError) as error:
        out.sum().backward()
    assert str(error.value).startswith(str(d["fanout_error"]))
    assert "parameter of shape" in str(error.value)
    assert tied.weight.lns.grad is None  # raised before any gradient


def test_zero_grad_of_module_clears_accumulation():
    # A torch optimizer's zero_grad does not, as in the reference
    # (test_lns_regressions.py).
    d = load(ACCUMULATE_FILES[0])
    f = int(d["f"])
    x, t = codes_tensor(d["x"][0], f), codes_tensor(d["target"][0], f)
    net = Net(d, f)
    F.mse_loss(net(x), t).backward()
    first = parameter(net, "w1").grad.codes.clone()
    net.zero_grad()
    F.mse_loss(net(x), t).backward()
    assert torch.equal(parameter(net, "w1").grad.codes, first)


def test_state_dict_round_trip_keeps_codes_and_bases():
    d = load(MLP_FILES[0])
    f = int(d["f"])
    net = Net(d, f)
    state = net.state_dict()
    assert set(state) == {"l1.weight_lns", "l1.weight_base", "l1.bias_lns",
                          "l1.bias_base", "l2.weight_lns", "l2.weight_base",
                          "l2.bias_lns", "l2.bias_base"}
    other = Net(d, f, index=1)
    assert not torch.equal(other.l1.weight.codes, net.l1.weight.codes)
    other.load_state_dict(state)
    for p in PARAMETERS:
        assert torch.equal(parameter(other, p).codes, parameter(net, p).codes)
        assert parameter(other, p).lns_base == lns.Base(f=f)
    # A state dict of another base carries it along.
    layer = lns.LNSLinear(3, 2, weight_f=12)
    target = lns.LNSLinear(3, 2, weight_f=20)
    target.load_state_dict(layer.state_dict())
    assert target.weight.lns_base == lns.Base(f=12)
    assert torch.equal(target.weight.codes, layer.weight.codes)


class LazyNet(lns.LNSModule):
    """Net of LNSLazyLinear layers, in_features taken from the first input
    or from a state dict."""

    def __init__(self, d, f):
        super().__init__()
        self.l1 = lns.LNSLazyLinear(int(d["H"]), weight_f=f)
        self.l2 = lns.LNSLazyLinear(int(d["N"]), weight_f=f)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


@pytest.mark.parametrize("name", ["mlp_sgd_momentum_f16.npz",
                                  "mlp_adam_amsgrad_wd_f10.npz"])
def test_a_lazy_model_saved_and_loaded_trains_as_the_reference(name):
    # The golden weights reach a lazy model through load_state_dict before
    # any input; after the first step model and optimizer are saved
    # (torch.save) and loaded into a new lazy model and optimizer, which
    # take the remaining steps: every parameter and state code as the
    # reference's.
    d = load(name)
    f = int(d["f"])
    lazy = LazyNet(d, f)
    assert lazy.lns_parameters() == []
    lazy.load_state_dict(Net(d, f).state_dict())
    optimizer = make_optimizer(d, lazy)
    for step in range(int(d["steps"])):
        if step == 1:
            buffer = io.BytesIO()
            torch.save({"model": lazy.state_dict(),
                        "optimizer": optimizer.state_dict()}, buffer)
            buffer.seek(0)
            saved = torch.load(buffer)
            lazy = LazyNet(d, f)
            lazy.load_state_dict(saved["model"])
            optimizer = make_optimizer(d, lazy)
            optimizer.load_state_dict(saved["optimizer"])
        optimizer.zero_grad()
        x, target = codes_tensor(d["x"][step], f), codes_tensor(
            d["target"][step], f)
        F.mse_loss(lazy(x), target).backward()
        optimizer.step()
        for p in PARAMETERS:
            tensor = parameter(lazy, p)
            assert_codes(tensor.codes, d[p][step + 1], f"{name} step {step} {p}")
            assert_state(d, optimizer.state[tensor.lns], p, step,
                         f"{name} step {step}")


def test_module_conversions_keep_codes():
    layer = lns.LNSLinear(4, 3, weight_f=23)
    before = layer.weight.codes.clone()
    layer.float()
    layer.to(torch.float16)
    assert layer.weight_lns.dtype == torch.float64
    assert torch.equal(layer.weight.codes, before)
    layer.eval()
    assert not layer.training
    layer.train()
    assert layer.training


def test_lazy_layer_groups_appear_with_its_first_input():
    layer = lns.LNSLazyLinear(5, weight_f=10)
    assert layer.lns_parameters() == []
    layer(lns.lnstensor(torch.randn(2, 7), f=10))
    groups = layer.lns_parameters()
    assert [tuple(g["params"][0].shape) for g in groups] == [(5, 7), (5,)]
    assert all(lns.Base.of(g["base"]) == lns.Base(f=10) for g in groups)
    assert [g["params"][0] for g in layer.parameter_groups()] == \
        [g["params"][0] for g in groups]


def test_an_lns_model_trains_end_to_end():
    """LNSLazyLinear layers trained with LNSAdam reduce the loss of a small
    regression problem."""
    torch.manual_seed(0)
    model = nn.Sequential(lns.LNSLazyLinear(16, weight_f=16), nn.ReLU(),
                          lns.LNSLazyLinear(1, weight_f=16))
    x = torch.randn(32, 4, dtype=torch.float64)
    y = (x[:, :1] - 0.5 * x[:, 1:2])
    xs, ys = lns.lnstensor(x, f=16), lns.lnstensor(y, f=16)
    model(xs)
    groups = [g for m in model if isinstance(m, lns.LNSModule)
              for g in m.lns_parameters()]
    optimizer = lns.LNSAdam(groups, lr=0.02)
    losses = []
    for _ in range(25):
        optimizer.zero_grad()
        loss = F.mse_loss(model(xs), ys)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.3 * losses[0], losses


@pytest.mark.parametrize("name", ["mlp_sgd_f10.npz", "mlp_sgd_f16.npz",
                                  "mlp_sgd_f23.npz"])
def test_the_numpy_spec_trains_as_the_reference(name):
    """lamina.lns_numpy's training step (the benchmarks' baseline) is an
    independent oracle: it reproduces the reference's plain-SGD runs."""
    from lamina import lns_numpy
    d = load(name)
    f = int(d["f"])
    params = [d[p][0] for p in PARAMETERS]
    for step in range(int(d["steps"])):
        loss, params, grads = lns_numpy.mlp_sgd_step(
            d["x"][step], d["target"][step], params, int(d["hp_lr_code"]), f)
        assert int(loss) == int(d["loss"][step])
        for p, value, grad in zip(PARAMETERS, params, grads):
            assert_codes(grad, d[f"grad_{p}"][step], f"{name} grad_{p}")
            assert_codes(value, d[p][step + 1], f"{name} {p}")


@pytest.mark.parametrize("name", MLP_FILES)
def test_the_numpy_spec_steps_every_optimizer_as_the_reference(name):
    """lamina.lns_numpy's optimizers (spec §4, written again in NumPy) are
    an independent oracle too: hyper-parameter codes, parameters and state
    after every step of every golden run (state compared where reference
    and fix agree, as for lamina.lns)."""
    from lamina import lns_numpy
    d = load(name)
    f = int(d["f"])
    adam = str(d["optimizer"]) == "LNSAdam"
    names = (["lr", "beta1", "beta2", "eps", "weight_decay"] if adam else
             ["lr", "momentum", "dampening", "weight_decay"])
    hp = {}
    for key in names:
        value = float(d[f"hp_{key}"])
        hp[key] = lns_numpy.hyper(value, f)
        expected = ZERO if value == 0 else int(d[f"hp_{key}_code"])
        assert int(hp[key]) == expected, key  # the fix: zero stays Z
    for flag in ("amsgrad", "maximize") if adam else ("nesterov", "maximize"):
        hp[flag] = bool(d[f"hp_{flag}"])
    update = lns_numpy.adam_update if adam else lns_numpy.sgd_update
    params = [d[p][0] for p in PARAMETERS]
    states = [{} for _ in PARAMETERS]
    tiny = 0
    for step in range(int(d["steps"])):
        _, params, _ = lns_numpy.mlp_step(d["x"][step], d["target"][step],
                                          params, update, states, hp, f)
        for p, value, state in zip(PARAMETERS, params, states):
            assert_codes(value, d[p][step + 1], f"{name} step {step} {p}")
            as_tensors = {k: v if k == "step" else torch.from_numpy(
                np.asarray(v, np.int64)) for k, v in state.items()}
            tiny += assert_state(d, as_tensors, p, step, f"{name} step {step}")
    assert tiny == TINY_STATE_CODES.get(name, 0)
