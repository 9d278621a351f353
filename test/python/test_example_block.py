"""The README's main job: the example GPT-2 block matches eager PyTorch."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_gpt2_block_matches_eager_pytorch():
    completed = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "run_gpt2_block.py")],
        capture_output=True, text=True)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "0/2048 beyond atol" in completed.stdout
