#!/usr/bin/env bash
# `make bench`: one report over every workload. Each workload runs through the
# gateway (bench/load_main.cc over keep-alive HTTP) and through pgbench running
# the very same SQL (bench/pgbench/*.sql, made from sql/queries/) on the same
# database, in the same run, after an unmeasured warm-up of each, in phases
# that take turns going first so neither side gets the warmer cache:
#
#   reserve             POST /v1/reservations, availability publishing on (pgbench:
#                       publishing off, as in every workload; see below)
#   reserve-sql         the same with the gateway's publishing off too
#   reserve-unnamed     reserve with PAINTLOCK_DB_STATEMENTS=unnamed (what PgBouncer's
#                       transaction pooling needs), pgbench with -M extended (unnamed
#                       too); the report compares it with `reserve` (named)
#   reserve-watched     reserve while BENCH_WATCHERS (100) availability streams are open
#                       and read: every change is pushed to each (pgbench: the same
#                       reserve, no streams)
#   credit-hold-commit  hold 1 credit then commit it (two requests; one pgbench
#                       transaction of credit_hold.sql + credit_commit.sql)
#   ratelimit-take      one take of 1 token from a random key
#   quota-consume       one consume decision for a random subject
#
# Prints throughput and p50/p99 with their gateway/pgbench ratios, the
# gateway's CPU µs per request (utime + stime from /proc over the phase), its
# peak RSS (VmHWM) and where the machine's CPU went on each side (the gateway,
# the load generator or pgbench, PostgreSQL, every core), and writes the report to
# bench/reports/<UTC date-time>-bench.md (BENCH_REPORT_DIR overrides).
#
#   bench/run.sh [BUILD]
#   env: BENCH_CLIENTS (32), BENCH_SECONDS per phase (8), BENCH_ROUNDS (2),
#        BENCH_WORKLOADS (all seven, space-separated), BENCH_PAINTINGS (20000),
#        BENCH_WATCHERS (100), BENCH_WARMUP_SECONDS (3: each side's unmeasured
#        phase before a workload's rounds; 0 for none),
#        BENCH_HOLD_SECONDS (2), BENCH_ACCOUNTS (1000), BENCH_KEYS (10000),
#        BENCH_SUBJECTS (20000), BENCH_QUOTA_LIMIT (1000000000: never refuses,
#        so every decision writes), BENCH_GATEWAY (another binary in the
#        gateway's place: build/async-probe, with BENCH_WORKLOADS naming
#        ratelimit-take and/or credit-hold-commit, the routes it serves),
#        BENCH_ASYNC_CONNECTIONS (the gateway's asynchronous connections for
#        the requests its reactor answers: one per client; 0 for none),
#        BENCH_CGROUPS (1: PostgreSQL, the gateway and the clients in CPU
#        cgroups of their own, as under systemd; bench/lib.sh)
#   smoke: BENCH_SECONDS=2 BENCH_CLIENTS=2 BENCH_ROUNDS=1 bench/run.sh
#   BENCH_WRITE_SCRIPTS=1 rewrites bench/pgbench/*.sql from sql/queries/.
set -euo pipefail
source "$(dirname "$0")/../fixtures/help.sh" "$@"
shopt -s inherit_errexit
here=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$here/${1:-build}" && pwd)
cd "$here"
source bench/lib.sh

# ---- Availability publishing: THE switch -----------------------------------
# `reserve` runs the gateway with publishing as in production; `reserve-sql`
# with it off. Each is a list of VAR=VALUE words for the gateway's phases.
# The gateway publishes after the buyer's commit (sql/queries/
# availability_publish.sql, which does nothing while
# paintlock.availability_notify is off for the session), and libpq reads
# PGOPTIONS, so one variable turns it off for the gateway's pool.
# pgbench's phases always run with it off, which is what issue 10's target
# names ("pgbench running the same SQL with publishing off"): so `reserve`
# measures that target side by side, each gateway phase next to its pgbench
# phase. The setting changes nothing pgbench runs (since
# sql/migrations/0007 only the publisher's statement notifies), so pgbench's
# phases of every workload do the same work as before it was set for them.
PUBLISHING_ON=()
PUBLISHING_OFF=("PGOPTIONS=-c paintlock.availability_notify=off")
# Unnamed statements on both sides: given the same way (the gateway ignores
# BENCH_*, bench_pgbench_phase reads it).
UNNAMED=("PAINTLOCK_DB_STATEMENTS=unnamed" "BENCH_PGBENCH_PROTOCOL=extended")
# -----------------------------------------------------------------------------

workloads=${BENCH_WORKLOADS:-reserve reserve-sql reserve-unnamed reserve-watched credit-hold-commit ratelimit-take quota-consume}
paintings=${BENCH_PAINTINGS:-20000}
hold=${BENCH_HOLD_SECONDS:-2}
watchers=${BENCH_WATCHERS:-100}
accounts=${BENCH_ACCOUNTS:-1000}
keys=${BENCH_KEYS:-10000}
subjects=${BENCH_SUBJECTS:-20000}
quota_limit=${BENCH_QUOTA_LIMIT:-1000000000}
capacity=100  # the rate-limit bucket both sides take from: 100 tokens,
refill=10     # refilled 10 a second
starting_balance=1000000000000
report_dir=${BENCH_REPORT_DIR:-$here/bench/reports}

# ---- The pgbench scripts: the gateway's statements, $n → pgbench variables --
# Sizes come in as pgbench variables (-D), so the scripts do not depend on them.
write_scripts() {  # DIR
  {
    echo "\\set k random(1, :paintings)"
    bench_statement sql/queries/reserve.sql -e "s/\$1::text\[\]/ARRAY['bench-' || :k]::text[]/" \
      -e 's/\$2::integer/:hold/' -e 's/\$3::text/NULL::text/' -e 's/\$4::uuid/gen_random_uuid()/' \
      -e 's/\$5::text/NULL::text/'
    echo ";"
  } >"$1/reserve.sql"
  {
    echo "\\set a random(1, :accounts)"
    bench_statement sql/queries/credit_hold.sql -e 's/\$1::text/:a::text/' \
      -e 's/\$2::bigint/1::bigint/' -e 's/\$3::integer/60/'
    echo "\\gset"
    bench_statement sql/queries/credit_commit.sql -e 's/\$1::uuid/:hold_id::uuid/'
    echo ";"
  } >"$1/credit_hold_commit.sql"
  {
    echo "\\set k random(1, :keys)"
    bench_statement sql/queries/ratelimit_take.sql -e "s/\\\$1::text/('api:' || :k)::text/g" \
      -e 's/\$2::integer/1::integer/g' -e "s/\\\$3::numeric/${capacity}::numeric/g" \
      -e "s/\\\$4::numeric/${refill}::numeric/g"
    echo ";"
  } >"$1/ratelimit_take.sql"
  # The gateway names subjects "subject:" + the name it was sent
  # (locks::NamedSubject). The prefix comes in a variable: pgbench would read
  # ":bench" in a literal as one.
  {
    echo "\\set s random(1, :subjects)"
    bench_statement sql/queries/quota_consume.sql -e "s/\$1::text/'bench'::text/g" \
      -e "s/\$2::text/(:prefix::text || :s::text)/g" -e 's/\$3::integer/:lim::integer/g' \
      -e "s/\$4::text/'UTC'::text/g"
    echo ";"
  } >"$1/quota_consume.sql"
}

bench_start_cluster "$build"
mkdir -p "$bench_work/pgbench"
write_scripts "$bench_work/pgbench"
if [[ ${BENCH_WRITE_SCRIPTS:-0} == 1 ]]; then
  cp "$bench_work"/pgbench/*.sql bench/pgbench/
elif ! diff -ru bench/pgbench "$bench_work/pgbench" >&2; then
  echo "bench: bench/pgbench/ no longer matches sql/queries/ and these settings;" \
    "rerun with BENCH_WRITE_SCRIPTS=1 to rewrite it" >&2
  exit 1
fi

db=$(bench_create_database bench)
bench_seed_database "$db" "$paintings" "$accounts" "$starting_balance"

# ---- Resets (every phase starts alike) and checks (after every phase) ------
# The holders are cleared first, so the DELETE skips the foreign keys' actions
# (session_replication_role): each would read every lock row per reservation
# (painting_locks.holder has no index, docs/ARCHITECTURE.md).
reset_reservations() {
  psql "$db" -qc "UPDATE painting_locks SET holder = NULL, held_until = NULL" \
    -qc "SET session_replication_role = replica" \
    -qc "DELETE FROM reservation_items" -qc "DELETE FROM reservations" -qc "VACUUM ANALYZE" >/dev/null
}
reset_credits() {
  psql "$db" -qc "DELETE FROM credit_holds" -qc "UPDATE credit_accounts SET balance = $starting_balance" \
    -qc "VACUUM ANALYZE credit_holds" -qc "VACUUM ANALYZE credit_accounts" >/dev/null
}
reset_buckets() { psql "$db" -qc "TRUNCATE rate_limit_buckets" >/dev/null; }
reset_quota() { psql "$db" -qc "TRUNCATE quota_usage" -qc "VACUUM ANALYZE quota_usage" >/dev/null; }

pass() { echo "$2"; }
# Every committed hold moved exactly one credit.
check_balances() {  # SIDE JSON
  local off
  off=$(psql "$db" -Atqc "SELECT count(*) FROM credit_accounts a LEFT JOIN (SELECT account_id, count(*) AS n
         FROM credit_holds WHERE state = 'committed' GROUP BY account_id) h ON h.account_id = a.id
         WHERE a.balance + coalesce(h.n, 0) <> $starting_balance")
  [[ "$off" == 0 ]] || { echo "bench: $off account(s) whose balance does not add up after $1" >&2; exit 1; }
  echo "$2"
}
# What the phase's reserves came to, counted in the database: the same SQL
# costs PostgreSQL more when it grants (and more still when it takes over a
# lapsed hold) than when it refuses, and a side's mix follows its own pace
# (the quicker side leaves more paintings held, and more holds lapsed), so the
# report prints both sides' mix next to their throughput.
count_outcomes() {  # SIDE JSON
  local counts
  counts=$(psql "$db" -Atc "SELECT count(*), count(*) FILTER (WHERE released_reason = 'lapsed')
                            FROM reservations" | tr '|' ' ')
  python3 -c 'import json, sys; r = json.loads(sys.argv[1]); r["granted"], r["took_over"] = map(int, sys.argv[2].split()); print(json.dumps(r))' \
    "$2" "$counts"
}
# Every stream stayed open through the gateway's phase (pgbench's has none).
check_watchers() {  # SIDE JSON
  local lost
  lost=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1]).get("watchers_lost", 0))' "$2")
  [[ "$lost" == 0 ]] || { echo "bench: $lost availability stream(s) refused or closed in $1" >&2; exit 1; }
  count_outcomes "$1" "$2"
}
# Exactness under load: every decision the gateway allowed is one count in the table.
check_quota() {  # SIDE JSON
  local counted
  counted=$(psql "$db" -Atc "SELECT coalesce(sum(used), 0) FROM quota_usage")
  python3 -c 'import json, sys; r = json.loads(sys.argv[1]); r["counted"] = int(sys.argv[2]); print(json.dumps(r))' \
    "$2" "$counted"
}

# ---- One workload: a gateway of its own, a warm-up, then rounds in turns ---
# measure NAME REQUESTS-PER-ITERATION PUBLISHING-ARRAY RESET CHECK SCRIPT
#   GATEWAY-ENV (one string of VAR=VALUE words) LOAD-ARGS (one string)
#   PGBENCH-ARGS (one string). Prints one line: NAME|requests|round JSONs…
measure() {
  local name=$1 per_iteration=$2 reset=$4 check=$5 script=$6
  local -n publishing=$3
  local gateway_env load_args pgbench_args
  read -r -a gateway_env <<<"$7"
  read -r -a load_args <<<"$8"
  read -r -a pgbench_args <<<"$9"
  bench_start_gateway "$db" "gateway-$name" "${publishing[@]}" "${gateway_env[@]}"
  local pid=$gateway_pid line="$name|$per_iteration" r g p
  # measure runs in a subshell: the script's own EXIT trap does not see this gateway.
  trap "bench_stop_gateway $pid" EXIT
  # Each phase from a reset, checked before anything else runs (the checks
  # read what it left in the database).
  gateway_phase() {
    local out
    $reset
    echo "bench: $name: $1: gateway, $bench_clients clients, ${bench_seconds}s" >&2
    out=$(bench_gateway_phase "$pid" "${load_args[@]}")
    $check "the gateway's phase" "$out"
  }
  pgbench_phase() {
    local out
    $reset
    echo "bench: $name: $1: pgbench, $bench_clients clients, ${bench_seconds}s" >&2
    out=$(for kv in "${publishing[@]}" "${PUBLISHING_OFF[@]}"; do export "${kv?}"; done
          bench_pgbench_phase "$db" "$bench_work/pgbench/$script" "${pgbench_args[@]}")
    $check "pgbench's phase" "$out"
  }
  # A warm-up for each side first, measured by neither. Without it the
  # gateway's round 1 ran on a process just started (its connections and
  # statements new) and, in the first workload, on a cluster just started:
  # in the four reports of 2026-12-07 06:06-10:15, `reserve` through the
  # gateway ran its round 1 at 0.74-0.93 of its round 2, pgbench at 1.03-1.13.
  if ((bench_warmup_seconds > 0)); then
    (bench_seconds=$bench_warmup_seconds
     gateway_phase "warm-up" >/dev/null
     pgbench_phase "warm-up" >/dev/null)
  fi
  # Then the rounds, in turns (gateway first in odd rounds, pgbench first
  # in even ones), so a drift within the run (tables growing, the cache
  # settling) does not always fall on the same side.
  for r in $(seq 1 "$bench_rounds"); do
    if ((r % 2)); then
      g=$(gateway_phase "round $r/$bench_rounds")
      p=$(pgbench_phase "round $r/$bench_rounds")
    else
      p=$(pgbench_phase "round $r/$bench_rounds")
      g=$(gateway_phase "round $r/$bench_rounds")
    fi
    line+="|$g|$p"
  done
  line+="|{\"peak_rss_kb\": $(bench_peak_rss_kb "$pid")}"
  bench_stop_gateway "$pid"
  echo "$line"
}

results=()
for w in $workloads; do
  case $w in
    reserve | reserve-sql | reserve-unnamed)
      switch=PUBLISHING_ON
      [[ $w == reserve-sql ]] && switch=PUBLISHING_OFF
      [[ $w == reserve-unnamed ]] && switch=UNNAMED
      result=$(measure "$w" 1 "$switch" reset_reservations count_outcomes reserve.sql \
        "PAINTLOCK_HOLD_SECONDS=$hold" "--workload reserve --keys $paintings" \
        "-D hold=$hold -D paintings=$paintings") ;;
    reserve-watched)
      result=$(measure "$w" 1 PUBLISHING_ON reset_reservations check_watchers reserve.sql \
        "PAINTLOCK_HOLD_SECONDS=$hold PAINTLOCK_MAX_STREAMS=$watchers PAINTLOCK_MAX_CONNECTIONS_PER_ADDRESS=$((watchers + bench_clients * 2))" \
        "--workload reserve --keys $paintings --watchers $watchers" \
        "-D hold=$hold -D paintings=$paintings") ;;
    credit-hold-commit)
      result=$(measure "$w" 2 PUBLISHING_ON reset_credits check_balances credit_hold_commit.sql \
        "" "--workload credit-hold-commit --keys $accounts" "-D accounts=$accounts") ;;
    ratelimit-take)
      result=$(measure "$w" 1 PUBLISHING_ON reset_buckets pass ratelimit_take.sql \
        "PAINTLOCK_RATE_LIMITS=api:$capacity:$refill" "--workload ratelimit-take --keys $keys" \
        "-D keys=$keys") ;;
    quota-consume)
      result=$(measure "$w" 1 PUBLISHING_ON reset_quota check_quota quota_consume.sql \
        "PAINTLOCK_QUOTAS=bench:$quota_limit:UTC" "--workload quota-consume --keys $subjects" \
        "-D lim=$quota_limit -D prefix=subject:bench- -D subjects=$subjects") ;;
    *) echo "bench: unknown workload $w" >&2; exit 2 ;;
  esac
  results+=("$result")
done

mkdir -p "$report_dir"
report=$report_dir/$(date -u +%Y-%m-%d-%H%M)-bench.md
in_place=""
[[ -z "${BENCH_GATEWAY:-}" ]] || in_place="; in the gateway's place: $BENCH_GATEWAY"
python3 bench/report.py "$report" "$bench_clients" "$bench_seconds" "$bench_rounds" \
  "paintings $paintings (hold ${hold} s), accounts $accounts, rate-limit keys $keys (bucket $capacity, refill $refill/s), quota subjects $subjects (limit $quota_limit)$in_place; scheduling: $bench_scheduling; each side warmed up ${bench_warmup_seconds} s unmeasured, then rounds in turns (the gateway first in odd rounds, pgbench in even ones)" \
  "${PUBLISHING_OFF[*]}" "${LOG_LEVEL:-info}" "${results[@]}"
echo "bench: report written to $report" >&2
