"""lamina.lns.LNSLinear and LNSLazyLinear: eager forward through the
compiled kernels against the NumPy spec, lazy shapes, and the same layers
imported into lamina IR and built."""

import pathlib
import warnings

import numpy as np
import pytest
import torch
from torch import nn

import lamina
from lamina import lns, lns_numpy


def test_lns_linear_codes_follow_the_spec():
    torch.manual_seed(0)
    layer = lns.LNSLinear(24, 5, weight_f=12)
    x = torch.randn(4, 24)
    w, b = layer.weight.codes.detach().numpy(), layer.bias.codes.detach().numpy()
    # Parameters are registered as the reference does: codes in float64
    # Parameters `<name>_lns`, bases in buffers `<name>_base`.
    assert [n for n, _ in layer.named_parameters()] == ["weight_lns",
                                                        "bias_lns"]
    assert layer.weight_lns.dtype == torch.float64
    assert float(layer.weight_base) == 2.0 ** (2.0 ** -12)
    groups = layer.lns_parameters()
    assert [g["params"][0] for g in groups] == [layer.weight_lns,
                                                layer.bias_lns]
    assert all(g["base"] is layer.weight_base or g["base"] is layer.bias_base
               for g in groups)
    x_codes = lns_numpy.encode(x.double().detach().numpy(), 12)
    expected_codes = lns_numpy.linear(x_codes, w, b, f=12)
    expected = lns_numpy.decode(expected_codes, 12)
    # A float input gives floats (with autograd through the LNS layer), an
    # LNS input LNS codes.
    y = layer(x)
    assert y.dtype == torch.float32 and y.requires_grad
    np.testing.assert_array_equal(y.detach().numpy(), expected.astype(np.float32))
    y_lns = layer(lns.lnstensor(x, f=12))
    np.testing.assert_array_equal(y_lns.codes.detach().numpy(), expected_codes)
    # f = 12: about three and a half significant digits per product.
    torch.testing.assert_close(
        y, nn.functional.linear(x, layer.weight.value.float(),
                                layer.bias.value.float()),
        rtol=2e-3, atol=2e-3)


def test_lns_linear_bases():
    with pytest.raises(ValueError, match="weight_f and weight_b are mutually "
                       "exclusive"):
        lns.LNSLinear(4, 4, weight_f=10, weight_b=1.001)
    with pytest.raises(ValueError, match="bias_f and bias_b are mutually "
                       "exclusive"):
        lns.LNSLinear(4, 4, bias_f=10, bias_b=1.001)
    with pytest.raises(ValueError, match="greater than 1"):
        lns.LNSLinear(4, 4, weight_b=0.5)
    layer = lns.LNSLinear(8, 3, weight_b=1.0005, bias_f=9)
    x = torch.randn(2, 8)
    # The bias (base 2^(2^-9)) is converted to the weight's base.
    y_codes = lns.linear(lns.encode(x.double().detach().numpy(), b=1.0005),
                         layer.weight.codes.detach().numpy(), layer.bias.codes.detach().numpy(),
                         b=1.0005, bias_f=9)
    np.testing.assert_array_equal(
        layer(x).detach().numpy(),
        lns.decode(y_codes, b=1.0005).astype(np.float32))
    assert layer.bias_f == 9 and layer.weight_b == 1.0005
    assert layer.bias.lns_base == lns.Base(f=9)
    assert layer.weight.lns_base == lns.Base(b=1.0005)
    assert len(lns.LNSLinear(4, 4, bias=False).lns_parameters()) == 1


def test_lns_lazy_linear():
    layer = lns.LNSLazyLinear(6, weight_f=10)
    assert layer.lns_parameters() == [] and layer.weight is None
    x = torch.randn(3, 5, 17)
    y = layer(x)
    assert layer.in_features == 17 and tuple(layer.weight.shape) == (6, 17)
    assert y.shape == (3, 5, 6)
    assert len(layer.lns_parameters()) == 2
    with pytest.raises(ValueError, match="takes inputs of width 17, got 9"):
        layer(torch.randn(3, 9))


class LnsMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc_in = lns.LNSLinear(16, 32, weight_f=16)
        self.act = nn.ReLU()
        self.fc_out = lns.LNSLazyLinear(8, weight_f=16)

    def forward(self, x):
        return self.fc_out(self.act(self.fc_in(x)))


def test_lns_layers_import_and_build_like_eager():
    torch.manual_seed(1)
    model = LnsMLP()
    x = torch.randn(4, 16)
    sch = lamina.create_schedule(model, example_inputs=(x,))
    text = sch.mlir()
    assert 'lamina.linear "fc_in"' in text and "!lns.num<f = 16>" in text
    assert "lns.encode" in text and "lns.decode" in text
    compiled = lamina.build(sch, (x,))
    # The same codes through the same kernels: bit-identical results.
    np.testing.assert_array_equal(compiled(x).detach().numpy(), model(x).detach().numpy())


def test_mixed_base_bias_imports_like_eager():
    torch.manual_seed(2)

    class Mixed(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lns.LNSLinear(12, 6, weight_f=14, bias_f=9)

        def forward(self, x):
            return self.fc(x)

    model = Mixed()
    x = torch.randn(3, 12)
    sch = lamina.create_schedule(model, example_inputs=(x,))
    assert "tensor<6x!lns.num<f = 9>>" in sch.mlir()
    np.testing.assert_array_equal(lamina.build(sch, (x,))(x).detach().numpy(),
                                  model(x).detach().numpy())


def test_tables_give_the_codes_of_ideal_mode():
    """lamina-cpu-pipeline{lns-tables=true}: the layers add through tables
    (f = 10) and return exactly the ideal-mode codes."""
    torch.manual_seed(3)
    model = nn.Sequential(lns.LNSLinear(32, 64, weight_f=10), nn.ReLU(),
                          lns.LNSLinear(64, 16, weight_f=10))
    x = torch.randn(8, 32)
    ideal = lamina.build(lamina.create_schedule(model), (x,))
    tables = lamina.build(lamina.create_schedule(model), (x,),
                          pipeline="lamina-cpu-pipeline{lns-tables=true}")
    assert "sbdb table" in lamina._lamina.transform_ir(
        tables.ir("scheduled"),
        pipeline="lamina-decompose,lamina-fuse-epilogues,"
                 "convert-lamina-to-linalg,lamina-lns-tables")
    assert torch.equal(tables(x), ideal(x))


def test_float32_outputs_warn_where_they_lose_codes():
    """float32 holds every LNS value up to f = 22 (its 24-bit significand);
    at f = 23 a float32 output re-encodes to other codes, so the layer
    warns, once; float64 between layers keeps the codes."""
    torch.manual_seed(1)
    x = torch.randn(64, 16)
    exact = lns.LNSLinear(16, 16, weight_f=16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exact(x)  # f = 16 in float32: exact, no warning
    lossy = lns.LNSLinear(16, 16, weight_f=23)
    with pytest.warns(lns.LNSPrecisionWarning, match=r"f = 23 returns "
                      r"torch.float32.*lnstensor"):
        y32 = lossy(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lossy(x)  # once per layer and dtype
        y64 = lossy(x.double())
    codes = lns.encode(y64.detach().numpy(), f=23)
    np.testing.assert_array_equal(
        lns.encode(lns.decode(codes, f=23), f=23), codes)
    lost = lns.encode(y32.double().detach().numpy(), f=23) != codes
    assert lost.any()  # what the warning is about


def test_replacing_a_float32_layer_warns_where_outputs_lose_codes():
    # A compiled LNS variant decodes to the layer's dtype, as the eager
    # layer does: f = 23 in a float32 model warns at replace, f = 16 does
    # not, and a bfloat16 model (8-bit significand) warns from f = 7 on.
    def schedule(dtype):
        model = nn.Sequential(nn.Linear(16, 8)).to(dtype)
        return lamina.create_schedule(model, example_inputs=(
            torch.randn(4, 16, dtype=dtype),))
    with pytest.warns(lns.LNSPrecisionWarning,
                      match=r"0: the LNS variant with f = 23 returns "
                            r"torch.float32.*f <= 22"):
        schedule(torch.float32)["0"].replace(lns.LNSLinear(16, 8))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        schedule(torch.float32)["0"].replace(lns.LNSLinear(16, 8, weight_f=16))
        schedule(torch.bfloat16)["0"].replace(lns.LNSLinear(16, 8, weight_f=6))
    with pytest.warns(lns.LNSPrecisionWarning, match=r"f = 7 returns "
                      r"torch.bfloat16.*f <= 6"):
        schedule(torch.bfloat16)["0"].replace(lns.LNSLinear(16, 8, weight_f=7))


def test_from_linear_encodes_a_float_layer():
    """LNSLinear.from_linear gives the codes the importer's encoding of
    the same float weights gives (replace(..., LNSLinear) in a schedule)."""
    torch.manual_seed(4)
    linear = nn.Linear(16, 8)
    layer = lns.LNSLinear.from_linear(linear, weight_f=16)
    np.testing.assert_array_equal(
        layer.weight.codes.detach().numpy(),
        lns_numpy.encode(linear.weight.detach().double().numpy(), 16))
    np.testing.assert_array_equal(
        layer.bias.codes.detach().numpy(),
        lns_numpy.encode(linear.bias.detach().double().numpy(), 16))
    x = torch.randn(4, 16)
    model = nn.Sequential(linear).eval()
    sch = lamina.create_schedule(model, example_inputs=(x,))
    sch["0"].replace(lns.LNSLinear(16, 8, weight_f=16))
    np.testing.assert_array_equal(lamina.build(sch, (x,))(x).detach().numpy(),
                                  layer(x).detach().numpy())
    with pytest.raises(TypeError, match="takes an nn.Linear"):
        lns.LNSLinear.from_linear(layer)


INIT_GOLDEN = (pathlib.Path(__file__).resolve().parents[1] / "data" /
               "lns-golden-ops" / "layers")


@pytest.mark.parametrize("name", ["init_linear_f23", "init_linear_nobias_f23",
                                  "init_linear_f10", "init_linear_b1p0007",
                                  "init_lazy_linear_f23"])
def test_initial_codes_are_the_references(name):
    # The reference draws (rand·2 − 1)·√k in LNS arithmetic, weight first:
    # under one seed the layers start from its codes.
    d = np.load(INIT_GOLDEN / f"{name}.npz", allow_pickle=False)
    f = int(d["f"])
    base = {"weight_f": f} if f >= 0 else {"weight_b": float(d["b"])}
    n_in, n_out = int(d["in_features"]), int(d["out_features"])
    bias = bool(d["has_bias"])
    torch.manual_seed(int(d["seed"]))
    if str(d["op"]) == "LNSLazyLinear":
        layer = lns.LNSLazyLinear(n_out, bias=bias, **base)
        layer(lns.lnstensor(torch.ones(2, n_in), f=f))
    else:
        layer = lns.LNSLinear(n_in, n_out, bias=bias, **base)
    assert np.array_equal(layer.weight.codes.numpy(), d["weight"])
    if bias:
        assert np.array_equal(layer.bias.codes.numpy(), d["bias"])
    else:
        assert layer.bias is None
