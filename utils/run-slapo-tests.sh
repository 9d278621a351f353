#!/usr/bin/env bash
# Runs Slapo's own tests against lamina.slapo, one line per case.
#   utils/run-slapo-tests.sh SLAPO_CHECKOUT [RANKS] [PYTEST ARGS...]
# SLAPO_CHECKOUT is a checkout of awslabs/slapo (nothing is fetched here).
# RANKS (default 1) processes run the tests under mpirun.mpich, as Slapo's
# CI runs them under torchrun; utils/slapo-tests/lamina_slapo_plugin.py maps
# `import slapo` to lamina.slapo, CUDA to the CPU and NCCL to gloo, and
# skips cases whose packages (transformers, torchvision, ...) are missing.
# Slapo's files are not changed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
slapo=$(realpath "$1")
ranks=${2:-1}
shift $(( $# >= 2 ? 2 : 1 ))
build=${LAMINA_BUILD_DIR:-$root/build}
export PYTHONPATH="$root/utils/slapo-tests:$build/python${PYTHONPATH:+:$PYTHONPATH}"
# The tests compare programs they compile; keep the user's cache apart.
export LAMINA_CACHE_DIR=${LAMINA_CACHE_DIR:-$(mktemp -d)}
cd "$slapo"
command=(/usr/bin/python3 -m pytest -p lamina_slapo_plugin -p no:cacheprovider
         --continue-on-collection-errors -v -rs --tb=line "$@" tests)
if [[ $ranks -gt 1 ]]; then
  # Every rank runs every case in the same order (Slapo's conftest sorts
  # them); rank 0 prints.
  exec mpirun.mpich -np "$ranks" bash -c \
    '[[ ${PMI_RANK:-0} == 0 ]] && exec "$@" || exec "$@" >/dev/null 2>&1' \
    _ "${command[@]}"
fi
exec "${command[@]}"
