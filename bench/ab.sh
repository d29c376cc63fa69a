#!/usr/bin/env bash
# bench/ab.sh: two gateway binaries under the same load at the same time.
#
#   bench/ab.sh [--help] BINARY_A BINARY_B
#   env: AB_WORKLOAD (reserve | ratelimit-take | credit-hold-commit | quota-consume;
#        default reserve), AB_TRIALS (5), AB_SECONDS per trial (10), AB_CLIENTS per
#        gateway (16), BUILD (build: the load generator, paintlockctl, the cluster)
#
# Why: `make bench` alternates phases, and on a shared virtual machine two
# phases of the same binary a minute apart moved 55-62 µs a reserve and
# 2,589-3,454 pgbench tps (bench/reports/2026-12-07-0310-same-time-ab.md). A
# change worth a few percent drowns in that. Here both gateways run at once,
# each with its own load generator and as many clients, on one database: what
# the machine does to one it does to the other, so B/A is measured within a
# trial, not across minutes. Each trial prints both gateways' CPU µs a request
# (utime + stime from /proc over the trial) and tps, and B/A for each; the
# last line gives the median B/A over the trials.
#
# What it cannot say: how a binary does with the cores to itself (that is
# `make bench`, against pgbench). Both gateways' requests share PostgreSQL, so
# a change that only moves load onto the database shows as slower tps on both.
set -euo pipefail
shopt -s inherit_errexit

source "$(dirname "$0")/../fixtures/help.sh" "$@"
if (($# != 2)); then usage >&2; exit 2; fi
here=$(cd "$(dirname "$0")/.." && pwd)
a=$(readlink -f "$1")
b=$(readlink -f "$2")
for bin in "$a" "$b"; do [[ -x $bin ]] || { echo "ab: no executable $bin" >&2; exit 2; }; done
build=$(cd "$here/${BUILD:-build}" && pwd)
cd "$here"
source bench/lib.sh

workload=${AB_WORKLOAD:-reserve}
trials=${AB_TRIALS:-5}
seconds=${AB_SECONDS:-10}
clients=${AB_CLIENTS:-16}
case $workload in
  reserve) keys=20000 ;;
  credit-hold-commit) keys=1000 ;;
  ratelimit-take | quota-consume) keys=10000 ;;
  *) echo "ab: unknown workload $workload" >&2; exit 2 ;;
esac

bench_clients=$clients  # each gateway's pool: one connection a client
bench_start_cluster "$build"
db=$(bench_create_database ab)
bench_seed_database "$db" 20000 1000 1000000000
gateway_env=(PAINTLOCK_HOLD_SECONDS=2 PAINTLOCK_RATE_LIMITS=api:100:10
  PAINTLOCK_QUOTAS=bench:1000000000:UTC)
bench_gateway_bin=$a bench_start_gateway "$db" ab-a "${gateway_env[@]}"
pid_a=$gateway_pid url_a=$gateway_url
bench_gateway_bin=$b bench_start_gateway "$db" ab-b "${gateway_env[@]}"
pid_b=$gateway_pid url_b=$gateway_url

echo "ab: $workload, $trials trial(s) of ${seconds}s, $clients clients on each gateway" >&2
echo "ab: A $a" >&2
echo "ab: B $b" >&2
ratios=()
for t in $(seq 1 "$trials"); do
  before_a=$(bench_cpu_ticks "$pid_a")
  before_b=$(bench_cpu_ticks "$pid_b")
  "$build/load" --url "$url_a" --api-key "$bench_api_key" --clients "$clients" \
    --seconds "$seconds" --workload "$workload" --keys "$keys" >"$bench_work/ab-a.json" &
  load_a=$!
  "$build/load" --url "$url_b" --api-key "$bench_api_key" --clients "$clients" \
    --seconds "$seconds" --workload "$workload" --keys "$keys" >"$bench_work/ab-b.json" &
  load_b=$!
  wait "$load_a" "$load_b"
  line=$(python3 - "$bench_work" "$before_a" "$(bench_cpu_ticks "$pid_a")" "$before_b" \
    "$(bench_cpu_ticks "$pid_b")" "$t" <<'PY'
import json, os, sys
work, a0, a1, b0, b1, t = sys.argv[1], *map(int, sys.argv[2:7])
hz = os.sysconf("SC_CLK_TCK")
ra = json.load(open(f"{work}/ab-a.json"))
rb = json.load(open(f"{work}/ab-b.json"))
if ra["errors"] or rb["errors"]:
    sys.exit(f"ab: trial {t}: errors (A {ra['errors']}, B {rb['errors']})")
ca = 1e6 * (a1 - a0) / hz / max(ra["iterations"], 1)
cb = 1e6 * (b1 - b0) / hz / max(rb["iterations"], 1)
print(f"{cb / ca:.3f} {rb['tps'] / ra['tps']:.3f} trial {t}: A {ra['tps']:.0f} tps, {ca:.1f} µs a "
      f"request | B {rb['tps']:.0f} tps, {cb:.1f} µs a request | B/A CPU {cb / ca:.3f}, "
      f"tps {rb['tps'] / ra['tps']:.3f}")
PY
  )
  echo "${line#* * }"
  ratios+=("${line%% trial*}")
done
printf '%s\n' "${ratios[@]}" | python3 -c 'import statistics, sys
rows = [tuple(map(float, l.split())) for l in sys.stdin if l.strip()]
print(f"median over {len(rows)} trial(s): B/A CPU a request {statistics.median(r[0] for r in rows):.3f} "
      f"(trials {min(r[0] for r in rows):.3f}-{max(r[0] for r in rows):.3f}), B/A tps "
      f"{statistics.median(r[1] for r in rows):.3f}")'
