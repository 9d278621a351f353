"""Slapo's sync ops (lamina.slapo.sharding.sync_ops, lamina.collectives)
under ``mpirun.mpich -np N``: eager on torch.distributed (gloo), each
forward and backward against what the collective computes; compiled where
they appear, as Python hooks given to sync() and as calls in a model's
forward, against the unsharded eager model. Prints "rank R: NAME ok"."""

import copy
import os
import sys

import torch
import torch.distributed as dist
from torch import nn

import lamina
import lamina.slapo as slapo
from lamina.slapo.model_schedule.gpt2 import gen_embedding_hooks
from lamina.slapo.sharding import sync_ops

RANK, RANKS = lamina.rank(), lamina.world_size()
TOL = dict(rtol=1e-5, atol=1e-5)


def start_torch_distributed():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("gloo", rank=RANK, world_size=RANKS)


def same_everywhere(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def eager_sync_ops():
    """Every rank holds x·(rank + 1); each op's forward and gradient are
    what its collective computes."""
    base = same_everywhere(4, 2 * RANKS)
    scale = sum(range(1, RANKS + 1))

    def run(op, *args, **kwargs):
        x = (base * (RANK + 1)).requires_grad_()
        y = op(x, *args, **kwargs)
        weight = same_everywhere(*y.shape, seed=1)
        (y * weight).sum().backward()
        return y, x.grad, weight

    y, grad, weight = run(sync_ops.reduce_forward_output, None)
    torch.testing.assert_close(y, base * scale, **TOL)
    torch.testing.assert_close(grad, weight, **TOL)  # identity backward
    y, grad, weight = run(sync_ops.reduce_backward_grad, None)
    torch.testing.assert_close(y, base * (RANK + 1), **TOL)
    torch.testing.assert_close(grad, weight * RANKS, **TOL)
    y, grad, weight = run(sync_ops.all_gather_forward_output, 0, None, True)
    torch.testing.assert_close(
        y, torch.cat([base * (r + 1) for r in range(RANKS)]), **TOL)
    # The gradient blocks summed over ranks (all equal here): RANKS × own.
    torch.testing.assert_close(grad, weight.chunk(RANKS)[RANK] * RANKS,
                               **TOL)
    y, grad, weight = run(sync_ops.all_gather_forward_output, 1, None, False)
    torch.testing.assert_close(grad, weight.chunk(RANKS, 1)[RANK], **TOL)
    y, grad, weight = run(sync_ops.scatter_forward_output, 1, None)
    torch.testing.assert_close(y, (base * (RANK + 1)).chunk(RANKS, 1)[RANK],
                               **TOL)
    gathered = torch.cat([same_everywhere(*y.shape, seed=1)] * RANKS, 1)
    torch.testing.assert_close(grad, gathered, **TOL)
    y, grad, weight = run(sync_ops.reduce_scatter_forward_output, 1, None)
    torch.testing.assert_close(y, (base * scale).chunk(RANKS, 1)[RANK],
                               **TOL)
    torch.testing.assert_close(grad, gathered, **TOL)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(16, 8)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class MegatronWritten(nn.Module):
    """Megatron's mappings in the model's own code: the bias of the second
    layer added after the sum of the ranks' partial products."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(16, 8, bias=False)
        self.bias = nn.Parameter(torch.randn(8))

    def forward(self, x):
        x = sync_ops.reduce_backward_grad(x, None)
        y = self.fc2(self.act(self.fc1(x)))
        return sync_ops.reduce_forward_output(y, None) + self.bias


def train_and_compare(built, model):
    x = same_everywhere(4, 8, seed=2)
    ours, theirs = x.clone().requires_grad_(), x.clone().requires_grad_()
    y, y_eager = built(ours), model(theirs)
    torch.testing.assert_close(y, y_eager, **TOL)
    y.sum().backward(), y_eager.sum().backward()
    torch.testing.assert_close(ours.grad, theirs.grad, **TOL)
    eager = dict(model.named_parameters())
    for name, parameter in built.named_parameters():
        want = eager[name].grad
        for axis, (a, b) in enumerate(zip(parameter.shape, want.shape)):
            if a != b:
                want = want.chunk(RANKS, axis)[RANK]
        torch.testing.assert_close(parameter.grad, want, **TOL,
                                   msg=lambda m: f"{name}: {m}")


def shard(sch):
    sch["fc1"].shard("weight", 0)
    sch["fc1"].shard("bias", 0)
    sch["fc2"].shard("weight", 1)


def compiled_sync_hooks():
    """Megatron's MLP with its two syncs given as Python hooks applying the
    sync ops: compiled as the bwd_post and fwd_post all-reduces."""
    torch.manual_seed(0)
    model = MLP()
    sch = slapo.create_schedule(copy.deepcopy(model))
    shard(sch)

    def copy_to_region(_module, inputs):
        return sync_ops.reduce_backward_grad(inputs[0], None)

    def reduce_from_region(_module, _inputs, output):
        return sync_ops.reduce_forward_output(output, None)

    sch["fc1"].sync("fwd_pre", sync_op_or_fn=copy_to_region)
    sch["fc2"].sync("fwd_post", sync_op_or_fn=reduce_from_region)
    built, _ = slapo.build(sch, init_weights=False,
                           example_inputs=(same_everywhere(4, 8, seed=2),))
    train_and_compare(built, model)


def compiled_model_collectives():
    """The sync ops called in the model's forward compile as syncs: with
    the layers sharded, the model computes the unsharded model."""
    torch.manual_seed(0)
    model = MegatronWritten()
    sch = slapo.create_schedule(copy.deepcopy(model))
    shard(sch)
    built, _ = slapo.build(sch, init_weights=False,
                           example_inputs=(same_everywhere(4, 8, seed=2),))
    # The same model without the collectives: what the ranks compute
    # together.
    eager = copy.deepcopy(model)
    eager.forward = lambda x: eager.fc2(eager.act(eager.fc1(x))) + eager.bias
    train_and_compare(built, eager)


def replicated_model_collectives():
    """An unsharded model whose forward calls the sync ops (Slapo's
    test_checkpoint_module): compiled, the all-reduces sum what they are
    given, identical replicas too, as the same model computes eagerly on
    torch.distributed."""
    torch.manual_seed(0)
    model = MegatronWritten()
    built, _ = slapo.build(slapo.create_schedule(copy.deepcopy(model)),
                           init_weights=False,
                           example_inputs=(same_everywhere(4, 8, seed=2),))
    train_and_compare(built, model)


def embedding_hooks():
    """gen_embedding_hooks given to sync(): the vocabulary-parallel
    embedding and its all-reduce, equal to the whole embedding."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(40, 8))
    sch = slapo.create_schedule(copy.deepcopy(model))
    sch["0"].shard("weight", 0)
    pre, post = gen_embedding_hooks(sch, 40)
    sch["0"].sync("fwd_pre", sync_op_or_fn=pre)
    sch["0"].sync("fwd_post", sync_op_or_fn=post)
    built, _ = slapo.build(sch, init_weights=False)
    ids = torch.randint(0, 40, (2, 6), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        torch.testing.assert_close(built(ids), model(ids), **TOL)


CHECKS = {"eager_sync_ops": eager_sync_ops,
          "compiled_sync_hooks": compiled_sync_hooks,
          "compiled_model_collectives": compiled_model_collectives,
          "replicated_model_collectives": replicated_model_collectives,
          "embedding_hooks": embedding_hooks}

if __name__ == "__main__":
    start_torch_distributed()
    for name in sys.argv[1:]:
        CHECKS[name]()
        print(f"rank {RANK}: {name} ok", flush=True)
