#!/usr/bin/env bash
# The main job: compile the example GPT-2 block with lamina-cpu-pipeline, run
# it, check it against eager PyTorch and report its time per call.
set -euo pipefail
export LAMINA_BUILD_DIR=${1:-build}
exec /usr/bin/python3 examples/run_gpt2_block.py
