#!/usr/bin/env bash
# Installs, from Debian's packages, whatever Lamina needs that is missing.
# Idempotent and quiet when everything is already there.
set -euo pipefail

packages=(
  # compiler toolchain and MLIR 22
  clang-22 lld llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libomp-22-dev cmake ninja-build ccache
  # libFuzzer, ASan and UBSan runtimes for the fuzzing build
  libclang-rt-22-dev
  # Python side: tests, reference numerics, bindings
  python3-dev python3-numpy python3-pytest python3-pytest-xdist python3-torch pybind11-dev
  # MPI for tensor parallelism (MPICH: its ABI is what upstream's lowering emits)
  mpich libmpich-dev
  # fast BLAS for the benchmark baselines
  libopenblas0-pthread
)

missing=()
for pkg in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

echo "installing: ${missing[*]}"
sudo_cmd=()
[[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
