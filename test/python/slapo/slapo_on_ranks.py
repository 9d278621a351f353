"""Slapo's distributed test cases, ported (test_shard.py, test_annotate.py,
test_consolidation.py, test_verify.py, test_reshard.py, test_fork_rng.py,
test_checkpoint.py): the same models and primitive calls, run under
``mpirun.mpich -np N`` on Lamina. Each check prints "rank R: NAME ok".

Where Slapo gathers the gradient blocks to rank 0 with torch.distributed,
each rank here compares its blocks with the matching blocks of eager
PyTorch's gradients (every rank builds the same model from one seed).
Train-mode dropout cannot reproduce PyTorch's random stream: models with
dropout are compared in eval mode."""

import copy
import importlib
import re
import sys

import torch
import torch.nn.functional as F
from torch import nn

import lamina
import lamina.slapo as slapo
from lamina import ScheduleError
from lamina.slapo import op

RANK, RANKS = lamina.rank(), lamina.world_size()
# (lamina.slapo.build the attribute is the function.)
materialise_meta = importlib.import_module("lamina.slapo.build").materialise_meta
TOL = 1e-5  # Slapo's verify_grads tolerance


def block(tensor, axis):
    """This rank's block of a whole tensor ("none": the whole)."""
    if axis == "none":
        return tensor
    return torch.chunk(tensor, RANKS, dim=axis)[RANK]


def check_blocks(built, reference, gather_axes, tol=TOL):
    """Each of the built model's parameter gradients is this rank's block
    of eager PyTorch's (Slapo's gather_grad + verify_grads)."""
    built_params = dict(built.named_parameters())
    reference_params = dict(reference.named_parameters())
    for path, axis in gather_axes.items():
        got = built_params[path].grad
        want = block(reference_params[path].grad, axis)
        torch.testing.assert_close(got, want, atol=tol, rtol=tol,
                                   msg=lambda m: f"{path}.grad mismatch\n{m}")


def run_both(built, model, data):
    """Outputs and input gradients of the built and the eager model on the
    same data, after out.mean().backward() as Slapo's tests do."""
    x = data.clone().requires_grad_()
    out = built(x)
    out.mean().backward()
    x_ref = data.clone().requires_grad_()
    out_ref = model(x_ref)
    out_ref.mean().backward()
    return out, out_ref, x.grad, x_ref.grad


def shard_mlp():
    """test_shard.py::test_mlp (FusedMLP, Megatron recipe; eval mode)."""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.mlp = op.FusedMLP(10, 10, "gelu", 0.1, use_torchscript=False)

        def forward(self, data):
            return self.mlp(data)

    model = Model().eval()
    sch = slapo.create_schedule(copy.deepcopy(model))
    megatron(sch, "mlp.fc_in", "mlp.fc_out")
    sch_model, _ = slapo.build(sch, init_weights=False)
    out, out_ref, grad, grad_ref = run_both(sch_model, model,
                                            torch.randn(10, 10))
    torch.testing.assert_close(out, out_ref)
    torch.testing.assert_close(grad, grad_ref, atol=TOL, rtol=TOL)
    check_blocks(sch_model, model, {
        "mlp.fc_in.weight": 0, "mlp.fc_in.bias": 0,
        "mlp.fc_out.weight": 1, "mlp.fc_out.bias": "none"})


class TwoLinears(nn.Module):
    def __init__(self, a=20, b=30, c=40):
        super().__init__()
        self.linear1 = nn.Linear(a, b)
        self.linear2 = nn.Linear(b, c)

    def forward(self, data):
        return self.linear2(self.linear1(data))


def shard_linear():
    """test_shard.py::test_linear."""
    model = TwoLinears()
    sch = slapo.create_schedule(copy.deepcopy(model))
    megatron(sch)
    sch_model, _ = slapo.build(sch, init_weights=False)
    out, out_ref, grad, grad_ref = run_both(sch_model, model,
                                            torch.randn(10, 20))
    torch.testing.assert_close(out, out_ref)
    torch.testing.assert_close(grad, grad_ref, atol=TOL, rtol=TOL)
    check_blocks(sch_model, model, {
        "linear1.weight": 0, "linear1.bias": 0, "linear2.weight": 1,
        "linear2.bias": "none"})


def seq_para():
    """test_shard.py::test_seq_para. Slapo partitions the sequence with a
    Python fwd_pre hook, which cannot be compiled (a clear ScheduleError);
    Lamina's spelling shards the layer's input instead, and the rest of the
    schedule is Slapo's."""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear1 = nn.Linear(30, 30)
            self.linear2 = nn.Linear(30, 30)

        def forward(self, data):
            return F.relu(self.linear2(self.linear1(data)))

    model = Model()

    def sequence_partition(module, _input):
        return _input[0].chunk(RANKS, dim=1)[RANK].contiguous()

    sch = slapo.create_schedule(copy.deepcopy(model))
    try:
        sch["linear1"].sync(mode="fwd_pre", sync_op_or_fn=sequence_partition)
        raise AssertionError("a Python sync function was accepted")
    except ScheduleError as error:
        assert 'shard("input", axis)' in str(error), error
    # Slapo's recipe puts a bwd_post all-reduce on top of the all-gather.
    # Its gradient is then whole, and the gather's backward, derived from
    # that, keeps this rank's block: right (an all-reduce and a split where
    # the recipe without it reduce-scatters once). Written with
    # tensor_parallel_output_grad=True, the gather would sum it again:
    # rejected.
    data = torch.randn(3, 16, 30)
    for bwd_post in (True, False):
        recipe = slapo.create_schedule(copy.deepcopy(model))
        sequence_parallel(recipe, bwd_post=bwd_post)
        sch_model, _ = slapo.build(recipe, init_weights=False)
        reference = copy.deepcopy(model)
        out, out_ref, grad, grad_ref = run_both(sch_model, reference, data)
        torch.testing.assert_close(out, out_ref)
        # The input is sharded on the sequence: its gradient is this
        # rank's block.
        torch.testing.assert_close(grad, grad_ref, atol=TOL, rtol=TOL)
        check_blocks(sch_model, reference, {
            "linear1.weight": 0, "linear1.bias": 0, "linear2.weight": 1,
            "linear2.bias": "none"})
    if RANKS > 1:  # on one rank every collective is the identity
        doubled = slapo.create_schedule(copy.deepcopy(model))
        sequence_parallel(doubled, bwd_post=True, output_grad=True)
        doubled_model, _ = slapo.build(doubled, init_weights=False)
        try:  # at the forward, or at the backward that needs the input's
            doubled_model(torch.randn(3, 16, 30, requires_grad=True)) \
                .mean().backward()
            raise AssertionError("the double reduction was accepted")
        except ScheduleError as error:
            assert "transposes to reduce_scatter" in str(error), error


def word_embedding():
    """test_shard.py::test_word_embedding. Slapo masks the other ranks'
    rows with Python fwd_pre / fwd_post hooks (deviation 1); Lamina's
    embedding shards by vocabulary itself, and the fwd_post all-reduce sums
    the ranks' rows."""
    vocab_size = 100

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, 10)

        def forward(self, x):
            return self.embedding(x)

    model = Model()
    sch = slapo.create_schedule(copy.deepcopy(model))
    sch["embedding"].shard("weight", axis=0)
    sch["embedding"].sync(mode="fwd_post", sync_op_or_fn="all_reduce")
    sch_model, _ = slapo.build(sch, init_weights=False)
    data = torch.randint(1, vocab_size - 1, (1, 10))
    out = sch_model(data)
    out.mean().backward()
    out_ref = model(data)
    out_ref.mean().backward()
    torch.testing.assert_close(out, out_ref)
    check_blocks(sch_model, model, {"embedding.weight": 0})


def tie_weights():
    """test_shard.py::test_tie_weights: tied parameters stay one Parameter
    in the schedule's model through the shard and sync primitives."""
    class Stage0(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(10, 10)
            self.linear = nn.Linear(10, 10, bias=False)

        def forward(self, x):
            return self.linear(self.wte(x))

    class StageN(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(10, 10, bias=False)

        def forward(self, x):
            return self.linear(x)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.stage0 = Stage0()
            self.stage1 = StageN()
            self.stage2 = StageN()

        def forward(self, x):
            return self.stage2(self.stage1(self.stage0(x)))

    with slapo.init_empty_weights():
        model = Model()
        model.stage1.linear.weight = model.stage0.wte.weight
        model.stage2.linear.weight = model.stage0.wte.weight
    sch = slapo.create_schedule(model)
    assert sch.metadata.tie_weights
    assert id(sch.mod.stage0.wte.weight) == id(sch.mod.stage1.linear.weight)
    assert id(sch.mod.stage0.wte.weight) == id(sch.mod.stage2.linear.weight)
    sch["stage0.wte"].shard("weight", axis=0)
    sch["stage0.wte"].sync(mode="fwd_post", sync_op_or_fn="all_gather",
                           axis=0, tensor_parallel_output_grad=False)
    sch["stage0.wte"].sync(mode="bwd_post", sync_op_or_fn="all_reduce")
    sch["stage1.linear"].shard("weight", axis=0)
    sch["stage2.linear"].shard("weight", axis=0)
    assert id(sch.mod.stage0.wte.weight) == id(sch.mod.stage1.linear.weight)
    assert id(sch.mod.stage0.wte.weight) == id(sch.mod.stage2.linear.weight)


def sequence_parallel(sch, bwd_post, output_grad=None):
    """Slapo's test_seq_para schedule, the input sharded on the sequence
    (the input gather's tensor_parallel_output_grad left out, as Slapo's
    test leaves it, or `output_grad`)."""
    sch["linear1"].shard("input", axis=1)
    gather = {} if output_grad is None else \
        {"tensor_parallel_output_grad": output_grad}
    sch["linear1"].sync(mode="fwd_pre", sync_op_or_fn="all_gather", axis=1,
                        **gather)
    sch["linear1"].shard("weight", axis=0)
    sch["linear1"].shard("bias", axis=0)
    if bwd_post:
        sch["linear1"].sync(mode="bwd_post", sync_op_or_fn="all_reduce")
    sch["linear2"].shard("weight", axis=1)
    sch["linear2"].sync(mode="fwd_post", sync_op_or_fn="reduce_scatter",
                        axis=1)
    sch.sync(mode="fwd_post", sync_op_or_fn="all_gather", axis=1,
             tensor_parallel_output_grad=False)


def shard_annotate():
    """test_annotate.py::test_shard_annotate and test_arbitrary_annotate
    (the model created under init_empty_weights)."""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer1 = nn.Linear(32, 32, bias=False)
            self.layer2 = nn.Linear(32, 32, bias=False)

        def forward(self, x):
            return self.layer2(self.layer1(x))

    with slapo.init_empty_weights():
        model = Model()
    assert model.layer1.weight.device.type == "meta"
    sch = slapo.create_schedule(model)
    sch["layer1"].shard("weight", axis=0)
    sch["layer1"].sync(mode="bwd_post", sync_op_or_fn="all_reduce")
    sch["layer2"].shard("weight", axis=1)
    sch["layer2"].sync(mode="fwd_post", sync_op_or_fn="all_reduce")
    sch_model, _ = slapo.build(sch)
    assert hasattr(sch_model.layer1.weight, "orig_shape")
    assert hasattr(sch_model.layer2.weight, "orig_shape")
    assert sch_model.layer1.weight.shape == (32 // RANKS, 32)
    assert sch_model.layer2.weight.shape == (32, 32 // RANKS)

    with slapo.init_empty_weights():
        model = Model()
    sch = slapo.create_schedule(model)
    sch["layer1"].annotate("weight", "foo", "bar")
    assert "foo" in sch.metadata.param_tags
    sch_model, _ = slapo.build(sch)
    assert sch_model.layer1.weight.foo == "bar"
    assert not hasattr(sch_model.layer2.weight, "foo")
    # The materialised weights compute: a call matches eager on them.
    x = torch.randn(4, 32)
    with torch.no_grad():
        torch.testing.assert_close(sch_model(x), model(x))


class ConsolidationModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = nn.Linear(20, 20)
        self.linear2 = nn.Linear(20, 40, bias=False)

    def forward(self, data):
        return self.linear2(self.linear1(data))


def fused_qkv_by_heads():
    """A FusedQKV sharded by heads with Slapo's shard("weight") spelling
    (Lamina's layer names its projection's parameters so): build holds this
    rank's heads from the start, and outputs and gradient blocks equal
    eager's."""
    class Attention(nn.Module):
        def __init__(self, world_size):
            super().__init__()
            self.qkv = op.FusedQKV(32, 4, world_size)
            self.out_proj = nn.Linear(32, 32)

        def forward(self, x):
            q, k, v = self.qkv(x)
            mix = q + k + v
            return self.out_proj(mix.reshape(x.shape[0], x.shape[1], 32))

    model = Attention(RANKS).eval()
    eager = Attention(1).eval()
    eager.load_state_dict(model.state_dict())
    sch = slapo.create_schedule(model)
    megatron(sch, "qkv", "out_proj")
    sch_model, _ = slapo.build(sch, init_weights=False)
    blocks = dict(sch_model.named_parameters())
    assert blocks["qkv.fused_linear.weight"].shape == (96 // RANKS, 32)
    out, out_ref, grad, grad_ref = run_both(sch_model, eager,
                                            torch.randn(2, 8, 32))
    torch.testing.assert_close(out, out_ref)
    torch.testing.assert_close(grad, grad_ref, atol=TOL, rtol=TOL)
    check_blocks(sch_model, eager, {
        "qkv.fused_linear.weight": 0, "qkv.fused_linear.bias": 0,
        "out_proj.weight": 1, "out_proj.bias": "none"})


def megatron(sch, first="linear1", second="linear2", bwd_post=True,
             fwd_post=True):
    """The Megatron recipe of Slapo's tests (optionally without one of its
    syncs): `first` column parallel, `second` row parallel."""
    sch[first].shard("weight", axis=0)
    sch[first].shard("bias", axis=0)
    if bwd_post:
        sch[first].sync(mode="bwd_post", sync_op_or_fn="all_reduce")
    sch[second].shard("weight", axis=1)
    if fwd_post:
        sch[second].sync(mode="fwd_post", sync_op_or_fn="all_reduce")


def consolidation():
    """test_consolidation.py, both cases, single (replicated) and multi
    (tensor parallel): each rank holds its block of the whole weights."""
    for tensor_parallel in (False, True):
        model = ConsolidationModel()
        sch = slapo.create_schedule(copy.deepcopy(model))
        if tensor_parallel:
            megatron(sch)
        else:
            sch = slapo.create_schedule(copy.deepcopy(model), world_size=1)
        sch_model, _ = slapo.build(sch, init_weights=False)
        blocks = {"linear1.weight": 0, "linear1.bias": 0,
                  "linear2.weight": 1}
        params = dict(sch_model.named_parameters())
        for name, axis in blocks.items():
            whole = dict(model.named_parameters())[name]
            want = block(whole, axis) if tensor_parallel else whole
            torch.testing.assert_close(params[name], want)

        with slapo.init_empty_weights(enable=True):
            empty = ConsolidationModel()
        sch = slapo.create_schedule(copy.deepcopy(empty))
        if tensor_parallel:
            megatron(sch)
        else:
            sch = slapo.create_schedule(copy.deepcopy(empty), world_size=1)

        def init_module(module):
            if isinstance(module, nn.Linear):
                module.weight.data.zero_()
                if module.bias is not None:
                    module.bias.data.zero_()

        sch_model, _ = slapo.build(sch, init_weights=init_module)
        for param in sch_model.parameters():
            assert param.device.type == "cpu"
            torch.testing.assert_close(param.data, torch.zeros_like(param))


class DelayedMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear1 = nn.Linear(32, 64)
        self.linear2 = nn.Linear(64, 32)

    def forward(self, data):
        return self.linear2(F.gelu(self.linear1(data)))


def delayed_init_blocks():
    """Item 2: under init_empty_weights each rank allocates only its block
    of a sharded parameter. Build initialises the block alone, bit for bit
    the block of the model initialised whole from the same seeds; the
    schedule's model keeps one-element placeholders of the whole shapes. An
    initialiser that needs the whole tensor (orthogonal_) gets it, one
    module at a time, and the rank keeps its block."""
    blocks = {"linear1.weight": 0, "linear1.bias": 0, "linear2.weight": 1,
              "linear2.bias": "none"}

    def orthogonal(module):
        if isinstance(module, nn.Linear):
            nn.init.orthogonal_(module.weight)
            nn.init.normal_(module.bias)

    for init_weights in (True, orthogonal):
        with slapo.init_empty_weights():
            model = DelayedMLP()
        whole = copy.deepcopy(model)
        materialise_meta(whole, init_weights)
        sch = slapo.create_schedule(model)
        megatron(sch)
        built, _ = slapo.build(sch, init_weights=init_weights)
        params = dict(built.named_parameters())
        reference = dict(whole.named_parameters())
        for name, axis in blocks.items():
            assert torch.equal(params[name].detach(),
                               block(reference[name].detach(), axis)), name
        if RANKS > 1:
            placeholders = dict(sch.mod.named_parameters())
            for name in ("linear1.weight", "linear1.bias", "linear2.weight"):
                assert placeholders[name].storage().nbytes() == 4, name
        data = torch.randn(4, 32)
        with torch.no_grad():
            torch.testing.assert_close(built(data), whole(data), rtol=TOL,
                                       atol=TOL)


class TokenLoss(nn.Module):
    """A head over the vocabulary and Slapo's ParallelCrossEntropy, the
    per-token losses averaged; the labels are a buffer."""

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(16, 32)
        self.loss = op.ParallelCrossEntropy()
        self.register_buffer("labels", torch.randint(0, 32, (4, 3)))

    def forward(self, data):
        return self.loss(self.head(data), self.labels).mean()


def parallel_cross_entropy():
    """slapo.op.ParallelCrossEntropy after a head sharded by vocabulary, as
    Slapo's users write it: no gather, the loss vocabulary parallel (each
    rank its block of the logits, the row statistics all-reduced; no rank
    holds the whole logits), the input's partial gradient all-reduced; and
    the same with the head's output gathered first (the gather's backward
    derived). Loss, input gradient and each rank's parameter-gradient
    blocks equal eager PyTorch's."""
    for gathered in (False, True):
        model = TokenLoss()
        sch = slapo.create_schedule(copy.deepcopy(model))
        sch["head"].shard("weight", axis=0)
        sch["head"].shard("bias", axis=0)
        if gathered:
            sch["head"].sync(mode="fwd_post", sync_op_or_fn="all_gather",
                             axis=2)
        sch["head"].sync(mode="bwd_post", sync_op_or_fn="all_reduce")
        built, _ = slapo.build(sch, init_weights=False)
        out, out_ref, grad, grad_ref = run_both(built, model,
                                                torch.randn(4, 3, 16))
        torch.testing.assert_close(out, out_ref, atol=TOL, rtol=TOL)
        torch.testing.assert_close(grad, grad_ref, atol=TOL, rtol=TOL)
        check_blocks(built, model, {"head.weight": 0, "head.bias": 0})
        if RANKS > 1:
            rank_program = built.ir("partitioned")
            assert ("shard.all_gather" in rank_program) == gathered
            # The loss of this rank's block of the [12, 32] logits.
            vocabulary_parallel = re.search(
                rf"lamina\.cross_entropy .* shards {RANKS} rank "
                rf".*\(tensor<12x{32 // RANKS}xf32>", rank_program)
            assert bool(vocabulary_parallel) != gathered


class MaskedTokenLoss(nn.Module):
    """A head over the vocabulary and F.cross_entropy's mean over the
    targets that are not ignored (GPT's loss); targets and their mask are
    buffers."""

    def __init__(self):
        super().__init__()
        self.head = nn.Linear(16, 32)
        targets = torch.randint(0, 32, (12,))
        targets[::5] = -1
        self.register_buffer("targets", targets)

    def forward(self, data):
        logits = self.head(data)
        return F.cross_entropy(logits.view(-1, logits.size(-1)),
                               self.targets, ignore_index=-1)


def vocabulary_parallel_loss():
    """GPT's loss on a head sharded by vocabulary (Megatron's
    vocabulary-parallel cross entropy): the mean over the targets not
    ignored, and its gradients, equal eager PyTorch's; each rank keeps its
    block of the head's gradients."""
    model = MaskedTokenLoss()
    sch = slapo.create_schedule(copy.deepcopy(model))
    sch["head"].shard("weight", axis=0)
    sch["head"].shard("bias", axis=0)
    sch["head"].sync(mode="bwd_post", sync_op_or_fn="all_reduce")
    built, _ = slapo.build(sch, init_weights=False)
    data = torch.randn(4, 3, 16)
    x, x_ref = data.clone().requires_grad_(), data.clone().requires_grad_()
    loss, loss_ref = built(x), model(x_ref)
    loss.backward()
    loss_ref.backward()
    torch.testing.assert_close(loss, loss_ref, atol=TOL, rtol=TOL)
    torch.testing.assert_close(x.grad, x_ref.grad, atol=TOL, rtol=TOL)
    check_blocks(built, model, {"head.weight": 0, "head.bias": 0})
    if RANKS > 1:
        assert "lamina.cross_entropy_grad" in built.ir("training")
        assert "shard.all_gather" not in built.ir("partitioned")


def verify_linear():
    """test_verify.py::test_linear and test_meta_distributed: Verify passes
    the Megatron recipe and catches one without its fwd_post all-reduce;
    beyond Slapo, it compares gradients too."""
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear1 = nn.Linear(20, 30)
            self.linear2 = nn.Linear(30, 40)

        def forward(self, x):
            return self.linear2(self.linear1(x))

    sch = slapo.create_schedule(Model())
    with slapo.Verify(sch, [torch.rand(10, 20)]):
        megatron(sch)

    sch = slapo.create_schedule(Model())
    try:
        with slapo.Verify(sch, [torch.rand(10, 20)]):
            megatron(sch, fwd_post=False)
        assert RANKS == 1, "Verify accepted a recipe without its fwd_post " \
            "all-reduce"
    except ScheduleError as error:
        # Lamina rejects the partial sum reaching the bias at compile time.
        assert RANKS > 1 and "partial" in str(error), error

    with slapo.init_empty_weights():
        model = Model()
    sch = slapo.create_schedule(model)
    with slapo.Verify(sch, [torch.rand(10, 20)]):
        megatron(sch)


def verify_catches_a_missing_bwd_post():
    """Beyond Slapo: a recipe whose forward is right but whose backward
    misses fc1's bwd_post all-reduce is caught (Slapo's forward-only Verify
    passes it)."""
    sch = slapo.create_schedule(TwoLinears())
    try:
        with slapo.Verify(sch, [torch.rand(10, 20)]):
            megatron(sch, bwd_post=False)
        raise AssertionError("Verify passed a backward without bwd_post")
    except ScheduleError as error:
        assert "bwd_post" in str(error), error


class ReshardMLP(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


RESHARD_SCHEMES = {
    2: [("fc1", "weight", 0), ("fc1", "bias", 0), ("fc1", "RS->SR"),
        ("fc2", "SR->RR")],
    3: [("fc1", "weight", 0), ("fc1", "bias", 0), ("fc1", "RS->SR"),
        ("fc1", "SR->RS"), ("fc2", "weight", 1), ("fc2", "all_reduce")],
    4: [("fc1", "weight", 0), ("fc1", "bias", 0), ("fc2", "weight", 1),
        ("fc2", "all_reduce")],
    5: [("fc1", "weight", 0), ("fc1", "bias", 0), ("fc1", "RS->RR"),
        ("fc2", "weight", 0), ("fc2", "bias", 0), ("fc2", "RS->RR")],
    6: [("fc1", "RR->RS"), ("fc2", "weight", 1), ("fc2", "all_reduce")],
    7: [("fc1", "RR->SR"), ("fc2", "SR->RR")],
    8: [("fc1", "RR->SR", "fwd_pre"), ("fc2", "SR->RR")],
}


def reshard():
    """test_reshard.py::test_schemes: the eight resharding schemes on
    Slapo's MLP (created under init_empty_weights), each checked by Verify
    (Slapo's shapes, bs 8 x seq 1024 x hidden 1024, are scaled to bs 2 x
    seq 16 x hidden 32 to keep the check short). Schemes 2-5 shard fc1 by
    columns without fc1's bwd_post all-reduce: their forward is right (what
    Slapo's Verify checks, check_gradients=False here) and their backward
    wrong, which Lamina's Verify reports; with the all-reduce added they
    train right. In scheme 5 the backward of fc1's gather ("RS->RR") is a
    reduce-scatter, derived from the partial input gradient of the
    column-parallel fc2 after it."""
    inputs = [torch.randn(2, 16, 32)]
    sch_1 = slapo.create_schedule(ReshardMLP(32))
    with slapo.Verify(sch_1, inputs):
        pass
    bwd_post = ("fc1", "all_reduce", "bwd_post")
    for number, steps in RESHARD_SCHEMES.items():
        # (recipe, gradients compared, the error Lamina gives or None)
        variants = [(steps, False, None)]
        if ("fc1", "weight", 0) in steps:
            variants.append((steps, True, 'add sync("bwd_post"'))
            variants.append((steps + [bwd_post], True, None))
        for recipe, gradients, expected in variants:
            with slapo.init_empty_weights():
                mlp = ReshardMLP(32)
            sch = slapo.create_schedule(mlp)
            try:
                with slapo.Verify(sch, inputs, check_gradients=gradients):
                    apply_steps(sch, recipe)
            except ScheduleError as error:
                assert expected is not None and expected in str(error), \
                    (number, recipe, gradients, error)
            else:
                assert expected is None, (number, recipe, gradients)


def apply_steps(sch, steps):
    for step in steps:
        if len(step) == 3 and isinstance(step[2], int):
            sch[step[0]].shard(step[1], axis=step[2])
        else:
            mode = step[2] if len(step) == 3 else "fwd_post"
            sch[step[0]].sync(mode, sync_op_or_fn=step[1])


def fork_rng():
    """test_fork_rng.py::test_dropout: without fork_rng every rank draws the
    same mask of a replicated value, as Slapo's test expects; with fork_rng
    Lamina keeps the replicas equal too (the mask is keyed by the element's
    index in the whole tensor, and a replicated value is one value), where
    Slapo's test expects the ranks' masks to differ. On a sharded value the
    ranks' masks differ and are the blocks of the unsharded mask."""
    class Model(nn.Module):
        def forward(self, x):
            return F.dropout(x, p=0.5)

    slapo.set_random_seed(123)
    data = torch.randn(10, 20)
    outs = []
    for forked in (False, True):
        sch = slapo.create_schedule(Model())
        if forked:
            sch.fork_rng()
        sch_model, _ = slapo.build(sch)
        slapo.set_random_seed(124)  # both calls draw the same key
        with torch.no_grad():
            outs.append(sch_model(data))
    torch.testing.assert_close(outs[0], outs[1])
    assert 0 < (outs[0] == 0).sum() < data.numel()

    class Sharded(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = op.LinearWithDropout(20, 40, p=0.5)

        def forward(self, x):
            return self.fc(x)

    model = Sharded()
    sch = slapo.create_schedule(model)
    sch["fc"].shard("weight", axis=0)
    sch["fc"].shard("bias", axis=0)
    sch["fc"].fork_rng()
    sch_model, _ = slapo.build(sch, init_weights=False)
    with torch.no_grad():
        dropped = (sch_model(data) == 0)
    assert dropped.shape == (10, 40 // RANKS)
    assert 0 < dropped.sum() < dropped.numel()


def checkpoint_module():
    """test_checkpoint.py::test_checkpoint_module: the Megatron pair with
    its first block checkpointed (Slapo's reduce_backward_grad /
    reduce_forward_output calls in the forward are Lamina's syncs here);
    outputs, input and weight gradients equal eager's."""
    full = 5 * RANKS

    class LinearAct(nn.Module):
        def __init__(self, inp, oup, bias):
            super().__init__()
            self.linear = nn.Linear(inp, oup, bias=bias)
            self.act = nn.ReLU()

        def forward(self, x):
            return self.act(self.linear(x))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.layer1 = LinearAct(full, 5 * RANKS, bias=False)
            self.layer2 = LinearAct(5 * RANKS, full, bias=False)

        def forward(self, x):
            return self.layer2(self.layer1(x))

    model = Model()
    sch = slapo.create_schedule(copy.deepcopy(model))
    sch["layer1.linear"].shard("weight", axis=0)
    sch["layer1"].sync(mode="bwd_post", sync_op_or_fn="all_reduce")
    sch["layer2.linear"].shard("weight", axis=1)
    sch["layer2.linear"].sync(mode="fwd_post", sync_op_or_fn="all_reduce")
    sch["layer1"].checkpoint()
    # Slapo's wrapper in layer1's place; the primitives on its layers
    # follow them inside it.
    assert sch["layer1"].mod.__class__.__name__ == "CheckPointWrapper"
    sch_model, _ = slapo.build(sch, init_weights=False)
    out, out_ref, grad, grad_ref = run_both(sch_model, model,
                                            torch.randn(full, full))
    torch.testing.assert_close(out, out_ref)
    torch.testing.assert_close(grad, grad_ref, atol=TOL, rtol=TOL)
    torch.testing.assert_close(sch_model.layer1.mod.linear.weight.grad,
                               block(model.layer1.linear.weight.grad, 0),
                               atol=TOL, rtol=TOL)
    torch.testing.assert_close(sch_model.layer2.linear.weight.grad,
                               block(model.layer2.linear.weight.grad, 1),
                               atol=TOL, rtol=TOL)


def world_size_from_mpi():
    """Item 1: the schedule's world is the launched one; world_size=1 under
    mpirun is replicated, any other mismatch a ScheduleError."""
    assert slapo.create_schedule(TwoLinears()).world_size == RANKS
    replicated = slapo.create_schedule(TwoLinears(), world_size=1)
    model, _ = slapo.build(replicated, init_weights=False)
    x = torch.randn(3, 20)
    with torch.no_grad():
        torch.testing.assert_close(model(x), replicated.mod(x))
    if RANKS == 1:
        return  # outside a multi-rank world any world size may be compiled
    try:
        slapo.create_schedule(TwoLinears(), world_size=RANKS + 1)
        raise AssertionError("a mismatched world size was accepted")
    except ScheduleError as error:
        assert "MPI world" in str(error), error


def optimizer_after_build():
    """Item 2: the parameters exist when build returns (this rank's blocks,
    before any call), so an optimizer made then trains the compiled model:
    a few SGD steps give eager's losses."""
    model = TwoLinears()
    sch = slapo.create_schedule(copy.deepcopy(model))
    megatron(sch)
    sch_model, _ = slapo.build(sch, init_weights=False)
    assert sch_model.linear1.weight.shape == (30 // RANKS, 20)
    optimizer = torch.optim.SGD(sch_model.parameters(), lr=0.1)
    reference = torch.optim.SGD(model.parameters(), lr=0.1)
    data = torch.randn(8, 20)
    for _ in range(3):
        for opt in (optimizer, reference):
            opt.zero_grad()
        loss = (sch_model(data) ** 2).mean()
        loss_ref = (model(data) ** 2).mean()
        loss.backward()
        loss_ref.backward()
        optimizer.step()
        reference.step()
        torch.testing.assert_close(loss, loss_ref)
    torch.testing.assert_close(sch_model.linear1.weight,
                               block(model.linear1.weight, 0))


class GPTBlock(nn.Module):
    """LayerNorm, FusedQKV attention (softmax over scaled q·kᵀ), the output
    projection and a residual; LayerNorm, the GELU MLP and a residual."""

    def __init__(self, hidden=32, heads=4):
        super().__init__()
        self.hidden = hidden
        self.ln_1 = nn.LayerNorm(hidden)
        self.qkv = op.FusedQKV(hidden, heads, 1)
        self.proj = nn.Linear(hidden, hidden)
        self.scale = (hidden // heads) ** -0.5
        self.ln_2 = nn.LayerNorm(hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(),
                                 nn.Linear(4 * hidden, hidden))

    def forward(self, x):
        q, k, v = self.qkv(self.ln_1(x))
        q, v = q.permute(0, 2, 1, 3), v.permute(0, 2, 1, 3)
        k = k.permute(0, 2, 3, 1)
        probs = (torch.matmul(q, k) * self.scale).softmax(dim=-1)
        heads = torch.matmul(probs, v).permute(0, 2, 1, 3)
        x = x + self.proj(heads.reshape(x.shape[0], x.shape[1], self.hidden))
        return x + self.mlp(self.ln_2(x))


class GPTStyle(nn.Module):
    def __init__(self, layers=2, hidden=32):
        super().__init__()
        self.h = nn.ModuleList([GPTBlock(hidden) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, 16)

    def forward(self, x):
        for block in self.h:
            x = block(x)
        return self.head(self.ln_f(x))


def gpt_style_training():
    """A GPT-style stack scheduled with Slapo's primitives (Megatron MLPs,
    found by replace_all-style iteration over sch["h.i"]), trained: the
    gradients match eager's blocks and 5 AdamW steps give eager's losses."""
    model = GPTStyle().eval()
    eager = copy.deepcopy(model)
    sch = slapo.create_schedule(model)
    for index in range(len(model.h)):
        megatron(sch[f"h.{index}"]["mlp"], "0", "2")  # nested addressing
    sch_model, _ = slapo.build(sch, init_weights=False)
    out, out_ref, grad, grad_ref = run_both(sch_model, eager,
                                            torch.randn(2, 8, 32))
    torch.testing.assert_close(out, out_ref)
    torch.testing.assert_close(grad, grad_ref, atol=TOL, rtol=TOL)
    axes = {name: "none" for name, _ in eager.named_parameters()}
    for index in range(len(model.h)):
        axes[f"h.{index}.mlp.0.weight"] = 0
        axes[f"h.{index}.mlp.0.bias"] = 0
        axes[f"h.{index}.mlp.2.weight"] = 1
    check_blocks(sch_model, eager, axes)
    ours = torch.optim.AdamW(sch_model.parameters(), lr=1e-3)
    theirs = torch.optim.AdamW(eager.parameters(), lr=1e-3)
    for step in range(5):
        x, target = torch.randn(2, 8, 32), torch.randn(2, 8, 16)
        for optimizer, net in ((ours, sch_model), (theirs, eager)):
            optimizer.zero_grad()
            loss = F.mse_loss(net(x), target)
            loss.backward()
            optimizer.step()
            if net is sch_model:
                mine = loss.detach()
        torch.testing.assert_close(mine, loss.detach(), rtol=1e-4, atol=0)


CHECKS = {name: fn for name, fn in globals().items()
          if callable(fn) and fn.__module__ == __name__ and
          name in ("shard_mlp", "shard_linear", "seq_para", "shard_annotate",
                   "consolidation", "delayed_init_blocks", "verify_linear",
                   "parallel_cross_entropy", "vocabulary_parallel_loss",
                   "word_embedding", "tie_weights",
                   "verify_catches_a_missing_bwd_post", "reshard",
                   "fork_rng", "checkpoint_module", "world_size_from_mpi",
                   "optimizer_after_build", "gpt_style_training",
                   "fused_qkv_by_heads")}

if __name__ == "__main__":
    for name in sys.argv[1:]:
        torch.manual_seed(0)  # the same model and data on every rank
        CHECKS[name]()
        print(f"rank {RANK}: {name} ok", flush=True)
