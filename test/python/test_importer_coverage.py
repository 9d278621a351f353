"""docs/importer-coverage.md is what utils/gen-importer-coverage.py
generates from the importer's converter tables now."""

import pathlib
import runpy

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_committed_coverage_table_is_up_to_date():
    render = runpy.run_path(
        str(ROOT / "utils" / "gen-importer-coverage.py"))["render"]
    committed = (ROOT / "docs" / "importer-coverage.md").read_text()
    assert committed == render(), (
        "docs/importer-coverage.md is stale: run "
        "utils/gen-importer-coverage.py")
