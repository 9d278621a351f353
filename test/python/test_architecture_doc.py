"""docs/architecture.md against the tree: every library folder under lib/,
every pass flag declared in dialects/, every tool and every module of the
Python package is named on the map, and every path the map names exists."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAP = (ROOT / "docs" / "architecture.md").read_text()
# What the map names in code spans, outside its fenced drawing.
NAMED = set(re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", MAP,
                                                flags=re.S)))


def test_every_lib_folder_is_named():
    folders = sorted({p.parent.relative_to(ROOT).as_posix()
                      for p in (ROOT / "lib").rglob("*.cpp")})
    assert len(folders) > 15
    missing = [f for f in folders if f not in NAMED]
    assert not missing, f"lib/ folders not in docs/architecture.md: {missing}"


def test_every_pass_flag_is_named():
    flags = [flag for td in (ROOT / "dialects").rglob("*.td")
             for flag in re.findall(r'\bPass<"([^"]+)"', td.read_text())]
    assert len(flags) > 25
    missing = [f for f in flags if f not in NAMED]
    assert not missing, f"pass flags not in docs/architecture.md: {missing}"


def test_every_tool_is_named():
    tools = [p.relative_to(ROOT).as_posix()
             for p in (ROOT / "tools").iterdir()
             if p.is_dir() and p.name.startswith("lamina-")]
    missing = [t for t in tools if t not in NAMED]
    assert not missing, f"tools not in docs/architecture.md: {missing}"


def test_every_python_module_is_named():
    package = ROOT / "python" / "lamina"
    modules = [p for p in package.rglob("*.py") if p.name != "__init__.py"]
    assert len(modules) > 50
    missing = [p.relative_to(package).as_posix() for p in modules
               if p.name not in NAMED and p.stem not in NAMED
               and p.relative_to(ROOT).as_posix() not in NAMED]
    assert not missing, f"modules not in docs/architecture.md: {missing}"


def test_every_path_on_the_map_exists():
    paths = [n for n in NAMED
             if re.fullmatch(r"(lib|tools|python|dialects|include)/[\w/.-]+",
                             n)]
    assert len(paths) > 20
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"docs/architecture.md names what is gone: {missing}"
