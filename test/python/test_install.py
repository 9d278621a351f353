"""`cmake --install`: the installed tools and Python package work on their own.

Installs the build into a scratch prefix, then runs the installed lamina-run
and imports the installed package with a clean environment from a directory
outside the source and build trees.
"""

import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

_ROOT = pathlib.Path(__file__).resolve().parents[2]
_BUILD = pathlib.Path(os.environ.get("LAMINA_BUILD_DIR", _ROOT / "build")).resolve()

TOOLS = ["lamina-compile", "lamina-opt", "lamina-run"]
RUNTIME_ARCHIVES = {"libLaminaCudaRuntime.a", "libLaminaMpiRuntime.a"}

# A linear layer with GELU, large enough (M = 256) for the threads=2
# pipeline to run its tiles on OpenMP, which the JIT loads at run time.
PROGRAM = """
func.func @main(%x: tensor<256x32xf32>, %w: tensor<64x32xf32>,
                %b: tensor<64xf32>) -> tensor<256x64xf32> {
  %y = lamina.linear_act "fc" %x, %w bias %b activation relu
      : (tensor<256x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<256x64xf32>
  return %y : tensor<256x64xf32>
}
"""


def _cmake():
    cmake = os.environ.get("LAMINA_CMAKE_COMMAND") or shutil.which("cmake")
    if not cmake:
        pytest.skip("no cmake to install with")
    return cmake


def _clean_env(**extra):
    """The environment without anything pointing into the build tree."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LAMINA_BUILD_DIR", "PYTHONPATH", "LD_LIBRARY_PATH")}
    env.update(extra)
    return env


def _run(args, cwd, env, timeout=120):
    completed = subprocess.run(args, cwd=cwd, env=env, capture_output=True,
                               text=True, timeout=timeout)
    assert completed.returncode == 0, (
        f"{' '.join(map(str, args))} failed ({completed.returncode}):\n"
        f"{completed.stdout}\n{completed.stderr}")
    return completed.stdout


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    prefix = tmp_path_factory.mktemp("prefix")
    _run([_cmake(), "--install", str(_BUILD), "--prefix", str(prefix)],
         cwd=prefix, env=_clean_env())
    return prefix


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Input and reference .npy files in a directory of their own."""
    work = tmp_path_factory.mktemp("work")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((256, 32)).astype(np.float32)
    w = rng.standard_normal((64, 32)).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    reference = np.maximum(x.astype(np.float64) @ w.T.astype(np.float64) + b, 0)
    (work / "program.mlir").write_text(PROGRAM)
    for name, array in [("x", x), ("w", w), ("b", b),
                        ("reference", reference.astype(np.float32))]:
        np.save(work / f"{name}.npy", array)
    return work


def test_installs_tools_runtimes_and_package_only(prefix):
    for tool in TOOLS:
        assert os.access(prefix / "bin" / tool, os.X_OK), tool
    archives = {p.name for p in (prefix / "lib").glob("*.a")}
    # The compiler's static libraries are linked into the tools already.
    assert archives == RUNTIME_ARCHIVES
    package = prefix / "python" / "lamina"
    assert (package / "__init__.py").is_file()
    assert list(package.glob("_lamina*.so"))
    # Subpackages keep their folders; no byte code is installed.
    sources = {p.relative_to(_ROOT / "python" / "lamina")
               for p in (_ROOT / "python" / "lamina").rglob("*.py")}
    installed = {p.relative_to(package) for p in package.rglob("*.py")}
    assert installed == sources
    assert not list(package.rglob("__pycache__"))


def test_installed_binaries_do_not_reach_into_the_build_tree(prefix):
    readelf = shutil.which("readelf") or shutil.which(
        "llvm-readelf", path="/usr/lib/llvm-22/bin")
    if not readelf:
        pytest.skip("no readelf")
    binaries = [prefix / "bin" / t for t in TOOLS]
    binaries += list((prefix / "python" / "lamina").glob("_lamina*.so"))
    for binary in binaries:
        dynamic = _run([readelf, "-d", str(binary)], cwd=prefix,
                       env=_clean_env())
        assert str(_BUILD) not in dynamic, binary
        assert "RUNPATH" in dynamic or "RPATH" in dynamic, binary
        # Every shared library resolves without LD_LIBRARY_PATH.
        libraries = _run(["ldd", str(binary)], cwd=prefix, env=_clean_env())
        assert "not found" not in libraries, f"{binary}:\n{libraries}"


@pytest.mark.parametrize("pipeline", ["lamina-cpu-pipeline",
                                      "lamina-cpu-pipeline{threads=2}"])
def test_installed_lamina_run(prefix, inputs, pipeline, tmp_path):
    if "threads" in pipeline:
        lowered = _run([prefix / "bin" / "lamina-opt", "program.mlir",
                        f"--{pipeline.replace('{', '=').rstrip('}')}"],
                       cwd=inputs, env=_clean_env())
        assert "omp.parallel" in lowered or "__kmpc_fork_call" in lowered
    # lamina-run fails unless the result matches the reference.
    _run([prefix / "bin" / "lamina-run", "program.mlir",
          f"--pipeline={pipeline}", "--input=x.npy", "--input=w.npy",
          "--input=b.npy", "--reference=reference.npy", "--rtol=1e-5",
          "--atol=1e-5", f"--output-dir={tmp_path}"],
         cwd=inputs, env=_clean_env())
    assert (tmp_path / "result0.npy").is_file()


@pytest.mark.ranks
def test_installed_lamina_run_on_mpi_ranks(prefix, tmp_path):
    """The Megatron MLP on two ranks (Lamina's MPI runtime, MPICH) against the
    unsharded program, from copies of the examples."""
    launcher = shutil.which("mpirun.mpich")
    if not launcher:
        pytest.skip("no mpirun.mpich")
    for name in ["gpt2_mlp.mlir", "megatron_mlp.schedule.mlir"]:
        shutil.copy(_ROOT / "examples" / name, tmp_path / name)
    run = [prefix / "bin" / "lamina-run", "gpt2_mlp.mlir", "--entry=mlp",
           "--random-inputs", "--seed=3"]
    _run(run + ["--output-dir=whole"], cwd=tmp_path, env=_clean_env())
    out = _run([launcher, "-np", "2"] + run + [
        "--schedule=megatron_mlp.schedule.mlir", "--output-dir=sharded",
        "--reference=whole/result0.npy", "--rtol=1.3e-6", "--atol=1e-5"],
        cwd=tmp_path, env=_clean_env())
    assert "[rank 1/2] running in an MPI world of 2 ranks" in out


def test_installed_python_package(prefix, inputs):
    script = textwrap.dedent(f"""
        import pathlib, numpy as np, torch, lamina
        prefix = pathlib.Path({str(prefix)!r})
        assert pathlib.Path(lamina.__file__).is_relative_to(prefix), lamina.__file__
        assert pathlib.Path(lamina._lamina.__file__).is_relative_to(prefix)
        assert pathlib.Path(lamina.tools.tool("lamina-run")) == prefix / "bin" / "lamina-run"
        x, w, b = (np.load(f"{{n}}.npy") for n in "xwb")
        program = lamina.Program(pathlib.Path("program.mlir").read_text())
        (y,) = program.run(program.prepare([x, w, b]))
        np.testing.assert_allclose(y, np.load("reference.npy"), rtol=1e-5, atol=1e-5)

        # A torch model through the importer, schedule and build.
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.GELU()).eval()
        t = torch.from_numpy(x[:4])
        sch = lamina.create_schedule(model, example_inputs=(t,))
        torch.testing.assert_close(lamina.build(sch, (t,))(t), model(t))
        print("ok")
        """)
    out = _run([sys.executable, "-c", script], cwd=inputs,
               env=_clean_env(PYTHONPATH=str(prefix / "python")))
    assert out.strip().endswith("ok")
