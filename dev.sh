#!/usr/bin/env bash
# Lamina's one entry point for people and CI.
#   ./dev.sh run     install what is missing, build, run the example model
#   ./dev.sh check   install what is missing, build, run every test and
#                    each fuzzer for a minute
#   ./dev.sh build   install what is missing and build
#   ./dev.sh fuzz S  build the fuzzers, run each for S seconds
set -euo pipefail
cd "$(dirname "$0")"

build_dir=build

setup() {
  scripts/install-deps.sh
  if [[ ! -f "$build_dir/build.ninja" ]]; then
    cmake --preset dev >/dev/null
  fi
  cmake --build "$build_dir"
  link_python_package
}

# `import lamina` from /usr/bin/python3: a .pth file in its site directory
# naming this checkout's build/python.
link_python_package() {
  local site
  site=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
  mkdir -p "$site"
  echo "$(pwd)/$build_dir/python" > "$site/lamina.pth"
}

# The instrumented second build (docs/fuzzing.md) and a run of every fuzzer
# on the committed corpus.
fuzz() {
  local seconds=$1
  if [[ ! -f build-fuzz/build.ninja ]]; then
    cmake --preset fuzz >/dev/null
  fi
  cmake --build --preset fuzz
  utils/fuzz/run-fuzzers.sh build-fuzz "$seconds"
}

case "${1:-}" in
  build) setup ;;
  run) setup && scripts/run-example.sh "$build_dir" ;;
  check) setup && cmake --build "$build_dir" --target check-lamina && fuzz 60 ;;
  fuzz) scripts/install-deps.sh && fuzz "${2:-60}" ;;
  *)
    sed -n '2,8p' "$0"
    exit 2
    ;;
esac
