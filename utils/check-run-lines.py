#!/usr/bin/env python3
"""Fails on lit tests that would silently check nothing.

A `.mlir` test must have a `// RUN:` line (a RUN line without its colon is
ignored by lit), and a test with CHECK lines must pipe into FileCheck.
"""

import pathlib
import re
import sys

RUN = re.compile(r"//\s*RUN:")
RUN_WITHOUT_COLON = re.compile(r"//\s*RUN\b(?!:)")
CHECK = re.compile(r"//\s*[A-Z0-9_-]*CHECK[A-Z-]*:")


def problems(path: pathlib.Path):
    text = path.read_text()
    if RUN_WITHOUT_COLON.search(text):
        yield "has a RUN line without ':' (lit ignores it)"
    run_lines = [line for line in text.splitlines() if RUN.search(line)]
    if not run_lines:
        yield "has no '// RUN:' line"
        return
    if CHECK.search(text) and not any("FileCheck" in l for l in run_lines):
        yield "has CHECK lines but no RUN line pipes into FileCheck"
    if "expected-error" in text and not any(
        "-verify-diagnostics" in l for l in run_lines
    ):
        yield "expects diagnostics but never runs -verify-diagnostics"


def main(root: str) -> int:
    bad = 0
    base = pathlib.Path(root)
    files = [
        p for p in sorted(base.rglob("*.mlir"))
        if "Inputs" not in p.relative_to(base).parts
    ]
    for path in files:
        for problem in problems(path):
            print(f"{path}: {problem}")
            bad += 1
    if not files:
        print(f"no .mlir tests found under {root}")
        return 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
