#!/usr/bin/env bash
# ctest: every script of the project answers --help with its usage and exit 0,
# at once, before it starts, builds or installs anything (a script that ran
# instead would take longer, write to stderr, or fail on "--help" as an argument).
#   tests/scripts_help.sh SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/../fixtures/help.sh" "$@"
src=${1:?source directory}
cd "$src"
mapfile -t scripts < <(find . \( -path './build*' -o -path '*/node_modules' -o -path ./.git \) -prune \
  -o -type f \( -name '*.sh' -o -path ./.ci/run \) -perm -u+x -print | sort)
((${#scripts[@]} >= 10)) || { echo "FAIL: found only ${#scripts[@]} scripts under $src" >&2; exit 1; }
err_file=$(mktemp)
trap 'rm -f "$err_file"' EXIT
failed=0
for script in "${scripts[@]}"; do
  out=$(timeout 10 "$script" --help 2>"$err_file")
  rc=$?
  err=$(cat "$err_file")
  if [[ $rc -ne 0 || -z "$out" || -n "$err" ]]; then
    echo "FAIL: $script --help: exit $rc, $(printf '%s' "$out" | wc -l) line(s) of usage, stderr: ${err:0:200}" >&2
    failed=1
  else
    echo "ok: $script --help ($(printf '%s\n' "$out" | wc -l) lines)"
  fi
done
exit $failed
