"""Running a script's named checks on MPI ranks (mpirun.mpich): each check
of the script prints "rank R: NAME ok" when it passes on rank R."""

import subprocess
import sys


def assert_checks_pass_on_ranks(script, ranks, checks):
    """Runs `checks` of `script` on `ranks` ranks and asserts every rank
    reported every one."""
    completed = subprocess.run(
        ["mpirun.mpich", "-np", str(ranks), sys.executable, str(script),
         *checks],
        capture_output=True, text=True, timeout=900)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    for rank in range(ranks):
        for check in checks:
            assert f"rank {rank}: {check} ok" in completed.stdout, output
