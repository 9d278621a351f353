"""Each construct of GPT-style model code, imported alone, compiled, and
compared with eager PyTorch: the forward at PyTorch's fp32 tolerance, and
the gradients of the parameters and float inputs through the compiled
backward."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lamina
from lamina import UnsupportedOperationError


def randn(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def compiled_matches_eager(make, *inputs, train=False):
    """Builds `make()` and a twin with the same weights; checks results and
    gradients (of a fixed random projection of the float results) against
    the twin in eager mode. Returns the compiled module."""
    torch.manual_seed(0)
    model, twin = make(), make()
    twin.load_state_dict(model.state_dict())
    model.train(train), twin.train(train)
    compiled = lamina.build(lamina.create_schedule(model))
    ours = [x.clone().requires_grad_(x.is_floating_point()) for x in inputs]
    theirs = [x.clone().requires_grad_(x.is_floating_point())
              for x in inputs]
    got, want = compiled(*ours), twin(*theirs)
    got_leaves, want_leaves = _leaves(got), _leaves(want)
    assert len(got_leaves) == len(want_leaves)
    loss_got = loss_want = 0
    for index, (g, w) in enumerate(zip(got_leaves, want_leaves)):
        torch.testing.assert_close(g, w)
        if w.is_floating_point():
            weights = randn(*w.shape, seed=100 + index)
            loss_got = loss_got + (g * weights).sum()
            loss_want = loss_want + (w * weights).sum()
    if isinstance(loss_want, torch.Tensor) and loss_want.requires_grad:
        loss_got.backward()
        loss_want.backward()
        for a, b in zip(ours, theirs):
            if b.grad is not None:
                torch.testing.assert_close(a.grad, b.grad)
        grads = {n: p.grad for n, p in compiled.named_parameters()}
        for name, parameter in twin.named_parameters():
            if parameter.grad is not None:
                torch.testing.assert_close(grads[name], parameter.grad,
                                           msg=lambda m: f"{name}: {m}")
    return compiled


def _leaves(result):
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        return [leaf for item in result for leaf in _leaves(item)]
    assert result is None
    return []


# -- shape code ---------------------------------------------------------------


class ShapeCode(nn.Module):
    def __init__(self, n_head=4, block_size=16):
        super().__init__()
        self.n_head, self.block_size = n_head, block_size
        self.proj = nn.Linear(32, 32)

    def forward(self, x):
        B, T, C = x.size()
        assert T <= self.block_size, "sequence too long"
        hd = C // self.n_head
        y = self.proj(x).view(B, T, self.n_head, hd)
        return y * (1.0 / math.sqrt(y.size(-1))) + x.shape[0]


def test_shape_code_is_plain_python():
    compiled_matches_eager(ShapeCode, randn(2, 8, 32))
    text = lamina.create_schedule(ShapeCode()).mlir((randn(2, 8, 32),))
    assert "tensor<2x8x4x8xf32>" in text


def test_an_assert_on_shapes_fails_as_in_eager():
    with pytest.raises(AssertionError, match="sequence too long"):
        lamina.import_model(ShapeCode(block_size=4), (randn(2, 8, 32),))


# -- attention ----------------------------------------------------------------


class SplitHeads(nn.Module):
    def __init__(self, n_embd=32, n_head=4):
        super().__init__()
        self.n_embd, self.n_head = n_embd, n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        return q, k, v


def test_contiguous_qkv_split_into_heads():
    compiled_matches_eager(SplitHeads, randn(2, 8, 32))


class ScaledScores(nn.Module):
    def forward(self, q, k):
        return q @ k.transpose(-2, -1) * (1.0 / math.sqrt(k.size(-1)))


def test_scaled_scores():
    compiled_matches_eager(ScaledScores, randn(2, 4, 8, 8),
                           randn(2, 4, 8, 8, seed=1))


class CausalSoftmax(nn.Module):
    def __init__(self, block_size=16, p=0.0):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(
            block_size, block_size)).view(1, 1, block_size, block_size))
        self.attn_dropout = nn.Dropout(p)

    def forward(self, att):
        T = att.size(-1)
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        return self.attn_dropout(att)


def test_causal_mask_from_a_buffer_softmax_and_dropout():
    compiled = compiled_matches_eager(CausalSoftmax, randn(2, 4, 8, 8))
    text = compiled.ir("imported")
    assert "lamina.masked_fill" in text and "tensor<1x1x8x8xi1>" in text


def test_attention_dropout_in_training_mode_drops_weights():
    model = CausalSoftmax(p=0.5).train()
    compiled = lamina.build(lamina.create_schedule(model))
    att = compiled(randn(2, 4, 8, 8))
    eval_att = model.eval()(randn(2, 4, 8, 8))
    dropped = (att == 0) & (eval_att != 0)
    assert 0.3 < dropped.sum() / (eval_att != 0).sum() < 0.7
    kept = att != 0
    torch.testing.assert_close(att[kept], 2 * eval_att[kept])


class MergeHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_proj = nn.Linear(32, 32)

    def forward(self, att, v):
        B, nh, T, hd = v.size()
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, nh * hd)
        return self.c_proj(y)


def test_heads_merged_and_projected():
    compiled_matches_eager(MergeHeads, randn(2, 4, 8, 8).softmax(-1),
                           randn(2, 4, 8, 8, seed=1))


# -- layer norm ---------------------------------------------------------------


class FunctionalLayerNorm(nn.Module):
    def __init__(self, ndim=32, bias=True):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(ndim) + 0.5)
        self.bias = nn.Parameter(torch.rand(ndim) - 0.5) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias,
                            1e-5)


@pytest.mark.parametrize("bias", [True, False])
def test_functional_layer_norm_with_attribute_parameters(bias):
    compiled = compiled_matches_eager(lambda: FunctionalLayerNorm(bias=bias),
                                      randn(2, 8, 32))
    keyword = "bias %p1" if bias else "eps"
    assert f'lamina.layer_norm "" %x0 weight %p0 {keyword}' in \
        compiled.ir("imported")


# -- embeddings ---------------------------------------------------------------


class Embeddings(nn.Module):
    def __init__(self, unsqueeze=False):
        super().__init__()
        self.unsqueeze = unsqueeze
        self.wte = nn.Embedding(50, 32)
        self.wpe = nn.Embedding(16, 32)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        if self.unsqueeze:
            pos = pos.unsqueeze(0)
        return self.wte(idx) + self.wpe(pos)


@pytest.mark.parametrize("unsqueeze", [False, True])
def test_token_and_position_embeddings_broadcast(unsqueeze):
    idx = torch.randint(0, 50, (2, 8), generator=torch.Generator()
                        .manual_seed(0))
    compiled_matches_eager(lambda: Embeddings(unsqueeze), idx)


def test_repeated_indices_accumulate_their_rows_gradients():
    idx = torch.tensor([[3, 3, 7, 3], [7, 0, 3, 49]])
    compiled_matches_eager(Embeddings, idx)


def test_padding_row_gets_no_gradient():
    def make():
        return nn.Embedding(10, 8, padding_idx=2)
    idx = torch.tensor([[2, 1, 2], [5, 2, 1]])
    compiled = compiled_matches_eager(make, idx)
    assert "padding_idx 2" in compiled.ir("imported")


def test_an_index_outside_the_rows_is_an_input_error():
    compiled = lamina.build(lamina.create_schedule(Embeddings()))
    compiled(torch.zeros(2, 8, dtype=torch.long))
    with pytest.raises(lamina.InputError,
                       match="index 50, outside the 50 rows of Embedding "
                       "'wte'"):
        compiled(torch.full((2, 8), 50, dtype=torch.long))


class TiedHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(40, 16)
        self.lm_head = nn.Linear(16, 40, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx):
        return self.lm_head(torch.tanh(self.wte(idx)))


def test_tied_head_is_one_argument_with_both_gradients():
    idx = torch.tensor([[1, 5, 5, 39]])
    compiled = compiled_matches_eager(TiedHead, idx)
    text = compiled.ir("imported")
    assert text.count("tensor<40x16xf32>") >= 2 and "%p1" not in text.split(
        "{")[1].split(")")[0]


# -- element-wise -------------------------------------------------------------


class Arithmetic(nn.Module):
    def forward(self, x, y):
        a = 0.5 * x + (1.0 + x) * y - (1.0 - y) / (x * x + 1.0)
        b = torch.tanh(a) + torch.exp(-a * a) + torch.pow(x, 3.0) - x ** 2
        c = torch.sqrt(x * x + 1.0) * torch.rsqrt(y * y + 2.0)
        return b + c - x / 4.0


def test_tensor_and_number_arithmetic_and_math():
    compiled_matches_eager(Arithmetic, randn(4, 16), randn(4, 16, seed=1))


class Broadcasts(nn.Module):
    def forward(self, x, row, column):
        return x * row + column - x / (row * row + 1.0)


def test_broadcasting_between_tensors():
    compiled_matches_eager(Broadcasts, randn(2, 4, 16), randn(16, seed=1),
                           randn(4, 1, seed=2))


class NewGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                           (x + 0.044715 * torch.pow(x, 3.0))))


class ErfGELU(nn.Module):
    def forward(self, x):
        return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


class FormulaMLP(nn.Module):
    def __init__(self, act):
        super().__init__()
        self.fc = nn.Linear(32, 64)
        self.act = act
        self.out = nn.Linear(64, 32)

    def forward(self, x):
        return self.out(self.act(self.fc(x)))


@pytest.mark.parametrize("act, kind", [(NewGELU, "gelu_tanh"),
                                       (ErfGELU, "gelu_erf")])
def test_hand_written_gelu_is_recognised_and_fuses(act, kind):
    compiled = compiled_matches_eager(lambda: FormulaMLP(act()),
                                      randn(4, 32))
    imported = compiled.ir("imported")
    assert f'lamina.activation "act" {kind}' in imported
    assert "math.tanh" not in imported and "math.erf" not in imported
    lowered = lamina._lamina.transform_ir(compiled.ir("scheduled"),
                                          pipeline="lamina-decompose,"
                                          "lamina-fuse-epilogues")
    assert f"activation {kind}" in lowered and \
        "lamina.activation" not in lowered


def test_a_formula_that_is_not_gelu_stays_arithmetic():
    class AlmostGELU(nn.Module):
        def forward(self, x):
            return 0.5 * x * (1.0 + torch.tanh(0.8 * (x + 0.044715 * x ** 3)))

    compiled = compiled_matches_eager(AlmostGELU, randn(4, 16))
    assert "lamina.activation" not in compiled.ir("imported")


# -- indexing and results -----------------------------------------------------


class Indexing(nn.Module):
    def forward(self, x):
        return x[:, [-1], :], x[:, -1, :], x[..., :4], x[:, None, 1:5:2], \
            x[:, [0, 2], :]


def test_indexing_with_ints_slices_lists_and_none():
    compiled_matches_eager(Indexing, randn(2, 6, 8))


class WithLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(16, 24)

    def forward(self, x, targets=None):
        logits = self.head(x)
        if targets is None:
            return logits[:, [-1], :], None
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)),
                               targets.view(-1), ignore_index=-1)
        return logits, loss


def test_results_with_none():
    compiled = compiled_matches_eager(WithLoss, randn(2, 5, 16))
    logits, loss = compiled(randn(2, 5, 16))
    assert loss is None and logits.shape == (2, 1, 24)


def test_cross_entropy_loss_with_ignored_targets():
    targets = torch.tensor([[3, -1, 23, 0, 7], [-1, -1, 5, 5, 1]])
    compiled = compiled_matches_eager(WithLoss, randn(2, 5, 16), targets)
    assert "lamina.cross_entropy" in compiled.ir("imported")
    with pytest.raises(lamina.InputError, match="index 24, outside the 24 "
                       "rows of F.cross_entropy"):
        compiled(randn(2, 5, 16), torch.full((2, 5), 24))


def test_summed_cross_entropy_module():
    class Summed(nn.Module):
        def __init__(self):
            super().__init__()
            self.loss = nn.CrossEntropyLoss(reduction="sum")

        def forward(self, logits, targets):
            return self.loss(logits, targets)

    compiled_matches_eager(Summed, randn(6, 10), torch.tensor([1, 2, 9, 0,
                                                               0, 4]))


def test_per_token_cross_entropy():
    """reduction="none": one loss per row (0 for an ignored target), as a
    masked mean over tokens is written; gradients through the per-row
    cotangent."""
    class PerToken(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(16, 24)

        def forward(self, x, targets):
            logits = self.head(x)
            losses = F.cross_entropy(logits.view(-1, 24), targets.view(-1),
                                     reduction="none")
            return losses.view(targets.shape)

    targets = torch.tensor([[3, -100, 23, 0, 7], [5, 1, -100, 2, 2]])
    compiled = compiled_matches_eager(PerToken, randn(2, 5, 16), targets)
    assert "none" in compiled.ir("imported")


class Reductions(nn.Module):
    """Sums and means as losses and statistics are written."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 6)

    def forward(self, x):
        y = self.fc(x)
        return (y.mean(), y.sum(dim=1), torch.mean(y, dim=(0, 2),
                                                    keepdim=True),
                torch.sum(y, -1, keepdim=True), (y * y).mean(-1))


def test_sums_and_means_over_any_dims():
    compiled = compiled_matches_eager(Reductions, randn(3, 4, 8))
    assert "linalg.reduce" in compiled.ir("imported")


# -- what is not supported ----------------------------------------------------


class DataDependent(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x


class ItemRead(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.fc(x) * x.max().item()


class Unsupported(nn.Module):
    def __init__(self, what):
        super().__init__()
        self.what = what
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return self.what(self.fc(x))


@pytest.mark.parametrize("make, message", [
    (DataDependent, "Python control flow on a tensor's values"),
    (ItemRead, r"Tensor.item\(\)"),
    (lambda: Unsupported(lambda y: torch.cumsum(y, 0)),
     "function cumsum in the model's forward"),
    (lambda: Unsupported(lambda y: y[torch.tensor([0, 1])]),
     "tensor indices are not imported"),
    (lambda: Unsupported(lambda y: F.cross_entropy(
        y, torch.tensor([0, 1]), weight=torch.ones(8))), "class weights"),
    (lambda: Unsupported(lambda y: F.cross_entropy(
        y, torch.tensor([0, 1]), label_smoothing=0.1)), "label_smoothing"),
    (lambda: Unsupported(lambda y: torch.where(y > 0, y, 2.0 * y)),
     "function where"),
    (lambda: Unsupported(lambda y: y.sum(dtype=torch.float64)),
     "sum with a dtype"),
])
def test_unsupported_constructs_name_the_op_and_module(make, message):
    with pytest.raises(UnsupportedOperationError, match=message):
        lamina.import_model(make(), (randn(2, 8),))


def test_unsupported_op_inside_a_submodule_names_its_path():
    class Inner(nn.Module):
        def forward(self, x):
            return torch.cumsum(x, 0)

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = nn.ModuleDict({"inner": Inner()})

        def forward(self, x):
            return self.block.inner(x)

    with pytest.raises(UnsupportedOperationError,
                       match="function cumsum in module 'block.inner'"):
        lamina.import_model(Outer(), (randn(2, 8),))
