"""The compile cache (docs/python.md): a program compiled once is loaded
from disk by later builds and processes, computing the same; another
pipeline option is another entry; a damaged entry is reported as a
CompileCacheWarning, removed and compiled again; processes storing the same
entry at once leave a whole one; LAMINA_CACHE=0 turns it off."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import lamina

LAYER = """
func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>,
                %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = lamina.linear_act "fc" %x, %w bias %b activation gelu_tanh
      : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>)
      -> tensor<4x16xf32>
  return %0 : tensor<4x16xf32>
}
"""
PIPELINE = "lamina-cpu-pipeline"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    directory = tmp_path / "cache"
    monkeypatch.setenv("LAMINA_CACHE", "1")
    monkeypatch.setenv("LAMINA_CACHE_DIR", str(directory))
    return directory


def entries(directory):
    return sorted(directory.glob("*.lamina")) if directory.exists() else []


def run(program):
    generator = np.random.default_rng(0)
    arrays = [generator.standard_normal(shape).astype(np.float32)
              for shape in ((4, 8), (16, 8), (16,))]
    return program.run(program.prepare(arrays))[0]


def compile_layer(pipeline=PIPELINE):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        program = lamina.runtime.progress.compiled(
            lamina.Program(LAYER, entry="main", pipeline=pipeline))
    return program, [w for w in caught
                     if issubclass(w.category, lamina.CompileCacheWarning)]


def test_a_second_compile_loads_the_first_and_computes_the_same(cache):
    cold, cold_warnings = compile_layer()
    assert cold.cache_status == "miss" and not cold_warnings
    assert len(entries(cache)) == 1
    warm, warm_warnings = compile_layer()
    assert warm.cache_status == "hit" and not warm_warnings
    np.testing.assert_array_equal(run(warm), run(cold))


def test_another_pipeline_option_is_another_entry(cache):
    compile_layer()
    other, _ = compile_layer(
        "lamina-cpu-pipeline{outline-loop-nests=false}")
    assert other.cache_status == "miss"
    assert len(entries(cache)) == 2


@pytest.mark.parametrize("damage", ["truncated", "flipped", "foreign"])
def test_a_damaged_entry_is_reported_and_compiled_again(cache, damage):
    reference = run(compile_layer()[0])
    (entry,) = entries(cache)
    data = bytearray(entry.read_bytes())
    if damage == "truncated":
        data = data[:len(data) // 3]
    elif damage == "flipped":
        data[-64] ^= 0x10
    else:
        data = bytearray(b"not a cache entry\n")
    entry.write_bytes(bytes(data))
    program, caught = compile_layer()
    assert program.cache_status == "miss"
    assert len(caught) == 1 and "is damaged" in str(caught[0].message)
    np.testing.assert_array_equal(run(program), reference)
    # Written again, whole: the next compile loads it.
    again, caught = compile_layer()
    assert again.cache_status == "hit" and not caught


def test_off_stores_nothing(cache, monkeypatch):
    monkeypatch.setenv("LAMINA_CACHE", "0")
    program, _ = compile_layer()
    assert program.cache_status == "off" and not entries(cache)


def test_an_unwritable_directory_is_a_warning_not_an_error(tmp_path,
                                                           monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the directory would be")
    monkeypatch.setenv("LAMINA_CACHE", "1")
    monkeypatch.setenv("LAMINA_CACHE_DIR", str(blocker / "cache"))
    program, caught = compile_layer()
    assert len(caught) == 1 and "could not be stored" in str(
        caught[0].message)
    assert run(program).shape == (4, 16)


def test_the_least_recently_used_entries_go_past_the_limit(cache,
                                                           monkeypatch):
    monkeypatch.setenv("LAMINA_CACHE_MAX_MB", "0")
    program, _ = compile_layer()
    assert program.cache_status == "miss" and not entries(cache)


RACER = """
import sys, warnings
import numpy as np
import lamina
warnings.simplefilter("error", lamina.CompileCacheWarning)
program = lamina.runtime.progress.compiled(
    lamina.Program(sys.argv[1], entry="main", pipeline="lamina-cpu-pipeline"))
x = np.ones((4, 8), np.float32)
w = np.ones((16, 8), np.float32)
b = np.zeros(16, np.float32)
print(program.cache_status, float(program.run(program.prepare([x, w, b]))[0].sum()))
"""


def test_processes_storing_one_entry_at_once_leave_a_whole_one(cache):
    racers = [subprocess.Popen([sys.executable, "-c", RACER, LAYER],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
              for _ in range(3)]
    outputs = [racer.communicate(timeout=300) for racer in racers]
    for racer, (out, err) in zip(racers, outputs):
        assert racer.returncode == 0, err
    sums = {out.split()[1] for out, _ in outputs}
    assert len(sums) == 1
    assert len(entries(cache)) == 1
    assert not list(cache.glob("*.tmp"))
    after = subprocess.run([sys.executable, "-c", RACER, LAYER],
                           capture_output=True, text=True, check=True)
    assert after.stdout.split() == ["hit", sums.pop()]


def test_a_model_built_again_in_a_new_process_loads_its_programs(cache):
    """A training pair (forward and backward programs) stored by one
    process and loaded by the next: the progress report says so, and the
    output and gradient are the same."""
    script = """
import torch, lamina
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 4))
x = torch.randn(5, 8, requires_grad=True)
built = lamina.build(lamina.create_schedule(model), progress=True)
y = built(x)
y.sum().backward()
print(y.detach().sum().item(), x.grad.sum().item())
"""
    first = subprocess.run([sys.executable, "-c", script],
                           capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", script],
                            capture_output=True, text=True, check=True)
    assert "from the compile cache" not in first.stderr
    assert "(2 of 2 programs from the compile cache)" in second.stderr
    assert first.stdout == second.stdout
    assert len(entries(cache)) == 2


RANKS_SCRIPT = """
import torch, lamina
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16)).eval()
x = torch.randn(4, 16)
sch = lamina.create_schedule(model, world_size=lamina.world_size())
sch["0"].shard("weight", 0)
sch["0"].shard("bias", 0)
sch["2"].shard("weight", 1)
sch["2"].sync("fwd_post", "all_reduce")
with torch.no_grad():
    built = lamina.build(sch, (x,), progress=True)
    y = built(x)
    torch.testing.assert_close(y, model(x))
# mpirun may interleave the ranks' stdout mid-line: each rank writes a file
import os, pathlib
out = pathlib.Path(os.environ["LAMINA_TEST_SUMS"]) / f"rank{lamina.rank()}"
out.write_text(f"{y.sum().item():.5f}")
"""


@pytest.mark.ranks
def test_ranks_share_one_entry_of_a_sharded_program(cache, tmp_path):
    """Two MPI ranks compile the same partitioned program (with packed
    weights and MPI calls) and store it at once; a second run of both
    loads it and computes the same."""
    def run_ranks(name):
        sums = tmp_path / name
        sums.mkdir()
        run = subprocess.run(
            ["mpirun.mpich", "-np", "2", sys.executable, "-c", RANKS_SCRIPT],
            capture_output=True, text=True, timeout=600, check=True,
            env={**os.environ, "LAMINA_TEST_SUMS": str(sums)})
        run.sums = sorted(f.read_text() for f in sums.iterdir())
        return run

    first, second = run_ranks("first"), run_ranks("second")
    assert "from the compile cache" not in first.stderr
    assert second.stderr.count("(1 of 1 programs from the compile cache)") \
        == 2, second.stderr
    assert "Warning" not in second.stderr
    assert len(first.sums) == 2
    assert first.sums == second.sums
    assert len(entries(cache)) == 1
