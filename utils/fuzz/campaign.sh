#!/usr/bin/env bash
# A fuzzing campaign (bench/results/fuzz.md), as many fuzzers at a time as
# there are cores:
#   utils/fuzz/campaign.sh BUILD_DIR SECONDS [NAME...]
# Each lamina-NAME-fuzzer runs SECONDS in libFuzzer's fork mode, going on
# after crashes, from the seeds (utils/fuzz/make-seed-corpus.py) and the
# committed corpus (test/fuzz/corpus.tar.xz); its corpus, crashes and log
# land in BUILD_DIR/campaign/NAME. Then `merge` minimises each corpus, with
# the committed one, and packs them all into test/fuzz/corpus.tar.xz:
#   utils/fuzz/campaign.sh BUILD_DIR merge [NAME...]
set -euo pipefail
cd "$(dirname "$0")/../.."

build_dir=$(realpath "$1")
seconds=$2
shift 2
names=("$@")
source utils/fuzz/common.sh
if [[ ${#names[@]} -eq 0 ]]; then
  names=("${all_fuzzers[@]}")
fi

committed=$build_dir/campaign/committed
rm -rf "$committed"
mkdir -p "$committed"
[[ -f test/fuzz/corpus.tar.xz ]] && tar xJf test/fuzz/corpus.tar.xz -C "$committed"

if [[ $seconds == merge ]]; then
  merged=$build_dir/campaign/merged
  rm -rf "$merged"
  for name in "${names[@]}"; do
    mkdir -p "$merged/$name" "$committed/$name"
    "$build_dir/bin/lamina-$name-fuzzer" -merge=1 -timeout=30 \
      -rss_limit_mb=4096 -max_len=16384 "$merged/$name" "$committed/$name" \
      "$build_dir/campaign/$name/corpus" >"$build_dir/campaign/$name/merge.log" 2>&1
    echo "$name: $(ls "$merged/$name" | wc -l) inputs," \
         "$(grep -o 'cov: [0-9]* ft: [0-9]*' "$build_dir/campaign/$name/merge.log" | tail -1)"
  done
  # Reproducible: sorted, no owners or times.
  tar cJf test/fuzz/corpus.tar.xz --sort=name --mtime=@0 --owner=0 \
    --group=0 --numeric-owner -C "$merged" .
  exit 0
fi

[[ -d $build_dir/seeds ]] || utils/fuzz/make-seed-corpus.py "$build_dir/seeds"

campaign_one() {
  local name=$1 build_dir=$2 seconds=$3
  local work=$build_dir/campaign/$name
  mkdir -p "$work/corpus" "$work/crashes" "$build_dir/campaign/committed/$name"
  local options=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1
                 -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096
                 -max_len=16384 -artifact_prefix="$work/crashes/")
  options+=($(dictionary_option "$name"))
  "$build_dir/bin/lamina-$name-fuzzer" "${options[@]}" "$work/corpus" \
    "$build_dir/seeds/$name" "$build_dir/campaign/committed/$name" \
    >"$work/log" 2>&1 || true
  echo "$name: $(grep -o 'cov: [0-9]* ft: [0-9]*' "$work/log" | tail -1)," \
       "$(ls "$work/crashes" | wc -l) crash/timeout/oom inputs"
}
export -f campaign_one dictionary_option

printf '%s\n' "${names[@]}" |
  xargs -P "$(nproc)" -I{} bash -c 'campaign_one "$@"' _ {} "$build_dir" "$seconds"
