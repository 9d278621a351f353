"""lamina.op: the Slapo layer classes' eager semantics, and the compiled
lamina ops against them on the same weights."""

import pytest
import torch
import torch.nn.functional as F

from lamina import Program, op
from layer_ir import linear_layer


def weights(layer):
    return [layer.weight.detach().numpy(), layer.bias.detach().numpy()]


def test_sync_fn_sees_the_matmul_without_bias():
    seen = []
    layer = op.LinearWithSyncFunc(8, 4, sync_fn=lambda y: seen.append(y) or 2 * y)
    x = torch.randn(3, 8)
    y = layer(x)
    torch.testing.assert_close(seen[0], x @ layer.weight.T)
    torch.testing.assert_close(y, 2 * (x @ layer.weight.T) + layer.bias)


def test_act_and_compiled_layer_agree():
    torch.manual_seed(0)
    layer = op.LinearWithAct(32, 48, act_fn="gelu_new")
    x = torch.randn(2, 5, 32)
    program = Program(linear_layer("linear_act", (2, 5, 32), 48,
                                   attrs="activation gelu_tanh"))
    (y,) = program.run(program.prepare([x.numpy()] + weights(layer)))
    torch.testing.assert_close(torch.from_numpy(y), layer(x).detach())


def test_fused_qkv_and_compiled_layer_agree():
    torch.manual_seed(1)
    layer = op.FusedQKV(32, 4, 1)
    x = torch.randn(3, 32)
    program = Program(linear_layer(
        "fused_qkv", (3, 32), 96, attrs="num_heads 4 world_size 1",
        qkv_heads=(4, 8)))
    compiled = program.run(program.prepare(
        [x.numpy()] + [layer.fused_linear.weight.detach().numpy(),
                       layer.fused_linear.bias.detach().numpy()]))
    for got, expected in zip(compiled, layer(x)):
        torch.testing.assert_close(torch.from_numpy(got), expected.detach())


def test_dropout_reads_training_at_call_time():
    layer = op.LinearWithDropout(8, 8, p=0.5)
    x = torch.randn(16, 8)
    layer.eval()
    torch.testing.assert_close(layer(x), F.linear(x, layer.weight, layer.bias))
    layer.train()
    assert (layer(x) == 0).any()


def test_errors():
    with pytest.raises(ValueError, match="unsupported act_fn 'relu'"):
        op.LinearWithAct(4, 4, act_fn="relu")
    with pytest.raises(ValueError, match="needs a bias"):
        op.LinearWithAct(4, 4, bias=False)
    with pytest.raises(ValueError, match="needs a bias"):
        op.LinearWithSeparateBias(4, 4, bias=False)
    with pytest.raises(ValueError, match=r"must be in \[0, 1\]"):
        op.LinearWithDropout(4, 4, p=1.5)
    with pytest.raises(ValueError, match="not divisible by num_heads"):
        op.FusedQKV(30, 4, 1)
    with pytest.raises(ValueError, match="not divisible by world_size"):
        op.FusedQKV(36, 6, 4)
