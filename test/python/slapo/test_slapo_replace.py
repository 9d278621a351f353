"""Slapo's tests/test_replace.py, ported: replacing modules, every module
of a class, subgraphs (vertical and horizontal) and single nodes by
modules or functions, on the same models. Beyond Slapo's graph checks, the
replaced models are compiled by Lamina and compared with eager PyTorch.
The replaced modules' Python hooks move onto the new module as Slapo moves
them; compiled code cannot call Python, so a model still holding hooks is
rejected when it is built."""

import operator

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import lamina
import lamina.slapo as slapo
from lamina import ScheduleError
from lamina.slapo.pattern import call_module
from lamina.slapo.utils import common
from slapo_checks import forward_matches


def test_replace_single_module():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(1024, 1024)
            self.activation = nn.ReLU()

        def forward(self, x):
            return self.activation(self.linear(x))

    model = Model()
    sch = slapo.create_schedule(model)
    sch["activation"].replace(nn.GELU())
    assert isinstance(sch["activation"].mod, nn.GELU)
    assert isinstance(model.activation, nn.GELU)
    x = torch.randn(4, 1024)
    forward_matches(sch, lambda x: F.gelu(model.linear(x)), x)


class SubMod(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(1024, 1024)
        self.activation = nn.ReLU()

    def forward(self, x):
        return self.activation(self.linear(x))


class TwoLayers(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(1024, 1024)
        self.act1 = nn.ReLU()
        self.fc2 = nn.Linear(1024, 1024)
        self.act2 = nn.ReLU()
        self.submod = SubMod()

    def forward(self, x):
        x = self.act1(self.fc1(x))
        x = self.act2(self.fc2(x))
        return self.submod(x)


def test_replace_all_module():
    sch = slapo.create_schedule(TwoLayers())
    sch.replace_all(nn.ReLU, lambda name, mod: nn.GELU())
    assert isinstance(sch["act1"].mod, nn.GELU)
    assert isinstance(sch["act2"].mod, nn.GELU)
    assert isinstance(sch["submod.activation"].mod, nn.GELU)

    def make_linear(name, mod):
        sizes = {"fc1": (1024, 1025), "fc2": (1025, 1026)}
        return nn.Linear(*sizes.get(name, (1026, 1027)))

    sch.replace_all(nn.Linear, make_linear)
    assert sch["fc1"].mod.out_features == 1025
    assert sch["fc2"].mod.out_features == 1026
    assert sch["submod.linear"].mod.out_features == 1027
    x = torch.randn(2, 1024)
    forward_matches(sch, sch.mod, x)


def test_replace_all_with_seq():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(1024, 1024)
            self.fc2 = nn.Linear(1024, 1024)

        def forward(self, x):
            return self.fc2(self.fc1(x))

    sch = slapo.create_schedule(Model())

    def make_seq(name, mod, is_relu=False):
        if not is_relu:
            raise NotImplementedError
        return nn.Sequential(mod, nn.ReLU())

    sch.replace_all(nn.Linear, make_seq, is_relu=True)
    assert getattr(sch["fc1"].mod, "0").out_features == 1024
    assert isinstance(getattr(sch["fc1"].mod, "1"), nn.ReLU)
    assert getattr(sch["fc2"].mod, "0").out_features == 1024
    forward_matches(sch, sch.mod, torch.randn(3, 1024))


def test_replace_all_module_list():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.mod = nn.ModuleList([nn.Linear(1024, 1024), nn.ReLU(),
                                      nn.Linear(1024, 1024), nn.ReLU()])
            self.seq = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(),
                                     nn.Linear(1024, 1024), nn.ReLU())

        def forward(self, x):
            for mod in self.mod:
                x = mod(x)
            return self.seq(x)

    sch = slapo.create_schedule(Model())
    sch.replace_all(nn.Linear, lambda name, mod: nn.Linear(512, 512))
    for path in ("mod.0", "mod.2", "seq.0", "seq.2"):
        assert sch[path].mod.out_features == 512
    forward_matches(sch, sch.mod, torch.randn(2, 512))


class LinearBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(1024, 1024)
        self.bn = nn.BatchNorm1d(1024)
        self.activation = nn.ReLU()

    def forward(self, x):
        return self.activation(self.bn(self.linear(x)))


class Identity(nn.Module):
    def forward(self, x):
        return x


def linear_bn(x):
    return call_module("bn", call_module("linear", x))


def test_vertical_replacement():
    sch = slapo.create_schedule(LinearBN())
    subgraph = sch.find(linear_bn)
    assert len(subgraph) == 1 and len(subgraph[0]) == 2
    sch.replace(Identity(), subgraph)
    assert isinstance(sch["Identity_0"].mod, Identity)
    # BatchNorm is gone: the rest (an identity, a ReLU) compiles.
    x = torch.randn(8, 1024)
    forward_matches(sch, F.relu, x)

    sch = slapo.create_schedule(LinearBN())
    sch.replace(Identity(), sch.find(linear_bn), name="test")
    assert isinstance(sch["test_0"].mod, Identity)


def test_hooks_move_onto_the_replacing_module():
    """The first module's fwd_pre and bwd_post hooks and the last one's
    fwd_post hooks move; a hook with no place in the new module is
    rejected; the model holding hooks does not compile."""
    sch = slapo.create_schedule(LinearBN())
    pre = sch.mod.linear.register_forward_pre_hook(lambda m, i: None)
    backward = sch.mod.linear.register_backward_hook(lambda m, gi, go: None)
    post = sch.mod.bn.register_forward_hook(lambda m, i, o: None)
    new = Identity()
    sch.replace(new, sch.find(linear_bn))
    hooks = common.get_hooks(new)
    assert [len(hooks[k]) for k in ("fwd_pre", "fwd_post", "bwd_post")] == \
        [1, 1, 1]
    with pytest.raises(lamina.UnsupportedOperationError,
                       match="module 'Identity_0' with Python forward pre "
                       "and forward and backward hooks"):
        slapo.build(sch)[0](torch.randn(8, 1024))
    for handle in (pre, backward, post):
        handle.remove()
    # The linear's fwd_post hook has no place: the new module's output is
    # the bn's.
    sch = slapo.create_schedule(LinearBN())
    sch.mod.linear.register_forward_hook(lambda m, i, o: None)
    with pytest.raises(ScheduleError, match="fwd_post hooks of module "
                       "'linear' have no place"):
        sch.replace(Identity(), sch.find(linear_bn))


def test_trace_keeps_the_module_hooks():
    sch = slapo.create_schedule(LinearBN())
    sch.mod.register_forward_pre_hook(lambda m, i: None)
    sch.trace()
    assert len(common.get_hooks(sch.mod)["fwd_pre"]) == 1
    with pytest.raises(lamina.UnsupportedOperationError,
                       match="the model has Python forward pre hooks"):
        slapo.build(sch)[0](torch.randn(8, 1024))


class TwoProjections(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(32, 32)
        self.fc2 = nn.Linear(32, 32)

    def permute(self, x):
        return x.permute(0, 2, 1, 3)

    def forward(self, x):
        return self.permute(self.fc1(x)) + self.permute(self.fc2(x))


def test_horizontal_replacement():
    sch = slapo.create_schedule(TwoProjections())

    def pattern(x):
        return call_module(r"fc1|fc2", x).permute(0, 2, 1, 3)

    subgraph = sch.find(pattern)
    assert len(subgraph) == 2 and len(subgraph[-1]) == 2
    assert [s[0][1].target for s in subgraph] == ["fc1", "fc2"]
    assert subgraph[0][1][1].target == "permute"

    class Pair(nn.Module):
        def forward(self, x):
            return (x, x)

    sch.replace(Pair(), subgraph, name="test")
    assert isinstance(sch["test_0"].mod, Pair)
    items = [n for n in sch.mod.graph.nodes
             if n.target == operator.getitem and n.args[0].target == "test_0"]
    assert len(items) == 2
    x = torch.randn(2, 4, 8, 32)
    torch.testing.assert_close(sch.mod(x), x + x)


def test_mismatched_arguments():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(1024, 1024)
            self.bn = nn.BatchNorm1d(1024)
            self.activation = nn.ReLU()

        def forward(self, x):
            return self.activation(self.linear(x)) + x

    sch = slapo.create_schedule(Model())
    subgraphs = sch.find(lambda x: F.relu(x) + x)
    assert len(subgraphs) == 1 and len(subgraphs[0]) == 2

    class NewMod(nn.Module):
        def forward(self, x, y, z):
            return x + y + z

    with pytest.raises(ScheduleError, match="number of arguments"):
        sch.replace(NewMod(), subgraphs)
    sch.replace(NewMod(), subgraphs, concrete_args={"z": 0})
    # A failed replacement leaves no module behind, but took its name, as
    # Slapo's does: this one is NewMod_1.
    assert isinstance(sch["NewMod_1"].mod, NewMod)
    assert "NewMod_0" not in dict(sch.mod.named_children())


def test_replace_function():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(1024, 1024)

        def forward(self, x):
            return F.relu(self.linear(x))

    def identity(x):
        return x

    model = Model()
    sch = slapo.create_schedule(model)
    nodes = sch.find_node(lambda node: node.op == "call_function" and
                          node.target == F.relu)
    assert len(nodes) == 1
    sch.replace(identity, nodes[0])
    assert sum(n.op == "call_function" and n.target == identity
               for n in sch.mod.graph.nodes) == 1
    forward_matches(sch, model.linear, torch.randn(2, 1024))


def test_insertion_point():
    class Model(nn.Module):
        def forward(self, a, b, c):
            return (a + b) + c * 2

    sch = slapo.create_schedule(Model())

    def pattern(a1, b1, y1):
        return (a1 + b1) + y1

    def new_func(a, b, y):
        return a * b * y

    sch.replace(new_func, sch.find(pattern))
    assert [n.name for n in sch.mod.graph.nodes] == [
        "a", "b", "c", "mul", "new_func", "output"]


def test_lambda():
    class Model(nn.Module):
        def forward(self, a, b):
            return a - (a + b)

    sch = slapo.create_schedule(Model())
    sch.replace(lambda a, b: a * b, sch.find(lambda a, b: a + b))
    sch.replace(lambda a, b: b // a, sch.find(lambda a, b: a - b))
    assert sch.mod(4, 10) == 10


def test_replace_rejections():
    sch = slapo.create_schedule(LinearBN())
    with pytest.raises(ScheduleError, match="nn.Module or a function"):
        sch["linear"].replace(42)
    with pytest.raises(ScheduleError, match="target_ops"):
        sch["linear"].replace(lambda x: x)
    with pytest.raises(ScheduleError, match="no Embedding"):
        sch.replace_all(nn.Embedding, lambda name, mod: mod)
    with pytest.raises(KeyError):
        sch["nothing"]
