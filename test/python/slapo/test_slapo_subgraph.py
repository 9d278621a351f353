"""Slapo's tests/test_subgraph.py, ported: subgraph patterns found by
sch.find (functions, Pattern modules, call_module, ModulePattern), on the
same models. Finding needs tracing only, so the convolutional models of
Slapo's tests work as written (compiling them would not: Lamina compiles
linear layers)."""

import operator

import torch
import torch.nn.functional as F
from torch import nn

import lamina.slapo as slapo
from lamina.slapo.pattern import ModulePattern, Pattern, call_module


def test_exact_match():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 32, 3)
            self.bn = nn.BatchNorm2d(32)

        def forward(self, x):
            return F.relu(self.conv(x)) + x

    sch = slapo.create_schedule(Model())

    def pattern(x: torch.Tensor):
        return F.relu(x) + x

    subgraph = sch.find(pattern)[0]
    assert len(subgraph) == 2
    assert subgraph[0][1].target == F.relu
    assert subgraph[1][1].target == operator.add


def test_functional_module_match():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 32, 3)
            self.bn = nn.BatchNorm2d(32)
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(self.conv(x)) + x

    sch = slapo.create_schedule(Model())

    def functional(x: torch.Tensor):
        return F.relu(x) + x

    def by_path(x: torch.Tensor):
        return call_module("relu", x) + x

    for pattern in (functional, by_path):
        subgraph = sch.find(pattern)[0]
        assert len(subgraph) == 2
        assert subgraph[0][1].op == "call_module"
        assert subgraph[0][1].target == "relu"
        assert subgraph[1][1].target == operator.add


class LeNet5(nn.Module):
    def __init__(self, num_classes):
        super().__init__()
        self.layer1 = nn.Sequential(
            nn.Conv2d(1, 6, kernel_size=5, stride=1, padding=0),
            nn.BatchNorm2d(6), nn.ReLU(), nn.MaxPool2d(kernel_size=2, stride=2))
        self.layer2 = nn.Sequential(
            nn.Conv2d(6, 16, kernel_size=5, stride=1, padding=0),
            nn.BatchNorm2d(16), nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2))
        self.fc = nn.Linear(400, 120)
        self.relu = nn.ReLU()
        self.fc1 = nn.Linear(120, 84)
        self.relu1 = nn.ReLU()
        self.fc2 = nn.Linear(84, num_classes)

    def forward(self, x):
        out = self.layer1(x)
        out = self.layer2(out)
        out = out.reshape(out.size(0), -1)
        out = self.relu(self.fc(out))
        out = self.relu1(self.fc1(out))
        return self.fc2(out)


def test_relu_bn():
    sch = slapo.create_schedule(LeNet5(10))

    class ReLUBNPattern(Pattern):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm2d(16)
            self.relu = nn.ReLU()

        def forward(self, x: torch.Tensor):
            return self.relu(self.bn(x))

    subgraph = sch["layer2"].find(ReLUBNPattern())[0]
    assert len(subgraph) == 2
    assert isinstance(sch["layer2"].get_module(subgraph[0][1].target),
                      nn.BatchNorm2d)
    assert isinstance(sch["layer2"].get_module(subgraph[1][1].target),
                      nn.ReLU)


def test_relu_bn_functional():
    sch = slapo.create_schedule(LeNet5(10))

    class ReLUBNPattern2(Pattern):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm2d(16)
            self.relu = nn.ReLU()

        def forward(self, x: torch.Tensor):
            return F.relu(self.bn(x))

    subgraph = sch["layer1"].find(ReLUBNPattern2())[0]
    assert len(subgraph) == 2
    assert isinstance(sch["layer1"].get_module(subgraph[0][1].target),
                      nn.BatchNorm2d)
    assert isinstance(sch["layer1"].get_module(subgraph[1][1].target),
                      nn.ReLU)


def test_linear_relu():
    sch = slapo.create_schedule(LeNet5(10))

    class LinearReLUPattern(Pattern):
        def __init__(self):
            super().__init__()
            self.linear = nn.Linear(10, 20)
            self.relu = nn.ReLU()

        def forward(self, x: torch.Tensor):
            return self.relu(self.linear(x))

    subgraph = sch.find(LinearReLUPattern())
    assert len(subgraph) == 2
    for i in range(2):
        assert isinstance(sch.get_module(subgraph[i][0][1].target), nn.Linear)
        assert isinstance(sch.get_module(subgraph[i][1][1].target), nn.ReLU)


def test_two_paths():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(10, 10)
            self.fc2 = nn.Linear(10, 10)
            self.relu = nn.ReLU()

        def forward(self, x):
            return self.relu(self.fc1(x) + self.fc2(x))

    sch = slapo.create_schedule(Model())

    def pattern(x1, x2):
        return F.relu(x1 + x2)

    subgraph = sch.find(pattern)[0]
    assert len(subgraph) == 2
    assert subgraph[0][1].target == operator.add
    assert subgraph[1][1].target == "relu"


def test_tree_pattern():
    class Model(nn.Module):
        def forward(self, x, y, z):
            a = x + y
            b = y - z
            return a * b

    sch = slapo.create_schedule(Model())

    def pattern(x, y, z):
        return (x + y) * (y - z)

    subgraph = sch.find(pattern)[0]
    assert [node.name for _, node in subgraph] == ["add", "sub", "mul"]


def test_horizontal_pattern():
    class CoreAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q_proj = nn.Linear(32, 32)
            self.k_proj = nn.Linear(32, 32)
            self.v_proj = nn.Linear(32, 32)
            self.dropout = nn.Dropout(0.2)

        def permute(self, x):
            return x.permute(0, 2, 1, 3)

        def forward(self, x):
            q = self.permute(self.q_proj(x))
            k = self.permute(self.k_proj(x))
            v = self.permute(self.v_proj(x))
            return self.dropout(F.softmax(q * k)) * v

    sch = slapo.create_schedule(CoreAttention())

    def pattern(x):
        x = call_module(r"[qkv]_proj", x)
        return x.permute(0, 2, 1, 3)

    subgraph = sch.find(pattern)
    assert len(subgraph) == 3
    assert len(subgraph[-1]) == 2
    assert [s[0][1].target for s in subgraph] == ["q_proj", "k_proj",
                                                  "v_proj"]
    assert subgraph[0][1][1].target == "permute"


def test_pattern_call_module_class():
    sch = slapo.create_schedule(LeNet5(10))

    class LinearReLUPattern(slapo.Pattern):
        def __init__(self):
            super().__init__()
            self.fc = ModulePattern(r"fc?")
            self.relu = nn.ReLU()

        def forward(self, out: torch.Tensor):
            return self.relu(self.fc(out))

    def pattern(x: torch.Tensor):
        return F.relu(call_module(r"fc?", x))

    for found in (sch.find(LinearReLUPattern()), sch.find(pattern)):
        assert len(found) == 2
        for i in range(2):
            assert isinstance(sch.get_module(found[i][0][1].target),
                              nn.Linear)
            assert isinstance(sch.get_module(found[i][1][1].target), nn.ReLU)


def test_diamond():
    class Diamond(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(10, 10)
            self.fc2 = nn.Linear(10, 10)

        def forward(self, x, y):
            a = self.fc1(x) + self.fc2(y)
            b = a * 2
            b1 = a * 5  # not part of the pattern
            c = a * 3
            d = b + c
            return b1 + d

    sch = slapo.create_schedule(Diamond())

    def pattern(m, n):
        a = m + n
        return a * 2 + a * 3

    subgraph = sch.find(pattern)[0]
    assert len(subgraph) == 4
    assert [node.target for _, node in subgraph] == [
        operator.add, operator.mul, operator.mul, operator.add]
    # a * 5 does not match a * 2 or a * 3: the constants differ.
    assert all(node.args[1] != 5 for _, node in subgraph[1:3])


def test_find_regex_returns_slapo_nodes():
    sch = slapo.create_schedule(LeNet5(10))
    found = sch.find(r"fc\d")
    assert [(parent, node.target) for parent, node in found] == [
        ("", "fc1"), ("", "fc2")]
