"""A rank that dies while the others wait for it in a collective
(rank_fault.py under mpirun.mpich): every other rank exits within 30 s,
and the rank that died is named, by itself and by every rank that waited
for it. The names come from the ranks' notaries (lib/Runtime/MpiNotary.h),
processes outside the process group that MPICH's launcher kills when a
rank dies, so they are said even when the launcher is quicker."""

import pathlib
import re
import subprocess
import sys
import time

import pytest

# Each test launches MPI ranks: run in the serial pass (test/CMakeLists.txt).
pytestmark = pytest.mark.ranks

SCRIPT = pathlib.Path(__file__).with_name("rank_fault.py")


def run_until_a_rank_dies(how, ranks, mode=(), waited_in="MPI_Allreduce"):
    completed = subprocess.run(
        ["mpirun.mpich", "-np", str(ranks), sys.executable, str(SCRIPT), how,
         *mode], capture_output=True, text=True, timeout=120)
    ended = time.time()
    output = completed.stdout + completed.stderr
    assert completed.returncode != 0, output
    for rank in range(ranks):
        assert f"rank {rank}: ready" in completed.stdout, output
        assert f"rank {rank}: finished" not in completed.stdout, output
    dead = ranks - 1
    died = float(re.search(rf"rank {dead}: dies at ([\d.]+)",
                           completed.stdout).group(1))
    assert ended - died < 30, f"the others took {ended - died:.1f} s\n{output}"
    pid = re.search(rf"rank {dead}: ready, process (\d+)",
                    completed.stdout).group(1)
    # Every survivor is told, and says, which rank it waited for.
    for rank in range(dead):
        assert (f"lamina MPI runtime: rank {rank} of {ranks}: rank {dead} "
                f"(process {pid} on ") in completed.stderr, output
    reports = re.findall(r"rank \d+ of \d+: (rank \d+ \(process \d+) on .*\) "
                         rf"died while this rank waited in {waited_in}",
                         completed.stderr)
    assert reports == [f"rank {dead} (process {pid}"] * dead, output
    return completed.stderr, dead, pid, output


@pytest.mark.parametrize("ranks", [2, 4])
@pytest.mark.parametrize("how,signal", [("abort", "SIGABRT"),
                                        ("segfault", "SIGSEGV")])
def test_a_dying_rank_names_itself(how, signal, ranks):
    stderr, dead, _, output = run_until_a_rank_dies(how, ranks)
    assert (f"lamina MPI runtime: rank {dead} of {ranks} dies of {signal}"
            in stderr), output


@pytest.mark.parametrize("ranks", [2, 4])
def test_a_killed_rank_is_named(ranks):
    stderr, dead, pid, output = run_until_a_rank_dies("kill", ranks)
    # The notary reads how its rank ended while the launcher has not reaped
    # it yet; after that, only that it ended.
    assert re.search(rf"lamina MPI runtime: rank {dead} of {ranks} \(process "
                     rf"{pid} on .*\) (was killed by SIGKILL|ended without "
                     r"finishing)\n", stderr), output


def test_a_rank_exiting_with_a_failure_status_is_named():
    stderr, dead, pid, output = run_until_a_rank_dies("exit", 2)
    assert re.search(rf"lamina MPI runtime: rank {dead} of 2 \(process {pid} "
                     r"on .*\) exited with status 3\n", stderr), output


def test_a_rank_dying_before_a_gradient_reduction_is_named():
    # A device grid's data replicas wait for it on their data axis.
    stderr, dead, _, output = run_until_a_rank_dies(
        "kill", 2, ["data-parallel"], waited_in="MPI_Wait")
