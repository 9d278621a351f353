"""lamina.lns bilinear maps, channel dropout and LNSIdentity: F.bilinear,
F.dropout1d/2d/3d and the LNSBilinear, LNSDropout*, LNSIdentity layers
against the xlnstorch reference's codes (test/data/lns-golden-ops/layers)
and float PyTorch."""

import pathlib
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from lamina import lns
from lamina.lns.layers import (LNSBilinear, LNSDropout, LNSDropout1d,
                               LNSDropout2d, LNSDropout3d, LNSIdentity)

GOLDEN = (pathlib.Path(__file__).resolve().parents[1] / "data"
          / "lns-golden-ops" / "layers")
BILINEAR_FILES = sorted(p.name for p in GOLDEN.glob("bilinear_*.npz"))
DROPOUT_FILES = sorted(p.name for p in GOLDEN.glob("dropout*.npz"))
Z = -(2**53) | 1


def _base(d):
    f = int(d["f"])
    return {"f": f} if f >= 0 else {"b": float(d["b"])}


def _lns(codes, d, requires_grad=False):
    return lns.lnstensor(torch.tensor(codes.astype(np.float64)), from_lns=True,
                         requires_grad=requires_grad, **_base(d))


def test_the_golden_set_is_there():
    assert (len(BILINEAR_FILES), len(DROPOUT_FILES)) == (7, 15)


# -- bilinear -------------------------------------------------------------


@pytest.mark.parametrize("name", BILINEAR_FILES)
def test_bilinear_codes_equal_the_reference(name):
    d = np.load(GOLDEN / name, allow_pickle=False)
    x1, x2 = _lns(d["x1"], d, True), _lns(d["x2"], d, True)
    w = _lns(d["weight"], d, True)
    b = _lns(d["bias"], d, True) if bool(d["has_bias"]) else None
    y = F.bilinear(x1, x2, w, b)
    assert np.array_equal(y.codes.numpy(), d["out"])
    y.backward(_lns(d["g"], d))
    assert np.array_equal(x1.grad.codes.numpy(), d["grad_x1"])
    assert np.array_equal(x2.grad.codes.numpy(), d["grad_x2"])
    if b is not None:
        assert np.array_equal(b.grad.codes.numpy(), d["grad_bias"])
    # The reference gives the weight no gradient; Lamina's is checked
    # against float autograd below.
    assert w.grad is not None


def test_batched_rows_are_the_one_row_results():
    torch.manual_seed(5)
    x1 = lns.lnstensor(torch.randn(2, 3, 4), f=12)
    x2 = lns.lnstensor(torch.randn(2, 3, 5), f=12)
    w = lns.lnstensor(torch.randn(6, 4, 5), f=12)
    b = lns.lnstensor(torch.randn(6), f=12)
    y = F.bilinear(x1, x2, w, b)
    assert y.shape == (2, 3, 6)
    for i in range(2):
        for j in range(3):
            one = F.bilinear(
                lns.lnstensor(x1.lns[i, j], from_lns=True, f=12),
                lns.lnstensor(x2.lns[i, j], from_lns=True, f=12), w, b)
            assert torch.equal(one.codes, y.codes[i, j])


def test_bilinear_follows_float_pytorch():
    torch.manual_seed(6)
    x1 = lns.lnstensor(torch.randn(4, 3), requires_grad=True)
    x2 = lns.lnstensor(torch.randn(4, 2), requires_grad=True)
    w = lns.lnstensor(torch.randn(5, 3, 2), requires_grad=True)
    b = lns.lnstensor(torch.randn(5), requires_grad=True)
    y = F.bilinear(x1, x2, w, b)
    floats = [t.value.clone().requires_grad_() for t in (x1, x2, w, b)]
    yf = F.bilinear(*floats)
    np.testing.assert_allclose(y.value, yf.detach(), rtol=1e-5, atol=1e-6)
    g = torch.randn(yf.shape, dtype=torch.float64)
    y.backward(lns.lnstensor(g))
    yf.backward(g)
    for lns_t, float_t in zip((x1, x2, w, b), floats):
        np.testing.assert_allclose(lns_t.grad.value, float_t.grad,
                                   rtol=1e-5, atol=1e-6)


def test_bilinear_layers():
    d = np.load(GOLDEN / "init_bilinear.npz", allow_pickle=False)
    torch.manual_seed(int(d["seed"]))
    layer = LNSBilinear(3, 2, 4)
    assert np.array_equal(layer.weight.codes.numpy(), d["weight"])
    assert np.array_equal(layer.bias.codes.numpy(), d["bias"])
    assert [n for n, _ in layer.named_parameters()] == ["weight_lns",
                                                        "bias_lns"]
    x1, x2 = lns.lnstensor(torch.randn(2, 3)), lns.lnstensor(torch.randn(2, 2))
    assert torch.equal(layer(x1, x2).codes,
                       F.bilinear(x1, x2, layer.weight, layer.bias).codes)
    small = LNSBilinear(2, 2, 1, bias=False, weight_f=10)
    assert small.bias is None and small.weight.lns_base == lns.Base(f=10)
    # torch's own layer takes LNS inputs: its float parameters are encoded.
    torch_layer = torch.nn.Bilinear(3, 2, 4).double()
    y = torch_layer(x1, x2)
    expected = F.bilinear(x1, x2, lns.lnstensor(torch_layer.weight.detach()),
                          lns.lnstensor(torch_layer.bias.detach()))
    assert torch.equal(y.codes, expected.codes)


@pytest.mark.parametrize("shapes,message", [
    (((2, 3), (3, 4), (5, 3, 4), None), "batch dimensions do not match"),
    (((2, 3), (2, 4), (5, 3, 3), None), "input2 size does not match"),
    (((2, 2), (2, 4), (5, 3, 4), None), "input1 size does not match"),
    (((2, 3), (2, 4), (5, 3, 4), (4,)), "bias size does not match"),
    (((2, 3), (2, 4), (3, 4), None), "weight must be 3-D"),
])
def test_bilinear_shapes_are_checked(shapes, message):
    x1, x2, w, b = (None if s is None else lns.lnstensor(torch.ones(s))
                    for s in shapes)
    with pytest.raises(RuntimeError, match=message):
        F.bilinear(x1, x2, w, b)


# -- dropout ----------------------------------------------------------------


@pytest.mark.parametrize("name", DROPOUT_FILES)
def test_channel_dropout_draws_the_reference_masks(name):
    d = np.load(GOLDEN / name, allow_pickle=False)
    x = _lns(d["x"], d, True)
    torch.manual_seed(int(d["seed"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dropout2d of a 3-D input warns
        y = getattr(F, str(d["op"]))(x, p=float(d["p"]), training=True)
    codes = y.codes.numpy()
    # Same channels dropped as the reference (its `out` is Z exactly there,
    # and where x was zero); kept elements are scaled by enc(1 / (1 - p)),
    # which the reference leaves out of its forward (its backward has it).
    dropped = d["keep"] == 0
    assert np.array_equal(codes == Z, dropped | (d["out"] == Z))
    assert np.array_equal(codes, d["out_if_fixed"])
    y.backward(_lns(d["g"], d))
    assert np.array_equal(x.grad.codes.numpy(), d["grad_x_if_fixed"])
    kept = ~dropped & (d["x"] | 1 != Z)
    assert np.array_equal(x.grad.codes.numpy()[kept], d["grad_x"][kept])


@pytest.mark.parametrize("function,shape,channel_dims", [
    (F.dropout1d, (4, 6, 5), 2), (F.dropout1d, (6, 5), 1),
    (F.dropout2d, (3, 4, 2, 5), 2), (F.dropout2d, (4, 2, 5), 2),
    (F.dropout3d, (2, 3, 2, 2, 3), 2), (F.dropout3d, (5, 2, 2, 3), 1),
])
def test_channel_dropout_keeps_or_drops_whole_channels(function, shape,
                                                       channel_dims):
    torch.manual_seed(7)
    x = lns.lnstensor(torch.rand(shape) + 0.5, f=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = function(x, 0.5)
    channels = y.value.reshape(shape[:channel_dims] + (-1,))
    kept = (channels != 0).all(-1)
    assert torch.equal(kept, (channels != 0).any(-1))
    assert 0 < int(kept.sum()) < kept.numel()
    scale = lns.lnstensor(2.0, f=10)
    assert torch.equal(y.codes.reshape(channels.shape)[kept],
                       (x * scale).codes.reshape(channels.shape)[kept])


def test_dropout_modes_and_probabilities():
    x = lns.lnstensor(torch.ones(2, 3, 4), f=10, requires_grad=True)
    assert F.dropout1d(x, 0.5, training=False) is x
    assert F.dropout1d(x, 0.0) is x
    y = F.dropout1d(x, 1.0)
    assert bool((y.codes == Z).all())
    torch.sum(y).backward()
    assert bool((x.grad.codes == Z).all())
    z = lns.lnstensor(torch.ones(2, 3, 4), f=10)
    torch.manual_seed(8)
    expected = F.dropout1d(z, 0.25)
    torch.manual_seed(8)
    assert F.dropout1d(z, 0.25, inplace=True) is z
    assert torch.equal(z.codes, expected.codes)
    with pytest.warns(UserWarning, match="3-D input is taken as"):
        F.dropout2d(lns.lnstensor(torch.ones(2, 3, 4)), 0.5)


@pytest.mark.parametrize("function,shape", [
    (F.dropout1d, (3,)), (F.dropout1d, (1, 2, 3, 4)),
    (F.dropout2d, (2,)), (F.dropout2d, (2, 3)),
    (F.dropout3d, (3,)), (F.dropout3d, (1, 1, 1, 1, 1, 1)),
])
def test_channel_dropout_checks_the_rank(function, shape):
    with pytest.raises(ValueError, match="-D \\(batched\\) input"):
        function(lns.lnstensor(torch.ones(shape)), 0.5)


@pytest.mark.parametrize("function", [F.dropout1d, F.dropout2d, F.dropout3d])
@pytest.mark.parametrize("p", [-0.1, 1.1])
def test_channel_dropout_checks_p(function, p):
    with pytest.raises(ValueError, match="between 0 and 1"):
        function(lns.lnstensor(torch.ones(2, 2, 2, 2)), p, training=False)


def test_dropout_layers():
    x = lns.lnstensor(torch.ones(2, 3, 2, 2), f=10)
    for layer, function in ((LNSDropout(0.3), F.dropout),
                            (LNSDropout1d(), F.dropout1d),
                            (LNSDropout2d(0.4), F.dropout2d),
                            (LNSDropout3d(0.2), F.dropout3d)):
        assert list(layer.parameters()) == []
        assert "inplace=False" in repr(layer)
        sample = x if function is not F.dropout1d else x.reshape(2, 3, 4)
        torch.manual_seed(9)
        y = layer(sample)
        torch.manual_seed(9)
        assert torch.equal(y.codes, function(sample, layer.p).codes)
        layer.eval()
        assert layer(sample) is sample
    with pytest.raises(ValueError, match="between 0 and 1"):
        LNSDropout2d(1.5)


def test_bilinear_runs_eagerly_only():
    layer = LNSBilinear(4, 3, 2, weight_f=10)
    sgd = lns.LNSSGD(layer.lns_parameters(), lr=0.1)
    inputs = [lns.lnstensor(torch.randn(5, n), f=10) for n in (4, 3, 2)]
    with pytest.raises(lns.CompileError,
                       match="bilinear does not compile into an LNS"):
        lns.compile_step(layer, F.mse_loss, sgd, inputs)


def test_channel_dropout_runs_eagerly_only():
    net = torch.nn.Sequential(lns.LNSLinear(4, 4, weight_f=10), LNSDropout1d())
    sgd = lns.LNSSGD(net[0].lns_parameters(), lr=0.1)
    inputs = [lns.lnstensor(torch.randn(3, 4), f=10) for _ in range(2)]
    with pytest.raises(lns.CompileError,
                       match="dropout1d does not compile into an LNS"):
        lns.compile_step(net, F.mse_loss, sgd, inputs)


# -- identity -------------------------------------------------------------


def test_identity_layer():
    x = lns.lnstensor(torch.randn(3), f=10)
    layer = LNSIdentity(54, unused="argument")
    assert layer(x) is x and list(layer.parameters()) == []
