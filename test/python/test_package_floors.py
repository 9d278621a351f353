"""The lamina package's floors (docs/architecture.md, `python/`): every
import of a lamina module, at the top of a file or inside a function, goes
to the importer's own floor or one below it; no function-level import
crosses from one package to another (such imports hide cycles); no module
is shadowed by a function of the same name. Read from the sources with
`ast`, independently of what importing them does."""

import ast
import pathlib
import tokenize

import pytest

import lamina

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "python" / "lamina"

# Dotted module prefix -> floor, as docs/architecture.md lists them.
FLOORS = {
    "lamina._lamina": 1, "lamina.errors": 1, "lamina.tools": 1,
    "lamina.collectives": 1,
    "lamina.lns": 2, "lamina.lns_numpy": 2, "lamina.philox": 2,
    "lamina.op": 2,
    "lamina.importer": 3,
    "lamina.schedule": 4,
    "lamina.runtime": 5,
    "lamina.slapo": 6,
    "lamina": 7,
}


def floor(module):
    best = max((p for p in FLOORS if module == p or
                module.startswith(p + ".")), key=len)
    return FLOORS[best]


def module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path):
    """(line, target module, at top level) of each lamina import in
    `path`."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    tree = ast.parse(path.read_text())
    top = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module
                                          else []))
            else:
                module = node.module or ""
            targets = ([module] if node.module else
                       [f"{module}.{alias.name}" for alias in node.names])
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            continue
        for target in targets:
            if target == "lamina" or target.startswith("lamina."):
                yield node.lineno, target, id(node) in top


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_the_floors_list_every_module():
    assert len(SOURCES) > 50
    for path in SOURCES:
        floor(module_name(path))  # every module falls under a listed prefix


@pytest.mark.parametrize("path", SOURCES,
                         ids=[str(p.relative_to(PACKAGE)) for p in SOURCES])
def test_imports_go_down_or_sideways(path):
    here = module_name(path)
    for line, target, at_top in imported_modules(path):
        where = f"{path.relative_to(PACKAGE)}:{line} imports {target}"
        assert floor(target) <= floor(here), where
        if not at_top:
            same_package = target.rsplit(".", 1)[0] == here.rsplit(".", 1)[0]
            assert same_package, f"{where} inside a function"


def test_no_module_is_shadowed_by_a_function():
    for path in PACKAGE.iterdir():
        name = path.stem
        if name.startswith("_") or not (path.suffix == ".py" or
                                        (path / "__init__.py").exists()):
            continue
        value = getattr(lamina, name, None)
        assert value is None or type(value).__name__ == "module", name


def test_the_runtime_modules_keep_their_public_names():
    import lamina.aot
    import lamina.rng
    import lamina.training
    assert lamina.training is lamina.runtime.training
    assert lamina.rng.manual_seed is lamina.manual_seed
    assert lamina.aot is lamina.runtime.aot


def test_autograd_over_compiled_programs_names_no_number_format():
    """runtime/training.py handles every parameter's number format through
    runtime/formats.py (registration, names, gradient accumulation): none
    of its identifiers names LNS, the format formats.py plugs in."""
    path = PACKAGE / "runtime" / "training.py"
    with tokenize.open(path) as source:
        names = [token.string for token in
                 tokenize.generate_tokens(source.readline)
                 if token.type == tokenize.NAME]
    assert "formats" in names
    assert [n for n in names if "lns" in n.lower()] == []
