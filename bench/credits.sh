#!/usr/bin/env bash
# The credit-hold and rate-limit benchmark: the gateway against pgbench
# running the very same SQL on the same database, side by side in one run,
# alternating phases so neither side gets the warmer cache (as bench/run.sh).
#
#   holds      one transaction = a hold of 1 credit on a random account, then
#              its commit: POST /v1/accounts/{a}/holds + POST /v1/holds/{id}/commit
#              vs sql/queries/credit_hold.sql + credit_commit.sql (\gset between)
#   ratelimit  one decision on a random key: POST /v1/ratelimits/api:{k}/take
#              vs sql/queries/ratelimit_take.sql
#
# Prints throughput, p50/p99 latency and their ratios, and writes the report
# to $BUILD/credits-bench-report.md.
#
#   bench/credits.sh [BUILD]   env: CLIENTS (32), SECONDS_PER_PHASE (8), ROUNDS (2),
#                                   ACCOUNTS (1000), KEYS (10000)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$here/${1:-build}" && pwd)
cd "$here"
clients=${CLIENTS:-32}
seconds=${SECONDS_PER_PHASE:-8}
rounds=${ROUNDS:-2}
accounts=${ACCOUNTS:-1000}
keys=${KEYS:-10000}
# The bucket both sides take from: a token bucket of 100, refilled 10 a second.
capacity=100
refill=10
work=$build/bench-credits
mkdir -p "$work"

admin=$(fixtures/pg-cluster.sh start "$build/pg")
gw_pid=""
cleanup() {
  [[ -n "$gw_pid" ]] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null || true
  fixtures/pg-cluster.sh stop "$build/pg"
}
trap cleanup EXIT

psql "$admin" -qc "DROP DATABASE IF EXISTS credits_bench WITH (FORCE)" -qc "CREATE DATABASE credits_bench"
db=${admin/\/postgres\?/\/credits_bench?}
DATABASE_URL=$db "$build/paintlockctl" migrate >/dev/null
psql "$db" -qc "INSERT INTO credit_accounts (id, balance)
                SELECT i::text, 1000000000000 FROM generate_series(1, $accounts) i"

reset() {
  # Every phase starts alike: no holds, full balances, no buckets, fresh statistics.
  psql "$db" -qc "DELETE FROM credit_holds" -qc "UPDATE credit_accounts SET balance = 1000000000000" \
    -qc "TRUNCATE rate_limit_buckets" -qc "VACUUM ANALYZE" >/dev/null
}

# The gateway's own statements, with pgbench variables in place of $1..$4,
# each flattened to one line.
flat() { sed -e '/^--/d' "$@" | tr '\n' ' '; }
{
  echo "\\set a random(1, $accounts)"
  flat <(sed -e 's/\$1::text/:a::text/' -e 's/\$2::bigint/1::bigint/' -e 's/\$3::integer/60/' \
         sql/queries/credit_hold.sql)
  echo "\\gset"
  flat <(sed -e 's/\$1::uuid/:hold_id::uuid/' sql/queries/credit_commit.sql)
  echo ";"
} >"$work/holds.sql"
{
  echo "\\set k random(1, $keys)"
  flat <(sed -e "s/\\\$1::text/('api:' || :k)::text/g" -e 's/\$2::integer/1::integer/g' \
         -e "s/\\\$3::numeric/${capacity}::numeric/g" -e "s/\\\$4::numeric/${refill}::numeric/g" \
         sql/queries/ratelimit_take.sql)
  echo ";"
} >"$work/ratelimit.sql"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
key=bench-api-key-0123456789
DATABASE_URL=$db PAINTLOCK_LISTEN=127.0.0.1:$port PAINTLOCK_API_KEY=$key \
  STRIPE_SECRET_KEY=sk_test_bench STRIPE_API_BASE=http://127.0.0.1:9 STRIPE_WEBHOOK_SECRET=whsec_bench \
  PAINTLOCK_RATE_LIMITS="api:$capacity:$refill" PAINTLOCK_DB_POOL=$clients \
  PAINTLOCK_HTTP_THREADS=$((clients * 2)) \
  "$build/paintlock" >"$work/gateway.log" 2>&1 &
gw_pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done

pgbench_phase() {  # $1: script
  rm -f "$work"/pgbench_log.*
  (cd "$work" && pgbench -n -M prepared -c "$clients" -j 2 -T "$seconds" -f "$1" \
    -l --log-prefix=pgbench_log "$db" >pgbench.out 2>&1) || { cat "$work/pgbench.out" >&2; exit 1; }
  local tps failed
  tps=$(awk '/^tps = / {print $3; exit}' "$work/pgbench.out")
  failed=$(awk '/^number of failed transactions: / {print $5; exit}' "$work/pgbench.out")
  # Per-transaction latencies (µs, third column) from pgbench's log.
  cat "$work"/pgbench_log.* | awk '{print $3}' | sort -n >"$work/lat.txt"
  local n p50 p99
  n=$(wc -l <"$work/lat.txt")
  p50=$(awk -v n="$n" 'NR == int(n * 0.50) + 1 {printf "%.3f", $1 / 1000; exit}' "$work/lat.txt")
  p99=$(awk -v n="$n" 'NR == int(n * 0.99) + 1 {printf "%.3f", $1 / 1000; exit}' "$work/lat.txt")
  echo "{\"tps\": $tps, \"p50_ms\": $p50, \"p99_ms\": $p99, \"failed\": ${failed:-0}}"
}

check_balances() {  # after a holds phase: every committed hold moved exactly one credit
  local off
  off=$(psql "$db" -Atqc "SELECT count(*) FROM credit_accounts a LEFT JOIN (SELECT account_id, count(*) AS n
         FROM credit_holds WHERE state = 'committed' GROUP BY account_id) h ON h.account_id = a.id
         WHERE a.balance + coalesce(h.n, 0) <> 1000000000000")
  [[ "$off" == 0 ]] || { echo "bench: $off account(s) whose balance does not add up after $1" >&2; exit 1; }
}

gateway_phase() {  # $1: mode
  "$build/credits-load" --url "http://127.0.0.1:$port" --api-key "$key" --mode "$1" \
    --clients "$clients" --seconds "$seconds" --keys "$([[ $1 == holds ]] && echo "$accounts" || echo "$keys")"
}

results=()
for r in $(seq 1 "$rounds"); do
  for mode in holds ratelimit; do
    reset
    echo "bench: round $r/$rounds: $mode: gateway, $clients clients, ${seconds}s" >&2
    g=$(gateway_phase "$mode")
    [[ $mode == holds ]] && check_balances "the gateway's phase"
    reset
    echo "bench: round $r/$rounds: $mode: pgbench, $clients clients, ${seconds}s" >&2
    p=$(pgbench_phase "$work/$mode.sql")
    [[ $mode == holds ]] && check_balances "pgbench's phase"
    results+=("$mode|$g|$p")
  done
done

python3 - "$build/credits-bench-report.md" "$clients" "$seconds" "$accounts" "$keys" "$capacity" "$refill" \
  "${results[@]}" <<'PY'
import json, sys, statistics, datetime
out, clients, seconds, accounts, keys, capacity, refill, *rows = sys.argv[1:]
data = {}
for row in rows:
  mode, g, p = row.split('|')
  data.setdefault(mode, []).append((json.loads(g), json.loads(p)))
def mean(xs, k): return statistics.mean(x[k] for x in xs)
title = {"holds": "Holds + commits (one transaction = hold 1 credit, then commit it)",
         "ratelimit": "Rate-limit decisions (one take of 1 token)"}
sql = {"holds": "sql/queries/credit_hold.sql + credit_commit.sql",
       "ratelimit": "sql/queries/ratelimit_take.sql"}
lines = [f"# Credit holds and rate limits benchmark ({datetime.date.today()})", "",
  f"{clients} concurrent clients, {seconds} s per phase, {len(data['holds'])} alternating rounds. "
  f"Holds: {accounts} accounts, a random one per transaction. Rate limits: {keys} keys, bucket "
  f"{capacity} tokens refilled {refill}/s. Same database, same SQL: pgbench -M prepared vs the "
  f"gateway driven by bench/credits_load_main.cc over keep-alive HTTP. Both share the machine's "
  f"cores with PostgreSQL; synchronous_commit on.", ""]
for mode in ("holds", "ratelimit"):
  rs = data[mode]
  g = [a for a, _ in rs]; p = [b for _, b in rs]
  lines += [f"## {title[mode]}", "", f"SQL: `{sql[mode]}`", "",
    "| round | gateway tps | gateway p50 ms | gateway p99 ms | pgbench tps | pgbench p50 ms | pgbench p99 ms |",
    "|---|---|---|---|---|---|---|"]
  for i, (a, b) in enumerate(rs, 1):
    lines.append(f"| {i} | {a['tps']:.0f} | {a['p50_ms']:.2f} | {a['p99_ms']:.2f} | {b['tps']:.0f} | {b['p50_ms']:.2f} | {b['p99_ms']:.2f} |")
  lines += ["",
    f"**throughput ratio gateway/pgbench: {mean(g, 'tps') / mean(p, 'tps'):.2f}** (goal ≥ 0.85)  ",
    f"**p99 ratio gateway/pgbench: {mean(g, 'p99_ms') / mean(p, 'p99_ms'):.2f}** (goal ≤ 1.25)  ",
    f"p50 ratio gateway/pgbench: {mean(g, 'p50_ms') / mean(p, 'p50_ms'):.2f}  ",
    f"gateway errors: {sum(x['errors'] for x in g)}, refused {sum(x['refused'] for x in g)}; "
    f"pgbench failed transactions: {sum(x['failed'] for x in p)}", ""]
text = "\n".join(lines)
open(out, "w").write(text)
print(text)
PY
