"""The LNS loss functions (lamina.lns.losses): forward codes and input
gradients bit-exact with the xlnstorch reference's golden vectors
(test/data/lns-golden-ops/losses/, README there), values close to float
PyTorch's, torch.nn loss modules on LNS tensors, and argument errors."""

import json
import pathlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import lamina.lns as L
from lamina.lns import losses

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / \
    "lns-golden-ops" / "losses"
FILES = sorted(DATA.glob("*.npz"))


def _cases():
    for path in FILES:
        with np.load(path) as data:
            meta = json.loads(str(data["meta"]))
        for name in sorted(meta):
            yield pytest.param(path, name, id=name)


def _lns(codes, base, requires_grad=False):
    return L.lnstensor(torch.from_numpy(codes.astype(np.float64)),
                       from_lns=True, requires_grad=requires_grad, **base)


def _run_case(data, name, meta):
    case = meta[name]
    base = case["base"]
    leaves, args = {}, []
    for arg in case["args"]:
        codes = data[f"{name}/{arg}"]
        if arg == "target" and name.startswith("nll"):
            args.append(torch.from_numpy(codes))  # class indices stay plain
            continue
        leaves[arg] = _lns(codes, base, arg in case["grad_args"])
        args.append(leaves[arg])
    kwargs = {k: (_lns(data[f"{name}/kw_{k}"], base) if v == "lns" else v)
              for k, v in case["kwargs"].items()}
    return leaves, args, kwargs


def _loss_name(path):
    return path.stem


def test_golden_files_exist():
    assert len(FILES) == 11
    assert sum(p.stat().st_size for p in FILES) < 300_000


@pytest.mark.parametrize("path,name", list(_cases()))
def test_golden(path, name):
    with np.load(path) as data:
        meta = json.loads(str(data["meta"]))
        leaves, args, kwargs = _run_case(data, name, meta)
        function = getattr(F, _loss_name(path))
        if "weight" in kwargs and _loss_name(path) == "huber_loss":
            function = losses.huber_loss  # torch 1.13's F.huber_loss: no weight
        out = function(*args, **kwargs)
        assert isinstance(out, L.LNSTensor)
        assert np.array_equal(out.codes.numpy(), data[f"{name}/out"])
        out.backward(_lns(data[f"{name}/g"], meta[name]["base"]))
        for arg in meta[name]["grad_args"]:
            key = f"{name}/grad_{arg}"
            fixed = key + "_if_fixed"
            expected = data[fixed] if fixed in data else data[key]
            got = leaves[arg].grad
            assert got is not None, arg
            assert np.array_equal(got.codes.numpy(), expected), arg


# -- semantics against float PyTorch -----------------------------------------

def _pair(f=23):
    x = torch.tensor([[0.1, 0.5, 0.9], [0.3, 0.7, 0.2]], dtype=torch.float64)
    y = torch.tensor([[0.2, 0.4, 0.8], [0.3, 0.9, 0.1]], dtype=torch.float64)
    return x, y, L.lnstensor(x, f=f), L.lnstensor(y, f=f)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("loss", [
    "l1_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
    "poisson_nll_loss", "kl_div", "smooth_l1_loss", "huber_loss"])
def test_close_to_float_torch(loss, reduction):
    x, y, a, b = _pair()
    got = getattr(F, loss)(a, b, reduction=reduction).value
    # The float reference on the decoded operands.
    want = getattr(F, loss)(a.value, b.value, reduction=reduction)
    assert torch.allclose(got, want, rtol=1e-5, atol=1e-7)


def test_gradients_close_to_float_torch():
    x, y, a, b = _pair()
    for loss in ["l1_loss", "binary_cross_entropy", "smooth_l1_loss",
                 "kl_div", "binary_cross_entropy_with_logits"]:
        leaf = L.lnstensor(x, f=23, requires_grad=True)
        getattr(F, loss)(leaf, b, reduction="sum").backward()
        ref = a.value.clone().requires_grad_()
        getattr(F, loss)(ref, b.value, reduction="sum").backward()
        assert torch.allclose(leaf.grad.value, ref.grad, rtol=1e-5), loss


def test_nll_loss_and_modules():
    logp = torch.log(torch.tensor([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1]],
                                  dtype=torch.float64))
    target = torch.tensor([0, 1])
    x = L.lnstensor(logp, f=23)
    assert torch.allclose(torch.nn.NLLLoss()(x, target).value,
                          torch.nn.NLLLoss()(x.value, target), rtol=1e-6)
    assert torch.allclose(torch.nn.L1Loss(reduction="sum")(x, x).value,
                          torch.zeros((), dtype=torch.float64))
    signs = L.lnstensor(torch.tensor([[1.0, -1.0, 1.0], [-1.0, -1.0, 1.0]]),
                        f=23)
    probabilities = L.lnstensor(torch.tensor([[0.2, 0.3, 0.5],
                                              [0.1, 0.1, 0.8]]), f=23)
    for module, y in [(torch.nn.SmoothL1Loss(beta=0.5), signs),
                      (torch.nn.HuberLoss(delta=0.5), signs),
                      (torch.nn.KLDivLoss(reduction="batchmean"),
                       probabilities),
                      (torch.nn.HingeEmbeddingLoss(margin=2.0), signs)]:
        got = module(x, y).value
        want = module(x.value, y.value)
        assert torch.allclose(got, want, rtol=1e-5), type(module).__name__


def test_nll_ignore_index_and_k_dim():
    logp = torch.log(torch.softmax(torch.randn(2, 3, 4, dtype=torch.float64,
                                               generator=torch.Generator()
                                               .manual_seed(0)), dim=1))
    target = torch.tensor([[0, 1, 2, -100], [2, -100, 1, 0]])
    x = L.lnstensor(logp, f=23, requires_grad=True)
    got = F.nll_loss(x, target, reduction="mean")
    ref = x.value.clone().requires_grad_()
    want = F.nll_loss(ref, target, reduction="mean")
    assert torch.allclose(got.value, want, rtol=1e-6)
    got.backward()
    want.backward()
    assert torch.allclose(x.grad.value, ref.grad, rtol=1e-6)


def test_pos_weight_gaussian_margin_close_to_float():
    x, y, a, b = _pair()
    pw = torch.tensor([1.0, 2.0, 0.5], dtype=torch.float64)
    leaf = L.lnstensor(x, f=23, requires_grad=True)
    got = F.binary_cross_entropy_with_logits(leaf, b, pos_weight=L.lnstensor(
        pw, f=23), reduction="sum")
    ref = a.value.clone().requires_grad_()
    want = F.binary_cross_entropy_with_logits(ref, b.value, pos_weight=pw,
                                              reduction="sum")
    assert torch.allclose(got.value, want, rtol=1e-5)
    got.backward()
    want.backward()
    assert torch.allclose(leaf.grad.value, ref.grad, rtol=1e-5)
    var = L.lnstensor(torch.tensor([0.5, 2.0]), f=23)  # one per row
    assert torch.allclose(F.gaussian_nll_loss(a, b, var).value,
                          F.gaussian_nll_loss(a.value, b.value, var.value),
                          rtol=1e-5)
    sign = L.lnstensor(torch.tensor([[1.0, -1.0, 1.0], [-1.0, 1.0, 1.0]]))
    assert torch.allclose(F.margin_ranking_loss(a, b, sign, margin=0.1).value,
                          F.margin_ranking_loss(a.value, b.value, sign.value,
                                                margin=0.1), rtol=1e-5)


def test_log_of_zero_is_torch_clamp():
    p = L.lnstensor([0.0, 1.0], f=23)
    t = L.lnstensor([1.0, 0.0], f=23)
    got = F.binary_cross_entropy(p, t, reduction="none").value
    assert torch.allclose(got, torch.tensor([100.0, 100.0],
                                            dtype=torch.float64), rtol=1e-5)
    # a saturated, correct prediction: loss zero, gradient -y/x + 0/0 with
    # the reference's 0/0 = 0 (the one-sided derivative), no error
    p = L.lnstensor([1.0, 0.0], f=10, requires_grad=True)
    loss = F.binary_cross_entropy(p, L.lnstensor([1.0, 0.0], f=10),
                                  reduction="sum")
    assert loss.value.item() == 0.0
    loss.backward()
    assert p.grad.value.tolist() == [-1.0, 1.0]


def test_recorded_under_its_own_name():
    from lamina.lns import trace
    x, y, a, b = _pair()
    with trace.recording() as recorder:
        F.l1_loss(a, b)
    assert [step.op for step in recorder.steps][-1] == "l1_loss"


# -- errors ------------------------------------------------------------------

def test_errors():
    x, y, a, b = _pair()
    with pytest.raises(ValueError, match="avg"):
        F.l1_loss(a, b, reduction="avg")
    with pytest.raises(ValueError, match="batchmean"):
        F.l1_loss(a, b, reduction="batchmean")
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(a * 2.0, b)
    with pytest.raises(ValueError, match="size"):
        F.binary_cross_entropy(a, L.lnstensor(y[0]))
    with pytest.raises(ValueError, match="size"):
        F.binary_cross_entropy_with_logits(a, L.lnstensor(y[0]))
    with pytest.raises(IndexError, match="Target 5"):
        F.nll_loss(a, torch.tensor([0, 5]))
    with pytest.raises(RuntimeError, match="integer"):
        F.nll_loss(a, torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="target of shape"):
        F.nll_loss(a, torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="negative"):
        F.gaussian_nll_loss(a, b, -a)
    with pytest.raises(ValueError, match="does not fit"):
        F.gaussian_nll_loss(a, b, L.lnstensor([1.0, 2.0, 3.0, 4.0]))
    with pytest.raises(RuntimeError, match="delta"):
        F.huber_loss(a, b, delta=0.0)
    with pytest.raises(RuntimeError, match="beta"):
        F.smooth_l1_loss(a, b, beta=-1.0)
    with pytest.raises(ValueError, match="logarithm"):
        F.kl_div(a, -b)
    with pytest.raises(TypeError, match="LNS operand"):
        losses.l1_loss(torch.ones(2), torch.ones(2))


def test_deprecated_reduction_arguments():
    x, y, a, b = _pair()
    with pytest.warns(UserWarning):
        got = F.l1_loss(a, b, size_average=False)
    assert torch.equal(got.codes, F.l1_loss(a, b, reduction="sum").codes)
