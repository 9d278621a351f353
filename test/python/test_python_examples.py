"""The Python examples of examples/ run as a user runs them."""

import os
import pathlib
import subprocess
import sys

import pytest

from lamina.tools import build_dir

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def run(command):
    env = dict(os.environ, PYTHONPATH=str(build_dir() / "python"))
    completed = subprocess.run(command, cwd=EXAMPLES, env=env,
                               capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return completed.stdout


def test_schedule_and_run_on_cpu():
    assert "equals eager PyTorch" in run([sys.executable,
                                          "gpt2_mlp_schedule.py"])


@pytest.mark.ranks
def test_tensor_parallel_on_two_ranks():
    out = run(["mpirun.mpich", "-np", "2", sys.executable,
               "gpt2_mlp_tensor_parallel.py"])
    assert "rank 0 of 2" in out and "rank 1 of 2" in out


def test_lns_mlp():
    assert "LNS (f = 16) MLP" in run([sys.executable, "lns_mlp.py"])


def test_train_mlp():
    out = run([sys.executable, "train_mlp.py"])
    assert "step 4: loss" in out
    assert "every step equals eager PyTorch" in out


@pytest.mark.ranks
def test_train_mlp_on_two_ranks():
    out = run(["mpirun.mpich", "-np", "2", sys.executable,
               "train_mlp_tensor_parallel.py"])
    for rank in (0, 1):
        assert f"rank {rank}, step 4: loss" in out
        assert f"rank {rank}: every step equals eager PyTorch" in out


@pytest.mark.ranks
def test_train_on_a_grid_of_four_ranks():
    out = run(["mpirun.mpich", "-np", "4", sys.executable, "train_grid.py"])
    for rank in range(4):
        assert f"rank {rank}: replica {rank // 2} of 2, tensor rank " \
            f"{rank % 2} of 2" in out
        assert f"rank {rank}, step 4: loss" in out
        assert f"rank {rank}: every step equals eager PyTorch on the " \
            "global batch" in out


@pytest.mark.ranks
def test_slapo_schedule_trains_on_two_ranks():
    out = run(["mpirun.mpich", "-np", "2", sys.executable,
               "slapo_gpt_train.py"])
    for rank in (0, 1):
        assert f"rank {rank} of 2: h.0.mlp.0.weight block (64, 32)" in out
        assert f"rank {rank}, step 4: loss" in out
        assert f"rank {rank}: every step equals eager PyTorch" in out


def test_gpt_trains_and_runs():
    out = run([sys.executable, "gpt_train.py"])
    assert "step 4: loss" in out and "every step equals eager PyTorch" in out
    assert "rank 0 of 1: next-token logits (4, 1, 96) equal eager" in out


@pytest.mark.ranks
def test_gpt_runs_megatron_parallel_on_two_ranks():
    out = run(["mpirun.mpich", "-np", "2", sys.executable, "gpt_train.py"])
    for rank in (0, 1):
        assert f"rank {rank} of 2: next-token logits (4, 1, 96) equal " \
            "eager" in out
