import os
import pathlib
import sys

# The lamina package is imported from the build tree, next to its extension.
_ROOT = pathlib.Path(__file__).resolve().parents[2]
_BUILD = pathlib.Path(os.environ.get("LAMINA_BUILD_DIR", _ROOT / "build"))
sys.path.insert(0, str(_BUILD / "python"))
# So do the Python processes the tests start (MPI ranks, examples): the
# build under test, never the one a site directory's lamina.pth names.
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(_BUILD / "python")] +
    [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
# Every test compiles what it checks (and leaves the user's compile cache
# alone); test_compile_cache.py turns the cache on in directories of its own.
os.environ["LAMINA_CACHE"] = "0"
# Models as users write them (gpt_models.py) live with the examples.
sys.path.insert(0, str(_ROOT / "examples"))


def pytest_configure(config):
    # check-lamina-python runs the suite in two passes: the tests marked
    # `ranks` (each launches MPI ranks, which busy-wait on the cores) alone,
    # one after the other; the rest on every core (pytest-xdist).
    config.addinivalue_line(
        "markers", "ranks: launches MPI ranks; run in the serial pass")
