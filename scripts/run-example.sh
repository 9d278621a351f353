#!/usr/bin/env bash
# The main job: the GPT-2-style example block through Lamina's passes.
set -euo pipefail
build_dir=${1:-build}
example=examples/gpt2_block.mlir
echo "== $example after canonicalize, cse"
"$build_dir/bin/lamina-opt" "$example" --canonicalize --cse
