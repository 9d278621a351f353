"""slapo.build(sch, target="deepspeed", topology=..., config=...) in one
process: DeepSpeed's configuration mapped (micro-batches, gradient
accumulation, the optimizer, ZeRO, clipping) and every other key refused by
name; the engine's backward/step and train_batch give eager PyTorch's
steps. The multi-rank grids are in test_grids.py."""

import copy
import types

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lamina.slapo as slapo
from lamina import ScheduleError


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.act = nn.GELU(approximate="tanh")
        self.fc2 = nn.Linear(32, 16)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


CONFIG = {"train_micro_batch_size_per_gpu": 4,
          "gradient_accumulation_steps": 2,
          "optimizer": {"type": "SGD", "params": {"lr": 0.05,
                                                  "momentum": 0.9}},
          "gradient_clipping": 0.05,
          "steps_per_print": 1}


def batches(count, seed=0):
    data = torch.Generator().manual_seed(seed)
    return [(torch.randn(4, 16, generator=data),
             torch.randn(4, 16, generator=data)) for _ in range(count)]


def eager_steps(model, micro_batches, accumulation, clip=0.05):
    """DeepSpeed's semantics in eager PyTorch: each micro-batch's loss
    divided by the accumulation steps, clipped, one SGD step per
    boundary."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for index, (x, y) in enumerate(micro_batches):
        loss = F.mse_loss(model(x), y)
        (loss / accumulation).backward()
        losses.append(loss.item())
        if (index + 1) % accumulation == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimizer.step()
            optimizer.zero_grad()
    return losses


def build(model, **kwargs):
    x = torch.randn(4, 16)
    sch = slapo.create_schedule(model, example_inputs=(x,))
    return slapo.build(sch, target="deepspeed", init_weights=False,
                       **kwargs)


def test_backward_and_step_follow_deepspeed():
    torch.manual_seed(0)
    model = MLP()
    eager = copy.deepcopy(model)
    engine, optimizer = build(model, config=CONFIG)
    assert isinstance(optimizer, torch.optim.SGD)
    assert optimizer.param_groups[0]["momentum"] == 0.9
    assert engine.mpu.get_data_parallel_world_size() == 1
    assert engine.gradient_accumulation_steps() == 2
    data = batches(6)
    ours = []
    for x, y in data:
        loss = F.mse_loss(engine(x), y)
        engine.backward(loss)
        engine.step()
        ours.append(loss.item())
    assert engine.global_steps == 3
    expected = eager_steps(eager, data, 2)
    torch.testing.assert_close(torch.tensor(ours), torch.tensor(expected),
                               rtol=1e-5, atol=1e-6)
    for (name, p), q in zip(engine.module.named_parameters(),
                            eager.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=1e-5,
                                   atol=1e-6, msg=lambda m: f"{name}: {m}")


def test_train_batch_runs_the_accumulation_steps():
    torch.manual_seed(0)
    model = MLP()
    eager = copy.deepcopy(model)
    topology = types.SimpleNamespace(num_pp=1, num_mp=1, num_dp=1)
    engine, _ = build(model, config=dict(CONFIG, train_batch_size=8),
                      topology=topology, loss_fn=F.mse_loss)
    data = batches(4)
    iterator = iter(data)
    ours = [engine.train_batch(data_iter=iterator).item() for _ in range(2)]
    expected = eager_steps(eager, data, 2)
    torch.testing.assert_close(
        torch.tensor(ours),
        torch.tensor([sum(expected[:2]) / 2, sum(expected[2:]) / 2]),
        rtol=1e-5, atol=1e-6)


U = 2.0 ** -8  # bf16's unit roundoff


def test_bf16_config_trains_as_eager_autocast():
    """'bf16': {'enabled': True} is precision="bf16": the engine's matmuls
    round to bf16 (its outputs are bf16 values), parameters and gradients
    stay f32 masters, and the losses of five accumulated SGD steps stay
    within 16u of eager autocast's (test_autocast.py derives the bound)."""
    torch.manual_seed(0)
    model = MLP()
    eager, initial = copy.deepcopy(model), copy.deepcopy(model)
    config = dict(CONFIG, bf16={"enabled": True})
    engine, optimizer = build(model, config=config)
    data = batches(10)
    ours = []
    for x, y in data:
        out = engine(x)
        assert torch.equal(out, out.to(torch.bfloat16).float())
        loss = F.mse_loss(out, y)
        engine.backward(loss)
        engine.step()
        ours.append(loss.item())
    for parameter in engine.module.parameters():
        assert parameter.dtype == torch.float32
    theirs = []
    sgd = torch.optim.SGD(eager.parameters(), lr=0.05, momentum=0.9)
    for index, (x, y) in enumerate(data):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = eager(x)
        loss = F.mse_loss(out.float(), y)
        (loss / 2).backward()
        theirs.append(loss.item())
        if index % 2 == 1:
            torch.nn.utils.clip_grad_norm_(eager.parameters(), 0.05)
            sgd.step()
            sgd.zero_grad()
    for step, (a, b) in enumerate(zip(ours, theirs)):
        assert abs(a - b) <= 16 * U * b, (step, a, b)
    # bf16 really is on: the f32 engine's first loss differs.
    f32_engine, _ = build(initial, config=CONFIG)
    assert F.mse_loss(f32_engine(data[0][0]), data[0][1]).item() != ours[0]


@pytest.mark.parametrize("config,message", [
    (dict(CONFIG, fp16={"enabled": True}), "fp16 training is not supported"),
    (dict(CONFIG, bf16={"enabled": True, "immediate_grad_update": True}),
     "unsupported bf16 keys ['immediate_grad_update']"),
    (dict(CONFIG, zero_optimization={"stage": 3}),
     "zero_optimization.stage 3 is not supported"),
    (dict(CONFIG, zero_optimization={"stage": 1, "reduce_bucket_size": 5e8}),
     "unsupported zero_optimization keys ['reduce_bucket_size']"),
    (dict(CONFIG, activation_checkpointing={}),
     "unsupported DeepSpeed keys ['activation_checkpointing']"),
    (dict(CONFIG, optimizer={"type": "Lamb"}),
     "optimizer type 'Lamb' is not supported"),
    (dict(CONFIG, train_batch_size=12),
     "train_batch_size 12 is not train_micro_batch_size_per_gpu 4 x "
     "gradient_accumulation_steps 2 x 1 data replicas"),
    (dict(CONFIG, pipeline={"sequence_parallel": True}),
     "pipeline.sequence_parallel is not supported"),
    ([("optimizer", "adam")], "config takes DeepSpeed's configuration"),
])
def test_configuration_errors_name_the_key(config, message):
    with pytest.raises(ScheduleError) as error:
        build(MLP(), config=config)
    assert message in str(error.value)


def test_topology_must_match_the_schedule():
    topology = types.SimpleNamespace(num_pp=1, num_mp=2, num_dp=1)
    with pytest.raises(ScheduleError, match="the topology's model axis has "
                       "2 ranks but the schedule is for 1"):
        build(MLP(), config=CONFIG, topology=topology)
    with pytest.raises(ScheduleError, match="PipeModelDataParallelTopology"):
        build(MLP(), config=CONFIG, topology=object())
