#!/usr/bin/env bash
# Runs Lamina's fuzzers, as many at a time as there are cores.
#   utils/fuzz/run-fuzzers.sh BUILD_DIR SECONDS [NAME...]
# Each lamina-NAME-fuzzer (all of them by default) runs SECONDS on the
# committed corpus (test/fuzz/corpus.tar.xz, unpacked into
# BUILD_DIR/fuzz/committed/NAME) and the inputs that once crashed it,
# test/fuzz/regressions/NAME; what it adds goes to
# BUILD_DIR/fuzz/NAME/corpus, its log and any crash to BUILD_DIR/fuzz/NAME.
# Fails, naming the fuzzers, if any finds a crash, a hang or a leak.
set -euo pipefail
cd "$(dirname "$0")/../.."

build_dir=$(realpath "$1")
# Each input is compiled, never loaded from (or stored in) the compile cache.
export LAMINA_CACHE=0
seconds=$2
shift 2
names=("$@")
source utils/fuzz/common.sh
if [[ ${#names[@]} -eq 0 ]]; then
  names=("${all_fuzzers[@]}")
fi


committed=$build_dir/fuzz/committed
if [[ ! -d $committed || test/fuzz/corpus.tar.xz -nt $committed ]]; then
  rm -rf "$committed"
  mkdir -p "$committed"
  tar xJf test/fuzz/corpus.tar.xz -C "$committed"
fi

run_one() {
  local name=$1 build_dir=$2 seconds=$3
  local work=$build_dir/fuzz/$name
  mkdir -p "$work/corpus" "$build_dir/fuzz/committed/$name"
  local options=(-max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096
                 -max_len=16384 -print_final_stats=1
                 -artifact_prefix="$work/")
  options+=($(dictionary_option "$name"))
  # Inputs that once crashed it run first, with the corpus.
  local corpora=("$build_dir/fuzz/committed/$name")
  [[ -d test/fuzz/regressions/$name ]] && corpora+=(test/fuzz/regressions/"$name")
  if "$build_dir/bin/lamina-$name-fuzzer" "${options[@]}" "$work/corpus" \
      "${corpora[@]}" >"$work/log" 2>&1; then
    echo "$name: ok, $(grep -o 'cov: [0-9]* ft: [0-9]*' "$work/log" | tail -1)"
  else
    echo "$name: FAILED (log: $work/log)"
    # The report and its stack, so that a failure elsewhere can be read
    # from this output alone.
    grep -m1 -A24 -E 'ERROR: |lamina fuzzer: bug' "$work/log" ||
      tail -5 "$work/log"
    return 1
  fi
}
export -f run_one dictionary_option

printf '%s\n' "${names[@]}" |
  xargs -P "$(nproc)" -I{} bash -c 'run_one "$@"' _ {} "$build_dir" "$seconds"
