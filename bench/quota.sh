#!/usr/bin/env bash
# The quota benchmark: consume decisions per second through the gateway's
# POST /v1/quotas/{name}/consume against pgbench running the very same
# statement (sql/queries/quota_consume.sql) on the same database, side by side
# in one run, alternating phases so neither side gets the warmer cache. Prints
# throughput, p50/p99 latency and their ratios, and writes the report to
# $BUILD/bench-quota-report.md.
#
#   bench/quota.sh [BUILD]   env: CLIENTS (32), SECONDS_PER_PHASE (8), ROUNDS (2),
#                                 SUBJECTS (20000), LIMIT (1000000000)
#
# LIMIT decides what is measured: the default never refuses, so every decision
# writes (the expensive case); LIMIT=5 makes most decisions refusals once the
# subjects have used their five (a refusal writes nothing).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$here/${1:-build}" && pwd)
cd "$here"
clients=${CLIENTS:-32}
seconds=${SECONDS_PER_PHASE:-8}
rounds=${ROUNDS:-2}
subjects=${SUBJECTS:-20000}
limit=${LIMIT:-1000000000}
work=$build/bench-quota
mkdir -p "$work"

admin=$(fixtures/pg-cluster.sh start "$build/pg")
gw_pid=""
cleanup() {
  [[ -n "$gw_pid" ]] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null || true
  fixtures/pg-cluster.sh stop "$build/pg"
}
trap cleanup EXIT

psql "$admin" -qc "DROP DATABASE IF EXISTS bench_quota WITH (FORCE)" -qc "CREATE DATABASE bench_quota"
db=${admin/\/postgres\?/\/bench_quota?}
DATABASE_URL=$db "$build/paintlockctl" migrate >/dev/null

reset_counts() {
  psql "$db" -qc "TRUNCATE quota_usage" -qc "VACUUM ANALYZE quota_usage" >/dev/null
}

# The gateway's own statement, with pgbench variables in place of $1..$4: the
# gateway names subjects "subject:" + the name it was sent (locks::NamedSubject).
# The prefix comes in a variable: pgbench would read ":bench" in a literal as one.
sed -e "s/\$1::text/'bench'::text/g" -e "s/\$2::text/(:prefix::text || :s::text)/g" \
    -e 's/\$3::integer/:lim::integer/g' -e "s/\$4::text/'UTC'::text/g" -e '/^--/d' \
    sql/queries/quota_consume.sql >"$work/consume-stmt.sql"
{ echo "\\set s random(1, $subjects)"; tr '\n' ' ' <"$work/consume-stmt.sql"; echo ";"; } >"$work/pgbench.sql"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
key=bench-api-key-0123456789
DATABASE_URL=$db PAINTLOCK_LISTEN=127.0.0.1:$port PAINTLOCK_API_KEY=$key \
  STRIPE_SECRET_KEY=sk_test_bench STRIPE_API_BASE=http://127.0.0.1:9 STRIPE_WEBHOOK_SECRET=whsec_bench \
  PAINTLOCK_QUOTAS="bench:$limit:UTC" PAINTLOCK_LOG_LEVEL=warn \
  PAINTLOCK_DB_POOL=$clients PAINTLOCK_HTTP_THREADS=$((clients * 2)) \
  "$build/paintlock" >"$work/gateway.log" 2>&1 &
gw_pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fs "http://127.0.0.1:$port/readyz" >/dev/null || { cat "$work/gateway.log" >&2; exit 1; }

# CPU seconds a process has used so far (user + system), from /proc.
cpu_seconds() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$1/stat"; }

pgbench_phase() {
  rm -f "$work"/pgbench_log.*
  (cd "$work" && /usr/bin/time -f '%U %S' -o client.time pgbench -n -M prepared -c "$clients" -j 2 -T "$seconds" -D lim="$limit" -D prefix=subject:bench- -f pgbench.sql \
    -l --log-prefix=pgbench_log "$db" >pgbench.out 2>&1)
  local tps
  tps=$(awk '/^tps = / {print $3; exit}' "$work/pgbench.out")
  # Per-transaction latencies (µs, third column) from pgbench's log.
  cat "$work"/pgbench_log.* | awk '{print $3}' | sort -n >"$work/lat.txt"
  local n p50 p99 allowed
  n=$(wc -l <"$work/lat.txt")
  p50=$(awk -v n="$n" 'NR == int(n * 0.50) + 1 {printf "%.3f", $1 / 1000; exit}' "$work/lat.txt")
  p99=$(awk -v n="$n" 'NR == int(n * 0.99) + 1 {printf "%.3f", $1 / 1000; exit}' "$work/lat.txt")
  allowed=$(psql "$db" -Atc "SELECT coalesce(sum(used), 0) FROM quota_usage")
  local client_cpu
  client_cpu=$(awk '{print $1 + $2}' "$work/client.time")
  echo "{\"tps\": $tps, \"p50_ms\": $p50, \"p99_ms\": $p99, \"transactions\": $n, \"allowed\": $allowed, \"client_cpu_s\": $client_cpu}"
}

results=()
for r in $(seq 1 "$rounds"); do
  reset_counts
  echo "bench: round $r/$rounds: gateway, $clients clients, ${seconds}s" >&2
  gw_cpu_before=$(cpu_seconds "$gw_pid")
  g=$(/usr/bin/time -f '%U %S' -o "$work/client.time" "$build/quota-load" --url "http://127.0.0.1:$port" \
      --api-key "$key" --clients "$clients" --seconds "$seconds" --subjects "$subjects")
  gw_cpu=$(awk -v a="$gw_cpu_before" -v b="$(cpu_seconds "$gw_pid")" 'BEGIN {print b - a}')
  client_cpu=$(awk '{print $1 + $2}' "$work/client.time")
  gateway_counted=$(psql "$db" -Atc "SELECT coalesce(sum(used), 0) FROM quota_usage")
  g=${g%\}}", \"counted\": $gateway_counted, \"gateway_cpu_s\": $gw_cpu, \"client_cpu_s\": $client_cpu}"
  reset_counts
  echo "bench: round $r/$rounds: pgbench, $clients clients, ${seconds}s" >&2
  p=$(pgbench_phase)
  results+=("$g|$p")
done

python3 - "$build/bench-quota-report.md" "$clients" "$seconds" "$subjects" "$limit" "${results[@]}" <<'PY'
import json, sys, statistics, datetime
out, clients, seconds, subjects, limit, *rows = sys.argv[1:]
g = [json.loads(r.split('|')[0]) for r in rows]
p = [json.loads(r.split('|')[1]) for r in rows]
def mean(xs, k): return statistics.mean(x[k] for x in xs)
lines = [
  f"# Quota benchmark ({datetime.date.today()})", "",
  f"{clients} concurrent clients, {seconds} s per phase, {len(rows)} alternating rounds, "
  f"{subjects} subjects, daily limit {limit}. Same database, same statement "
  f"(sql/queries/quota_consume.sql, one guarded upsert per decision); pgbench -M prepared vs the "
  f"gateway's POST /v1/quotas/bench/consume with the API key and a named subject, driven by "
  f"bench/quota_load_main.cc over keep-alive HTTP. Both share the machine's cores with PostgreSQL.", "",
  "| round | gateway tps | gateway p50 ms | gateway p99 ms | pgbench tps | pgbench p50 ms | pgbench p99 ms |",
  "|---|---|---|---|---|---|---|"]
for i, (a, b) in enumerate(zip(g, p), 1):
  lines.append(f"| {i} | {a['tps']:.0f} | {a['p50_ms']:.2f} | {a['p99_ms']:.2f} | {b['tps']:.0f} | {b['p50_ms']:.2f} | {b['p99_ms']:.2f} |")
tps_ratio = mean(g, 'tps') / mean(p, 'tps')
p99_ratio = mean(g, 'p99_ms') / mean(p, 'p99_ms')
p50_ratio = mean(g, 'p50_ms') / mean(p, 'p50_ms')
# Exactness under load: every 200 the gateway answered is one count in the table.
mismatch = sum(x['allowed'] != x['counted'] for x in g)
lines += ["",
  f"**throughput ratio gateway/pgbench: {tps_ratio:.2f}** (goal ≥ 0.85)  ",
  f"**p99 ratio gateway/pgbench: {p99_ratio:.2f}** (goal ≤ 1.25)  ",
  f"p50 ratio gateway/pgbench: {p50_ratio:.2f}  ",
  f"gateway: allowed {sum(x['allowed'] for x in g)}, refused {sum(x['refused'] for x in g)}, "
  f"errors {sum(x['errors'] for x in g)}; rounds where 200s ≠ counts in the table: {mismatch}  ",
  # Where the difference goes: on a small machine every CPU µs the HTTP side
  # spends is taken from PostgreSQL.
  f"CPU per decision: gateway {1e6 * sum(x['gateway_cpu_s'] for x in g) / sum(x['requests'] for x in g):.0f} µs, "
  f"its load generator {1e6 * sum(x['client_cpu_s'] for x in g) / sum(x['requests'] for x in g):.0f} µs; "
  f"pgbench's client {1e6 * sum(x['client_cpu_s'] for x in p) / sum(x['transactions'] for x in p):.0f} µs"]
text = "\n".join(lines) + "\n"
open(out, "w").write(text)
print(text)
PY
