"""The documentation: generated reference present, hand-written links valid.

`lamina-docs` (a dependency of check-lamina) writes the op and pass reference
into <build>/docs; the pages in docs/ and README.md link to each other and to
files of the source tree.
"""

import os
import pathlib
import re

import pytest

_ROOT = pathlib.Path(__file__).resolve().parents[2]
_BUILD = pathlib.Path(os.environ.get("LAMINA_BUILD_DIR", _ROOT / "build"))
GENERATED = _BUILD / "docs"

# What the hand-written pages refer to by name.
REFERENCED = ["Lamina/LaminaOps.md", "Lns/LnsOps.md",
              "Lamina/LaminaTransformOps.md", "LaminaPasses.md",
              "LnsPasses.md", "LaminaCodegenPasses.md",
              "LaminaConversionPasses.md"]


def _generated():
    if not (GENERATED / "README.md").is_file():
        pytest.fail(f"{GENERATED}/README.md missing: "
                    "cmake --build build --target lamina-docs")
    return {p.relative_to(GENERATED).as_posix(): p.read_text()
            for p in GENERATED.rglob("*.md")}


def test_generated_reference_exists_and_is_indexed():
    docs = _generated()
    for name in REFERENCED:
        assert name in docs, name
        assert docs[name].count("\n### ") > 0, name
    index = docs.pop("README.md")
    for name in docs:
        assert f"]({name})" in index, name


def test_every_pass_is_documented():
    text = "".join(_generated().values())
    flags = set()
    for td in (_ROOT / "dialects").rglob("Passes.td"):
        flags |= set(re.findall(r'Pass<"([a-z0-9-]+)"', td.read_text()))
    assert flags
    missing = sorted(f for f in flags if f"### `-{f}`" not in text)
    assert not missing, missing


def test_every_op_is_documented():
    text = "".join(_generated().values())
    for dialect, td in [("lamina", "Lamina/IR/LaminaOps.td"),
                        ("lns", "Lns/IR/LnsOps.td")]:
        source = (_ROOT / "dialects" / td).read_text()
        names = re.findall(r'^def \w+\s*:\s*\w+Op<"([a-z_]+)"', source,
                           re.MULTILINE)
        assert names, td
        missing = [n for n in names if f"`{dialect}.{n}`" not in text]
        assert not missing, (td, missing)


def _slug(heading):
    """GitHub's anchor of a markdown heading."""
    heading = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return heading.replace(" ", "-")


def _pages():
    return [_ROOT / "README.md"] + sorted((_ROOT / "docs").rglob("*.md"))


def test_relative_links_resolve():
    broken = []
    for page in _pages():
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.relative_to(_ROOT)}: {target}")
                continue
            if anchor and file.suffix == ".md":
                headings = re.findall(r"^#+ (.*)$", file.read_text(),
                                      re.MULTILINE)
                if anchor not in {_slug(h) for h in headings}:
                    broken.append(f"{page.relative_to(_ROOT)}: {target}")
    assert not broken, broken


def test_docs_index_lists_every_page():
    index = (_ROOT / "docs" / "README.md").read_text()
    for page in sorted((_ROOT / "docs").rglob("*.md")):
        name = page.relative_to(_ROOT / "docs").as_posix()
        if name != "README.md":
            assert f"]({name})" in index, name
