#!/usr/bin/env bash
# `make fuzz`: runs every libFuzzer target of BUILD for SECONDS each, JOBS at
# a time, starting from its seeds in fixtures/fuzz/<parser>/:
#   fuzz/run.sh BUILD SECONDS JOBS [target...]
# New interesting inputs go to BUILD/fuzz-corpus/<parser>/ (the checked-in
# seeds stay small). A crash or a failed property stops that target and fails
# the run; its input is saved as BUILD/fuzz-crashes/<parser>-crash-…: add it to
# fixtures/fuzz/<parser>/ and a unit test beside the code, then fix the bug.
set -euo pipefail
source "$(dirname "$0")/../fixtures/help.sh" "$@"
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?build directory}
seconds=${2:-60}
jobs=${3:-2}
shift 3 || true
cd "$here"

if (($#)); then
  targets=("$@")
else
  mapfile -t targets < <(cd "$build" && ls -- *_fuzz 2>/dev/null | sed 's/_fuzz$//')
fi
((${#targets[@]})) || { echo "fuzz: no targets in $build (build with make asan-build)" >&2; exit 1; }

mkdir -p "$build/fuzz-corpus" "$build/fuzz-crashes" "$build/fuzz-logs"
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

run_one() {
  local parser=$1 bin="$build/$1_fuzz" corpus="$build/fuzz-corpus/$1"
  mkdir -p "$corpus"
  local start=$SECONDS
  if "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
      -print_final_stats=1 -artifact_prefix="$build/fuzz-crashes/$parser-" \
      "$corpus" "fixtures/fuzz/$parser" >"$build/fuzz-logs/$parser.log" 2>&1; then
    echo "fuzz: $parser ok ($((SECONDS - start)) s, $(grep -m1 -o 'stat::number_of_executed_units: [0-9]*' "$build/fuzz-logs/$parser.log" | grep -o '[0-9]*$') runs, corpus $(ls "$corpus" | wc -l))"
  else
    echo "fuzz: $parser FAILED, see $build/fuzz-logs/$parser.log:" >&2
    grep -E 'ERROR|property failed|SUMMARY|Test unit written' "$build/fuzz-logs/$parser.log" | head -n 8 >&2
    return 1
  fi
}
export -f run_one
export build seconds

printf '%s\n' "${targets[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ {}
