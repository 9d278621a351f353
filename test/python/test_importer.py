"""The importer package: its converter tables, the typed IR builder, the
types ImportedModel carries, and the lamina ops LayerNorm and softmax
become."""

import operator

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lamina
from lamina import UnsupportedOperationError
from lamina.importer import ImportedModel, converters, import_model, ir


def inputs(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def test_types_print_themselves():
    assert str(ir.TensorType((2, 8, 32), ir.F32)) == "tensor<2x8x32xf32>"
    assert str(ir.TensorType((), ir.BF16)) == "tensor<bf16>"
    assert str(ir.TensorType([4], ir.LnsNumber(f=10))) == \
        "tensor<4x!lns.num<f = 10>>"
    assert str(ir.LnsNumber(b=1.5)) == "!lns.num<b = 1.5>"
    assert ir.element_type(torch.int64) is ir.I64 and str(ir.I64) == "i64"
    assert ir.element_type(torch.bool) is ir.I1 and str(ir.I1) == "i1"
    assert ir.element_type(torch.float16) is ir.F16
    assert ir.element_type(torch.float64) is ir.F64
    assert ir.element_type(torch.complex64) is None
    assert ir.float_literal(1e-5) == "1.0e-05"
    assert ir.float_literal(0.25) == "0.25"
    assert ir.float_literal(3) == "3.0"


def test_builder_names_results_in_order():
    builder = ir.Builder()
    t = ir.TensorType((4,), ir.F32)
    x = ir.Value("%x0", t)
    y = builder.op("arith.addf", ir.operand_list(x, x), types=t, results=[t])
    q, k = builder.op("lamina.pair", y, types=ir.function_type([t], [t, t]),
                      results=[t, t])
    assert (y.name, q.name, k.name) == ("%v1", "%v2", "%v3")
    assert q.type is t
    assert builder.body().splitlines() == [
        "    %v1 = arith.addf %x0, %x0 : tensor<4xf32>",
        "    %v2, %v3 = lamina.pair %v1 : (tensor<4xf32>) -> "
        "(tensor<4xf32>, tensor<4xf32>)"]


def test_tables_cover_every_op_family():
    assert converters.module_converter(nn.Linear).family == "linear"
    assert converters.module_converter(nn.LayerNorm).family == "norm"
    assert converters.module_converter(lamina.lns.LNSLinear).family == "lns"
    assert converters.FUNCTIONS[torch.matmul].family == "attention"
    assert converters.FUNCTIONS[operator.add].family == "elementwise"
    assert converters.METHODS["permute"].family == "shape"
    assert converters.module_converter(nn.BatchNorm1d) is None

    class MyLinear(nn.Linear):
        pass

    # A subclass imports as its nearest registered base.
    assert converters.module_converter(MyLinear) is \
        converters.MODULES[nn.Linear]
    assert converters.module_converter(lamina.op.LinearWithAct) is \
        converters.MODULES[lamina.op.LinearWithAct]
    for table in (converters.MODULES, converters.FUNCTIONS,
                  converters.METHODS):
        assert all(c.summary for c in table.values())


def test_imported_model_carries_typed_signature():
    model = nn.Sequential(nn.Linear(16, 32), nn.Dropout(0.1),
                          nn.Linear(32, 8)).train()
    x = inputs(4, 16)
    imported = import_model(model, (x,))
    assert isinstance(imported, ImportedModel)
    assert [str(t) for t in imported.argument_types] == [
        "tensor<4x16xf32>", "tensor<32x16xf32>", "tensor<32xf32>",
        "tensor<8x32xf32>", "tensor<8xf32>", "i64"]
    assert imported.result_types == [ir.TensorType((4, 8), ir.F32)]
    assert imported.has_seed and imported.structure == 0
    half = import_model(nn.Linear(16, 8).to(torch.bfloat16),
                        (x.to(torch.bfloat16),))
    (result,) = half.result_types
    assert result.shape == (4, 8) and result.element.dtype == torch.bfloat16


def test_several_results_are_typed_like_the_eager_ones():
    model = lamina.op.FusedQKV(64, 4, 1)
    x = inputs(2, 8, 64)
    imported = import_model(model, (x,))
    assert [(t.shape, t.element.dtype) for t in imported.result_types] == \
        [(tuple(r.shape), r.dtype) for r in model(x)]
    assert imported.structure == (0, 1, 2)


class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.affine = nn.LayerNorm(32)
        self.plain = nn.LayerNorm(32, elementwise_affine=False, eps=1e-3)
        self.weighted = nn.LayerNorm(32, eps=1e-6)
        self.weighted.bias = None  # weight only
        with torch.no_grad():
            self.affine.weight.uniform_(0.5, 1.5)
            self.affine.bias.uniform_(-0.5, 0.5)
            self.weighted.weight.uniform_(0.5, 1.5)

    def forward(self, x):
        return self.weighted(self.plain(self.affine(x)))


def test_layer_norm_is_one_lamina_op():
    model = Norms().eval()
    x = inputs(2, 8, 32, seed=1)
    text = lamina.create_schedule(model).mlir((x,))
    t = "tensor<2x8x32xf32>"
    assert (f'lamina.layer_norm "affine" %x0 weight %p0 bias %p1 eps 1.0e-05 '
            f": ({t}, tensor<32xf32>, tensor<32xf32>) -> {t}") in text
    assert f'lamina.layer_norm "plain" %v1 eps 0.001 : ({t}) -> {t}' in text
    assert (f'lamina.layer_norm "weighted" %v2 weight %p2 eps 1.0e-06 : '
            f"({t}, tensor<32xf32>) -> {t}") in text
    assert "linalg.generic" not in text and "math.rsqrt" not in text


def test_layer_norms_match_eager():
    model = Norms().eval()
    x = inputs(2, 8, 32, seed=1)
    compiled = lamina.build(lamina.create_schedule(model), (x,))
    torch.testing.assert_close(compiled(x), model(x))


class Softmaxes(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Softmax(dim=1)

    def forward(self, x):
        return self.inner(F.softmax(x, dim=-1)).softmax(0)


def test_softmax_is_one_lamina_op_with_its_path():
    model = Softmaxes()
    x = inputs(3, 4, 5, seed=2)
    text = lamina.create_schedule(model).mlir((x,))
    t = "tensor<3x4x5xf32>"
    assert f"lamina.softmax %x0 dim 2 : {t}" in text
    assert f'lamina.softmax "inner" %v1 dim 1 : {t}' in text
    assert f"lamina.softmax %v2 dim 0 : {t}" in text
    assert "linalg.softmax" not in text
    compiled = lamina.build(lamina.create_schedule(model), (x,))
    torch.testing.assert_close(compiled(x), model(x))


def test_integer_operands_are_unsupported_operations():
    class Double(nn.Module):
        def forward(self, x):
            return x + x

    with pytest.raises(UnsupportedOperationError,
                       match="an i64 operand of add in the model's forward"):
        import_model(Double(), (torch.ones(4, 6, dtype=torch.int64),))
    with pytest.raises(UnsupportedOperationError,
                       match="element type torch.complex64"):
        import_model(Double(), (torch.ones(4, 6, dtype=torch.complex64),))


def test_lns_modules_keep_their_import_paths():
    from lamina import lns, lns_numpy
    from lamina.lns import numpy_spec

    assert lns_numpy.encode is numpy_spec.encode
    assert lns_numpy.ZERO == numpy_spec.ZERO
    assert lns.LNSLinear is lamina.lns.layers.LNSLinear
    assert lns.encode is lamina.lns.kernels.encode
    assert lns.DEFAULT_F == 23


def test_cuda_results_are_read_from_the_imported_types():
    from lamina.runtime.build import _result_types

    model = nn.Sequential(nn.Linear(16, 8)).to(torch.bfloat16)
    imported = import_model(model, (inputs(4, 16).to(torch.bfloat16),))
    assert _result_types(imported) == [((4, 8), torch.bfloat16)]
    imported.result_types = [ir.TensorType((4,), ir.I1)]
    with pytest.raises(lamina.ScheduleError, match="got i1"):
        _result_types(imported)


def test_modules_with_python_hooks_are_unsupported_operations():
    """torch.fx calls forward itself: a hook would be silently dropped."""
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    model[0].register_forward_hook(lambda module, inputs, output: output * 2)
    with pytest.raises(UnsupportedOperationError,
                       match="module '0' with Python forward hooks"):
        import_model(model, (torch.ones(2, 4),))
