"""What the benchmarks that run on MPI ranks share: the GPT-2 MLP they
train, as source for their step scripts, and how a script runs on ranks
each pinned to its own core (or on one process pinned to core 0)."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("LAMINA_BUILD_DIR", ROOT / "build"))

# GPT-2's MLP with its residual, as the step scripts define it.
GPT2_MLP = r"""
class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(%(hidden)d, %(inter)d)
        self.act = nn.GELU(approximate="tanh")
        self.fc2 = nn.Linear(%(inter)d, %(hidden)d)
    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(x)))
"""


def run_pinned(script, args, ranks, env=None):
    """The last line of what `script` (Python source) prints on `ranks`
    single-threaded ranks (`mpirun.mpich -np ranks -bind-to core`), or on
    one process pinned to core 0, split into words."""
    environment = dict(os.environ, OMP_NUM_THREADS="1",
                       PYTHONPATH=str(BUILD / "python"), **(env or {}))
    command = [sys.executable, "-c", script, *map(str, args)]
    if ranks > 1:
        command = ["mpirun.mpich", "-np", str(ranks), "-bind-to", "core",
                   *command]
    else:
        command = ["taskset", "-c", "0", *command]
    out = subprocess.run(command, env=environment, check=True,
                         capture_output=True, text=True).stdout
    return out.strip().splitlines()[-1].split()
