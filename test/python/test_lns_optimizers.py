"""The LNS optimizers against the xlnstorch reference: the two-layer
network of test/data/lns-golden-ops/optimizers (LNSLinear → relu →
LNSLinear → mse_loss) trained with every optimizer and option set, every
gradient, parameter and optimizer-state code compared after each step;
their algorithms against torch.optim in float; their argument checks;
compile_step against the eager step."""

import json
import pathlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lamina import lns
from lamina.lns import optim, optimizers

GOLDEN = (pathlib.Path(__file__).resolve().parents[1] / "data"
          / "lns-golden-ops" / "optimizers")
ZERO = -(2**53) | 1
FILES = sorted(p.name for p in GOLDEN.glob("*.npz"))
NAMES = ["LNSAdamW", "LNSAdamax", "LNSAdagrad", "LNSRMSprop", "LNSRprop",
         "LNSAdadelta", "LNSASGD", "LNSNAdam", "LNSRAdam"]


def load(name):
    d = np.load(GOLDEN / name, allow_pickle=False)
    return d, dict(json.loads(str(d["meta"])), file=name)


def base_kw(meta):
    return {"f": meta["f"]} if meta["f"] is not None else {"b": meta["b"]}


def codes_tensor(codes, meta):
    return lns.lnstensor(torch.from_numpy(np.asarray(codes, np.float64)),
                         from_lns=True, **base_kw(meta))


def split(row, meta):
    """A flat row of w1, b1, w2, b2 codes as {name: array}."""
    out, start = {}, 0
    for name, shape in meta["params_layout"]:
        size = int(np.prod(shape))
        out[name] = row[start:start + size].reshape(shape)
        start += size
    return out


class Net(lns.LNSModule):
    def __init__(self, params, meta):
        super().__init__()
        kw = {"weight_f": meta["f"]} if meta["f"] is not None else \
            {"weight_b": meta["b"]}
        self.l1 = lns.LNSLinear(meta["K"], meta["H"], **kw)
        self.l2 = lns.LNSLinear(meta["H"], meta["N"], **kw)
        for layer, w, b in ((self.l1, "w1", "b1"), (self.l2, "w2", "b2")):
            layer.weight = codes_tensor(params[w], meta)
            layer.bias = codes_tensor(params[b], meta)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))

    def leaves(self):
        return [self.l1.weight.lns, self.l1.bias.lns, self.l2.weight.lns,
                self.l2.bias.lns]


def flat(arrays):
    return np.concatenate([np.asarray(a, np.int64).reshape(-1)
                           for a in arrays])


def assert_codes(actual, expected, what):
    actual = np.asarray(actual, np.int64)
    assert actual.shape == expected.shape, (what, actual.shape,
                                            expected.shape)
    differing = np.flatnonzero(actual != expected)
    assert differing.size == 0, (
        f"{what}: {differing.size} of {actual.size} codes differ, first at "
        f"{differing[0]}: {actual[differing[0]]} vs {expected[differing[0]]}")


def is_tiny(codes):
    """What the reference's base conversion makes of a zero (spec §4): a
    code of magnitude below b^-2^30."""
    return (codes >> 1) < -(2**30)


def make(d, meta, net):
    return getattr(optimizers, meta["optimizer"])(net.lns_parameters(),
                                                  **meta["kwargs"])


def state_row(optimizer, net, name, kind):
    """The state `name` of every parameter as one flat row, or None when
    Lamina keeps no such state."""
    values = [optimizer.state[p].get(name) for p in net.leaves()]
    if any(v is None for v in values):
        assert all(v is None for v in values), name
        return None
    if kind == "count":
        return np.asarray([int(v) for v in values], np.int64)
    return flat(v.numpy().astype(np.int64) for v in values)


# Momentum buffers the reference keeps because its base conversion turned
# momentum = 0 into a tiny non-zero code at f = 10 (spec §4): the buffer
# holds g / d, which then changes no parameter code. Lamina keeps none.
REFERENCE_ONLY_STATE = {"rmsprop_f10.npz": "momentum_buffer",
                        "rmsprop_centered_maximize_f10.npz":
                        "momentum_buffer"}


def assert_state(d, meta, optimizer, net, step, what):
    """Every state the reference keeps equals Lamina's, except where the
    reference holds a tiny code for the fix's Z (its zero hyper-parameters
    at f ≠ 23, spec §4) and the all-Z buffers the reference keeps but
    Lamina (like torch) does not; returns the count of tiny codes."""
    tiny = 0
    for name, kind in meta["state_kinds"].items():
        expected = d[f"state_{name}"][step]
        actual = state_row(optimizer, net, name, kind)
        if actual is None and REFERENCE_ONLY_STATE.get(meta["file"]) == name:
            continue
        if actual is None:
            assert np.all((expected == ZERO) | is_tiny(expected)), \
                f"{what}: Lamina keeps no {name}"
            continue
        differs = (actual == ZERO) & is_tiny(expected) & (expected != ZERO)
        tiny += int(differs.sum())
        assert_codes(actual[~differs], expected[~differs],
                     f"{what} state {name}")
    return tiny


def test_every_optimizer_and_base_is_covered():
    covered = {load(name)[1]["optimizer"] for name in FILES}
    assert covered == set(NAMES)
    assert {name.rsplit("_", 1)[1] for name in FILES} == \
        {"f10.npz", "f23.npz", "b1p001.npz"}


@pytest.mark.parametrize("name", FILES)
def test_hyper_parameters_are_the_reference_codes(name):
    d, meta = load(name)
    optimizer = make(d, meta, Net(split(d["params"][0], meta), meta))
    group = optimizer.param_groups[0]
    base = lns.Base.of(group["base"])
    for key, default, expected in zip(meta["hyper_names"],
                                      d["hyper_codes_default_base"],
                                      d["hyper_codes"]):
        assert int(group[key].code) == int(default), key
        if default == ZERO:
            assert int(group[key].code_in(base)) == ZERO  # the fix
        else:
            assert int(group[key].code_in(base)) == int(expected), key


@pytest.mark.parametrize("name", FILES)
def test_training_steps_match_the_reference(name):
    d, meta = load(name)
    net = Net(split(d["params"][0], meta), meta)
    optimizer = make(d, meta, net)
    tiny = 0
    for step in range(meta["steps"]):
        optimizer.zero_grad()
        loss = F.mse_loss(net(codes_tensor(d["x"][step], meta)),
                          codes_tensor(d["target"][step], meta))
        assert int(loss.codes) == int(d["loss"][step])
        loss.backward()
        assert_codes(flat(p.grad.numpy() for p in net.leaves()),
                     d["grads"][step], f"{name} step {step} grads")
        optimizer.step()
        assert_codes(flat(p.detach().numpy() for p in net.leaves()),
                     d["params"][step + 1], f"{name} step {step} params")
        tiny += assert_state(d, meta, optimizer, net, step,
                             f"{name} step {step}")
    assert tiny == TINY_STATE_CODES.get(name, 0)


# Elements where the reference's state holds a tiny code for the fix's Z:
# its zero weight decay, converted from the default base, adds a tiny term
# to a zero gradient element (spec §4). Counted over all steps, parameters
# and state names; no parameter code differs.
TINY_STATE_CODES = {"adagrad_f10.npz": 1, "adamax_f10.npz": 1,
                    "nadam_f10.npz": 16, "radam_f10.npz": 2,
                    "rmsprop_f10.npz": 4,
                    "rmsprop_centered_maximize_f10.npz": 18,
                    "rmsprop_centered_momentum_b1p001.npz": 21}


def test_radam_runs_both_branches():
    d, meta = load("radam_f23.npz")
    net = Net(split(d["params"][0], meta), meta)
    optimizer = make(d, meta, net)
    group = optimizer.param_groups[0]
    base = lns.Base.of(group["base"])
    branches = []
    for step in range(meta["steps"]):
        state = {"step": step}
        branches.append(optimizer.plan(group, base, state).rectified)
    assert branches[0] is False and branches[-1] is True


# -- against torch.optim in float ------------------------------------------

TORCH_EQUIVALENTS = [
    ("LNSAdamW", torch.optim.AdamW, {"lr": 0.01, "weight_decay": 0.1}),
    ("LNSAdamW", torch.optim.AdamW, {"lr": 0.01, "amsgrad": True,
                                     "maximize": True}),
    ("LNSAdamax", torch.optim.Adamax, {"lr": 0.02, "weight_decay": 0.01}),
    ("LNSAdagrad", torch.optim.Adagrad, {"lr": 0.05, "lr_decay": 0.1,
                                         "initial_accumulator_value": 0.1}),
    ("LNSRMSprop", torch.optim.RMSprop, {"lr": 0.01, "momentum": 0.9,
                                         "centered": True}),
    ("LNSRMSprop", torch.optim.RMSprop, {"lr": 0.01, "weight_decay": 0.1}),
    ("LNSRprop", torch.optim.Rprop, {"lr": 0.01, "step_sizes": (1e-3, 0.03)}),
    ("LNSAdadelta", torch.optim.Adadelta, {"lr": 0.5, "rho": 0.8}),
    ("LNSRAdam", torch.optim.RAdam, {"lr": 0.01, "betas": (0.8, 0.9)}),
]


def gradients(steps, shape, seed=7):
    rng = np.random.default_rng(seed)
    grads = rng.normal(size=(steps,) + shape)
    grads[:, 0, 0] = 0.0
    grads[1::2, 1] *= -1.0  # sign changes for Rprop
    return grads


def lns_run(cls, kwargs, start, grads):
    """The parameter after each step of `cls` from `start`, the gradients
    given, at f = 23 (decoded)."""
    layer = lns.LNSLinear(start.shape[1], start.shape[0], bias=False,
                          weight_f=23)
    layer.weight = lns.lnstensor(torch.from_numpy(start), f=23)
    optimizer = cls(layer.lns_parameters(), **kwargs)
    values = []
    for g in grads:
        layer.weight.lns.grad = lns.lnstensor(torch.from_numpy(g),
                                              f=23).lns.detach()
        optimizer.step()
        values.append(layer.weight.value.numpy().copy())
    return np.stack(values)


def decoded(values):
    return lns.lnstensor(torch.from_numpy(values), f=23).value.numpy()


@pytest.mark.parametrize("name,torch_cls,kwargs", TORCH_EQUIVALENTS)
def test_the_algorithm_is_torchs(name, torch_cls, kwargs):
    start = decoded(np.random.default_rng(3).uniform(-1, 1, (3, 4)))
    grads = decoded(gradients(5, (3, 4)))
    lamina_values = lns_run(getattr(optimizers, name), kwargs, start, grads)
    w = torch.nn.Parameter(torch.from_numpy(start.copy()))
    reference = torch_cls([w], **kwargs)
    for step, g in enumerate(grads):
        w.grad = torch.from_numpy(g.copy())
        reference.step()
        np.testing.assert_allclose(lamina_values[step], w.detach().numpy(),
                                   rtol=2e-5, atol=2e-6,
                                   err_msg=f"{name} step {step}")


def test_asgd_is_the_references_schedule():
    # The reference's ASGD takes ηₜ of this step (torch's takes the one of
    # the step before): a float transcription of the reference.
    lr, lambd, alpha, t0, wd = 0.05, 0.01, 0.5, 1.0, 0.01
    start = decoded(np.random.default_rng(3).uniform(-1, 1, (3, 4)))
    grads = decoded(gradients(4, (3, 4)))
    values = lns_run(optimizers.LNSASGD, dict(lr=lr, lambd=lambd,
                                              alpha=alpha, t0=t0,
                                              weight_decay=wd), start, grads)
    w, average, coef = start.copy(), start.copy(), 1.0
    for step, g in enumerate(grads):
        t = step + 1
        eta = lr / (1 + lambd * lr * t) ** alpha
        g = g + wd * w
        w = w * (1 - lambd * eta) - g * eta
        if t > t0:
            coef = 1 / max(1, t - t0)
        average = average + (w - average) * coef
        np.testing.assert_allclose(values[step], w, rtol=2e-5, atol=2e-6)


def test_nadam_is_torchs_corrected_algorithm():
    # torch 1.13's NAdam multiplies Πμ·μₜ₊₁ by μₜ once more (fixed in later
    # torch); the reference has the corrected product: a float
    # transcription of torch >= 2's NAdam, with L2 weight decay.
    lr, beta1, beta2, eps, wd, psi = 0.01, 0.9, 0.999, 1e-8, 0.01, 0.004
    start = decoded(np.random.default_rng(3).uniform(-1, 1, (3, 4)))
    grads = decoded(gradients(5, (3, 4)))
    values = lns_run(optimizers.LNSNAdam, dict(lr=lr, weight_decay=wd),
                     start, grads)
    w, m, v, product = start.copy(), 0.0, 0.0, 1.0
    for step, g in enumerate(grads):
        t = step + 1
        g = g + wd * w
        mu = beta1 * (1 - 0.5 * 0.96 ** (t * psi))
        mu_next = beta1 * (1 - 0.5 * 0.96 ** ((t + 1) * psi))
        product *= mu
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        denom = np.sqrt(v / (1 - beta2 ** t)) + eps
        w = w - lr * (1 - mu) / (1 - product) * g / denom \
            - lr * mu_next / (1 - product * mu_next) * m / denom
        np.testing.assert_allclose(values[step], w, rtol=2e-5, atol=2e-6)


# -- arguments ----------------------------------------------------------------

def layer_groups():
    return lns.LNSLinear(2, 2, weight_f=10).lns_parameters()


@pytest.mark.parametrize("name,kwargs,message", [
    ("LNSAdamW", {"lr": -1.0}, "Invalid learning rate: -1.0"),
    ("LNSAdamW", {"betas": (1.0, 0.9)}, "Invalid beta parameter at index 0"),
    ("LNSAdamW", {"eps": 0.0}, "Invalid epsilon value: 0.0"),
    ("LNSAdamW", {"weight_decay": -0.1}, "Invalid weight_decay value"),
    ("LNSAdamax", {"betas": (0.9, 1.5)}, "Invalid beta parameter at index 1"),
    ("LNSAdagrad", {"lr_decay": -1.0}, "Invalid lr_decay value"),
    ("LNSAdagrad", {"initial_accumulator_value": -1.0},
     "Invalid initial_accumulator_value value"),
    ("LNSAdagrad", {"eps": -1.0}, "Invalid epsilon value"),
    ("LNSRMSprop", {"alpha": 1.0}, "Invalid alpha value: 1.0"),
    ("LNSRMSprop", {"momentum": -0.5}, "Invalid momentum value"),
    ("LNSRprop", {"lr": 0.0}, "Invalid learning rate: 0.0"),
    ("LNSRprop", {"etas": (1.5, 1.2)}, "Invalid eta values: 1.5, 1.2"),
    ("LNSRprop", {"step_sizes": (1.0, 0.5)}, "Invalid step sizes"),
    ("LNSAdadelta", {"rho": 1.0}, "Invalid rho value: 1.0"),
    ("LNSAdadelta", {"lr": 0.0}, "Invalid learning rate"),
    ("LNSASGD", {"alpha": 0.0}, "Invalid alpha value"),
    ("LNSASGD", {"t0": -1.0}, "Invalid t0 value"),
    ("LNSASGD", {"lambd": -1.0}, "Invalid lambd value"),
    ("LNSNAdam", {"lr": 0.0}, "Invalid learning rate"),
    ("LNSNAdam", {"momentum_decay": -1.0}, "Invalid momentum_decay value"),
    ("LNSRAdam", {"eps": 0.0}, "Invalid epsilon value"),
])
def test_bad_arguments_raise_value_errors(name, kwargs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        getattr(optimizers, name)(layer_groups(), **kwargs)


def test_signatures_and_defaults_are_the_references():
    import inspect
    expected = {
        "LNSAdamW": "(params, lr=0.001, betas=(0.9, 0.999), eps=1e-08, "
                    "weight_decay=0.01, amsgrad=False, *, maximize=False)",
        "LNSAdamax": "(params, lr=0.002, betas=(0.9, 0.999), eps=1e-08, "
                     "weight_decay=0.0, *, maximize=False)",
        "LNSAdagrad": "(params, lr=0.01, lr_decay=0.0, weight_decay=0.0, "
                      "initial_accumulator_value=0, eps=1e-10, *, "
                      "maximize=False)",
        "LNSRMSprop": "(params, lr=0.01, alpha=0.99, eps=1e-08, "
                      "weight_decay=0.0, momentum=0.0, centered=False, *, "
                      "maximize=False)",
        "LNSRprop": "(params, lr=0.01, etas=(0.5, 1.2), "
                    "step_sizes=(1e-06, 50.0), *, maximize=False)",
        "LNSAdadelta": "(params, lr=1.0, rho=0.9, eps=1e-06, "
                       "weight_decay=0.0, *, maximize=False)",
        "LNSASGD": "(params, lr=0.01, lambd=0.0001, alpha=0.75, "
                   "t0=1000000.0, weight_decay=0.0, *, maximize=False)",
        "LNSNAdam": "(params, lr=0.002, betas=(0.9, 0.999), eps=1e-08, "
                    "weight_decay=0.0, momentum_decay=0.004, "
                    "decoupled_weight_decay=False, *, maximize=False)",
        "LNSRAdam": "(params, lr=0.001, betas=(0.9, 0.999), eps=1e-08, "
                    "weight_decay=0.0, decoupled_weight_decay=False, *, "
                    "maximize=False)",
    }
    for name, signature in expected.items():
        assert str(inspect.signature(getattr(optimizers, name))) == \
            signature, name


def test_the_module_names_of_the_reference_and_of_lamina():
    for name in NAMES + ["LNSSGD", "LNSAdam", "LNSOptimizer"]:
        assert getattr(optimizers, name) is getattr(optim, name)
        assert issubclass(getattr(optimizers, name), torch.optim.Optimizer)
    assert set(optimizers.__all__) == set(NAMES) | {"LNSSGD", "LNSAdam",
                                                    "LNSOptimizer"}


def test_a_zero_divisor_is_an_error():
    # eps = 0 and a zero gradient element: 0 / 0 in the update (the
    # reference's division does not check a zero divisor).
    layer = lns.LNSLinear(2, 1, bias=False, weight_f=10)
    optimizer = optimizers.LNSAdagrad(layer.lns_parameters(), eps=0.0)
    layer.weight.lns.grad = lns.lnstensor(torch.tensor([[0.0, 1.0]]),
                                          f=10).lns.detach()
    with pytest.raises(ZeroDivisionError, match="LNS division by zero"):
        optimizer.step()


def test_state_dict_round_trip_continues_bit_exactly():
    d, meta = load("nadam_decoupled_f10.npz")
    nets = [Net(split(d["params"][0], meta), meta) for _ in range(2)]
    first = make(d, meta, nets[0])
    for step in range(meta["steps"]):
        if step == 1:
            nets[1].load_state_dict(nets[0].state_dict())
            second = make(d, meta, nets[1])
            second.load_state_dict(first.state_dict())
            first = second
        net = nets[0] if step == 0 else nets[1]
        first.zero_grad()
        F.mse_loss(net(codes_tensor(d["x"][step], meta)),
                   codes_tensor(d["target"][step], meta)).backward()
        first.step()
        assert_codes(flat(p.detach().numpy() for p in net.leaves()),
                     d["params"][step + 1], f"step {step}")


def test_hyper_parameters_set_on_a_group_are_encoded():
    d, meta = load("adagrad_f10.npz")
    net = Net(split(d["params"][0], meta), meta)
    optimizer = make(d, meta, net)
    for group in optimizer.param_groups:
        group["lr"] = 0.05  # a float, as torch's schedulers write it
    F.mse_loss(net(codes_tensor(d["x"][0], meta)),
               codes_tensor(d["target"][0], meta)).backward()
    optimizer.step()
    assert_codes(flat(p.detach().numpy() for p in net.leaves()),
                 d["params"][1], "step 0")


# -- compile_step -------------------------------------------------------------

@pytest.mark.parametrize("name", ["adamw_amsgrad_f10.npz",
                                  "adamax_f23.npz",
                                  "adamax_wd_maximize_b1p001.npz",
                                  "adagrad_decay_wd_f23.npz",
                                  "rmsprop_centered_momentum_f10.npz",
                                  "adadelta_wd_maximize_b1p001.npz",
                                  "asgd_t0_wd_f10.npz",
                                  "nadam_decoupled_f23.npz",
                                  "radam_decoupled_maximize_f10.npz"])
def test_compile_step_takes_the_update_as_written(name):
    d, meta = load(name)
    net = Net(split(d["params"][0], meta), meta)
    optimizer = make(d, meta, net)
    x = [codes_tensor(d["x"][s], meta) for s in range(meta["steps"])]
    t = [codes_tensor(d["target"][s], meta) for s in range(meta["steps"])]
    step = lns.compile_step(net, F.mse_loss, optimizer, (x[0], t[0]))
    for s in range(meta["steps"]):
        step(x[s], t[s])
        assert_codes(flat(p.detach().numpy() for p in net.leaves()),
                     d["params"][s + 1], f"{name} compiled step {s}")
        assert_state(d, meta, optimizer, net, s, f"{name} compiled {s}")


def test_compile_step_names_what_runs_eagerly_only():
    # Rprop selects by comparisons, which the lns dialect cannot express:
    # compile_step itself refuses it, naming the optimizer.
    d, meta = load("rprop_f10.npz")
    net = Net(split(d["params"][0], meta), meta)
    optimizer = make(d, meta, net)
    x, t = codes_tensor(d["x"][0], meta), codes_tensor(d["target"][0], meta)
    with pytest.raises(lns.CompileError, match="LNSRprop does not compile "
                       ".*runs eagerly only"):
        lns.compile_step(net, F.mse_loss, optimizer, (x, t))


@pytest.mark.parametrize("name", ["LNSAdamW", "LNSAdamax", "LNSAdagrad",
                                  "LNSRMSprop", "LNSAdadelta", "LNSNAdam",
                                  "LNSRAdam"])
def test_compile_step_refuses_eps_zero(name):
    # Each of these divides by a term that eps keeps above zero; eagerly a
    # zero divisor raises, a compiled division would not check it. RAdam
    # reads eps from its rectified steps on (t = 6 with the default betas).
    # The Adam family's constructors refuse eps = 0; a group can still be
    # given it later, as a scheduler writes hyper-parameters.
    d, meta = load("adagrad_f10.npz")
    net = Net(split(d["params"][0], meta), meta)
    optimizer = getattr(optimizers, name)(net.lns_parameters())
    for group in optimizer.param_groups:
        group["eps"] = 0.0
    x, t = codes_tensor(d["x"][0], meta), codes_tensor(d["target"][0], meta)
    step = lns.compile_step(net, F.mse_loss, optimizer, (x, t))
    with pytest.raises(lns.CompileError,
                       match=f"the compiled {name} step needs eps > 0"):
        for _ in range(8):
            before = [p.detach().clone() for p in net.leaves()]
            step(x, t)
    assert all(torch.equal(a, b.detach()) for a, b in zip(before,
                                                          net.leaves()))
