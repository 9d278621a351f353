"""A rank that dies while the others wait for it in a collective
(rank_fault.py under mpirun.mpich): every other rank exits within 30 s,
and the rank that died is named. A rank that aborts or faults names itself
before it dies (Lamina's MPI runtime reports fatal signals); a rank killed
outright (SIGKILL) is named by the survivors' peer watch when it sees the
death before MPICH's launcher kills the survivors (its clean-up does, even
with -disable-auto-cleanup)."""

import pathlib
import re
import subprocess
import sys
import time

import pytest

SCRIPT = pathlib.Path(__file__).with_name("rank_fault.py")


def run_until_a_rank_dies(how, ranks):
    completed = subprocess.run(
        ["mpirun.mpich", "-np", str(ranks), sys.executable, str(SCRIPT), how],
        capture_output=True, text=True, timeout=120)
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
    return completed.stderr, dead, pid, output


@pytest.mark.parametrize("ranks", [2, 4])
@pytest.mark.parametrize("how,signal", [("abort", "SIGABRT"),
                                        ("segfault", "SIGSEGV")])
def test_a_dying_rank_names_itself(how, signal, ranks):
    stderr, dead, _, output = run_until_a_rank_dies(how, ranks)
    assert (f"lamina MPI runtime: rank {dead} of {ranks} dies of {signal}"
            in stderr), output


@pytest.mark.parametrize("ranks", [2, 4])
def test_a_killed_rank_ends_the_others(ranks):
    stderr, dead, pid, output = run_until_a_rank_dies("kill", ranks)
    # The survivors' peer watch and the launcher's clean-up race: whichever
    # sees the death first ends them. A watch that wins names the rank.
    for report in re.findall(r"rank \d of \d+: (.*) died while this rank "
                             r"waited in MPI_Allreduce", stderr):
        assert report.startswith(f"rank {dead} (process {pid} on "), output
