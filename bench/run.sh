#!/usr/bin/env bash
# The reservation benchmark: the gateway's POST /v1/reservations against
# pgbench running the very same SQL (sql/queries/reserve.sql) on the same
# database, side by side in one run, alternating phases so neither side gets
# the warmer cache. Prints throughput, p50/p99 latency and their ratios, and
# writes the report to $BUILD/bench-report.md.
#
#   bench/run.sh [BUILD]   env: CLIENTS (32), SECONDS_PER_PHASE (8), ROUNDS (2),
#                               PAINTINGS (20000), HOLD_SECONDS (2)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$here/${1:-build}" && pwd)
cd "$here"
clients=${CLIENTS:-32}
seconds=${SECONDS_PER_PHASE:-8}
rounds=${ROUNDS:-2}
paintings=${PAINTINGS:-20000}
hold=${HOLD_SECONDS:-2}
work=$build/bench
mkdir -p "$work"

admin=$(fixtures/pg-cluster.sh start "$build/pg")
gw_pid=""
cleanup() {
  [[ -n "$gw_pid" ]] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null || true
  fixtures/pg-cluster.sh stop "$build/pg"
}
trap cleanup EXIT

psql "$admin" -qc "DROP DATABASE IF EXISTS bench WITH (FORCE)" -qc "CREATE DATABASE bench"
db=${admin/\/postgres\?/\/bench?}
DATABASE_URL=$db "$build/paintlockctl" migrate >/dev/null
{
  echo "id,title,price_minor,currency"
  for i in $(seq 1 "$paintings"); do echo "bench-$i,Bench painting $i,1000,eur"; done
} >"$work/catalog.csv"
DATABASE_URL=$db "$build/paintlockctl" catalog import "$work/catalog.csv"

reset_locks() {
  psql "$db" -qc "UPDATE painting_locks SET holder = NULL, held_until = NULL" \
    -qc "DELETE FROM reservation_items" -qc "DELETE FROM reservations" -qc "VACUUM ANALYZE" >/dev/null
}

# The gateway's own statement, with pgbench variables in place of $1..$3.
sed -e "s/\$1::text\[\]/ARRAY['bench-' || :k]::text[]/" -e 's/\$2::integer/:hold/' \
    -e 's/\$3::text/NULL::text/' -e '/^--/d' sql/queries/reserve.sql >"$work/reserve-stmt.sql"
{ echo "\\set k random(1, $paintings)"; tr '\n' ' ' <"$work/reserve-stmt.sql"; echo ";"; } >"$work/pgbench.sql"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
key=bench-api-key-0123456789
DATABASE_URL=$db PAINTLOCK_LISTEN=127.0.0.1:$port PAINTLOCK_API_KEY=$key \
  STRIPE_SECRET_KEY=sk_test_bench STRIPE_API_BASE=http://127.0.0.1:9 STRIPE_WEBHOOK_SECRET=whsec_bench \
  PAINTLOCK_LOG_LEVEL=${LOG_LEVEL:-info} PAINTLOCK_HOLD_SECONDS=$hold PAINTLOCK_DB_POOL=$clients PAINTLOCK_HTTP_THREADS=$((clients * 2)) \
  "$build/paintlock" >"$work/gateway.log" 2>&1 &
gw_pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done

pgbench_phase() {
  rm -f "$work"/pgbench_log.*
  (cd "$work" && pgbench -n -M prepared -c "$clients" -j 2 -T "$seconds" -D hold="$hold" -f pgbench.sql \
    -l --log-prefix=pgbench_log "$db" >pgbench.out 2>&1)
  local tps
  tps=$(awk '/^tps = / {print $3; exit}' "$work/pgbench.out")
  # Per-transaction latencies (µs, third column) from pgbench's log.
  cat "$work"/pgbench_log.* | awk '{print $3}' | sort -n >"$work/lat.txt"
  local n p50 p99
  n=$(wc -l <"$work/lat.txt")
  p50=$(awk -v n="$n" 'NR == int(n * 0.50) + 1 {printf "%.3f", $1 / 1000; exit}' "$work/lat.txt")
  p99=$(awk -v n="$n" 'NR == int(n * 0.99) + 1 {printf "%.3f", $1 / 1000; exit}' "$work/lat.txt")
  echo "{\"tps\": $tps, \"p50_ms\": $p50, \"p99_ms\": $p99}"
}

results=()
for r in $(seq 1 "$rounds"); do
  reset_locks
  echo "bench: round $r/$rounds: gateway, $clients clients, ${seconds}s" >&2
  g=$("$build/reserve-load" --url "http://127.0.0.1:$port" --api-key "$key" --clients "$clients" \
      --seconds "$seconds" --paintings "$paintings")
  reset_locks
  echo "bench: round $r/$rounds: pgbench, $clients clients, ${seconds}s" >&2
  p=$(pgbench_phase)
  results+=("$g|$p")
done

python3 - "$build/bench-report.md" "$clients" "$seconds" "$paintings" "$hold" "${results[@]}" <<'PY'
import json, sys, statistics, datetime
out, clients, seconds, paintings, hold, *rows = sys.argv[1:]
g = [json.loads(r.split('|')[0]) for r in rows]
p = [json.loads(r.split('|')[1]) for r in rows]
def mean(xs, k): return statistics.mean(x[k] for x in xs)
lines = [
  f"# Reservation benchmark ({datetime.date.today()})", "",
  f"{clients} concurrent clients, {seconds} s per phase, {len(rows)} alternating rounds, "
  f"{paintings} paintings, hold {hold} s, one painting per reservation. Same database, same SQL "
  f"(sql/queries/reserve.sql); pgbench -M prepared vs the gateway's POST /v1/reservations driven by "
  f"bench/reserve_load_main.cc over keep-alive HTTP. Both share the machine's cores with PostgreSQL.", "",
  "| round | gateway tps | gateway p50 ms | gateway p99 ms | pgbench tps | pgbench p50 ms | pgbench p99 ms |",
  "|---|---|---|---|---|---|---|"]
for i, (a, b) in enumerate(zip(g, p), 1):
  lines.append(f"| {i} | {a['tps']:.0f} | {a['p50_ms']:.2f} | {a['p99_ms']:.2f} | {b['tps']:.0f} | {b['p50_ms']:.2f} | {b['p99_ms']:.2f} |")
tps_ratio = mean(g, 'tps') / mean(p, 'tps')
p99_ratio = mean(g, 'p99_ms') / mean(p, 'p99_ms')
p50_ratio = mean(g, 'p50_ms') / mean(p, 'p50_ms')
lines += ["",
  f"**throughput ratio gateway/pgbench: {tps_ratio:.2f}** (goal ≥ 0.85)  ",
  f"**p99 ratio gateway/pgbench: {p99_ratio:.2f}** (goal ≤ 1.25)  ",
  f"p50 ratio gateway/pgbench: {p50_ratio:.2f}  ",
  f"gateway errors: {sum(x['errors'] for x in g)}, granted {sum(x['granted'] for x in g)}, conflicts {sum(x['conflicts'] for x in g)}"]
text = "\n".join(lines) + "\n"
open(out, "w").write(text)
print(text)
PY
