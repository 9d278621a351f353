"""What crosses the Python / C++ boundary: parsed modules (`_lamina.Module`)
with typed accessors, never IR text read back by regular expressions; and
the work one new training shape costs: one trace of the model, one parse,
the two compiles of its forward / backward pair and nothing else (counted
by `_lamina.statistics()` and by wrapping the importer)."""

import ast
import pathlib

import pytest
import torch
from torch import nn

import lamina
from lamina import _lamina, schedule
from lamina.runtime import build as runtime_build

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "python" / "lamina"

# Regular expressions over what users write (module paths, Slapo's
# resharding schemes and patterns), never over IR.
REGEX_USERS = {"schedule.py", "slapo/schedule.py", "slapo/primitives.py",
               "slapo/resharding.py", "slapo/pattern.py"}


def names_used(path):
    tree = ast.parse(path.read_text())
    imports = {alias.name for node in ast.walk(tree)
               if isinstance(node, ast.Import) for alias in node.names}
    attributes = {node.attr for node in ast.walk(tree)
                  if isinstance(node, ast.Attribute)}
    return imports, attributes


def test_no_ir_text_is_read_back_with_regular_expressions():
    sources = sorted(PACKAGE.rglob("*.py"))
    assert len(sources) > 50
    for path in sources:
        relative = path.relative_to(PACKAGE).as_posix()
        imports, attributes = names_used(path)
        if relative not in REGEX_USERS:
            assert "re" not in imports, f"{relative} imports re"
        assert "transform_ir" not in attributes, \
            f"{relative} round-trips IR text through transform_ir"


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc_in = nn.Linear(16, 32)
        self.act = nn.GELU(approximate="tanh")
        self.fc_out = nn.Linear(32, 16)

    def forward(self, x):
        return self.fc_out(self.act(self.fc_in(x)))


class Counted:
    """Counts traces of the model (the importer's import_model) and the
    extension's parses and compiles while active."""

    def __init__(self, monkeypatch):
        self.traces = 0
        for owner in (schedule, runtime_build):
            monkeypatch.setattr(owner, "import_model",
                                self._counting(owner.import_model))

    def _counting(self, import_model):
        def counted(*args, **kwargs):
            self.traces += 1
            return import_model(*args, **kwargs)
        return counted

    def __enter__(self):
        self.before = _lamina.statistics()
        return self

    def __exit__(self, *exc):
        after = _lamina.statistics()
        self.parses = after["parses"] - self.before["parses"]
        self.compiles = after["compiles"] - self.before["compiles"]


def test_a_new_training_shape_costs_one_trace_one_parse_two_compiles(
        monkeypatch):
    torch.manual_seed(0)
    model = Mlp().train()
    compiled = lamina.build(lamina.create_schedule(model), (torch.randn(2, 16),))
    counter = Counted(monkeypatch)
    x = torch.randn(3, 5, 16)
    with counter:
        compiled(x).square().sum().backward()
    assert (counter.traces, counter.parses, counter.compiles) == (1, 1, 2)
    # The inference program compiles when a call first needs it, without
    # tracing or parsing again.
    with Counted(monkeypatch) as again, torch.no_grad():
        compiled(x)
    assert (again.traces, again.parses, again.compiles) == (0, 0, 1)


def test_modules_carry_what_python_reads_of_them():
    source = """
    module attributes {lamina.world_size = 2 : i64} {
      func.func @f(%x: tensor<4x8xf32>,
                   %w: tensor<16x8xf32> {lamina.layout = #lamina.layout<S(0)>},
                   %c: tensor<4x!lns.num<f = 10>>,
                   %d: tensor<4x!lns.num<b = 1.5>>) -> tensor<4x16xf32> {
        %y = lamina.matmul "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
        return %y : tensor<4x16xf32>
      }
    }
    """
    module = _lamina.Module(source)
    assert module.world_size == 2
    assert module.argument_lns_bases("f") == [None, None, ("f", 10),
                                              ("b", 1.5)]
    assert module.argument_shards("f") == [(None, 1), (0, 1), (None, 1),
                                           (None, 1)]
    assert module.result_types("f") == ["tensor<4x16xf32>"]
    with pytest.raises(ValueError, match="no function @g"):
        module.result_types("g")
    with pytest.raises(ValueError, match="no lamina.training entry for @f"):
        module.training_entry("f")


def test_the_training_entry_is_read_from_the_generated_pair():
    source = """
    func.func @f(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>) -> tensor<4x16xf32> {
      %y = lamina.matmul "fc" %x, %w : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
      return %y : tensor<4x16xf32>
    }
    """
    module = _lamina.Module(source)
    pair = module.transform(pipeline="lamina-generate-backward{function=f}")
    entry = pair.training_entry("f")
    assert (entry["forward"], entry["backward"], entry["gradients"]) == (
        "f_forward", "f_backward", [0, 1])
    # The forward returns y, then the values it saves.
    assert len(pair.result_types("f_forward")) == 1 + entry["saved"]
    assert pair.result_types("f_backward") == ["tensor<4x8xf32>",
                                               "tensor<16x8xf32>"]
    assert "f_forward" not in str(module)  # a transform leaves its source
