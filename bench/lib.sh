# bench/lib.sh: what every benchmark phase shares, sourced by bench/run.sh.
# A private PostgreSQL cluster, a benchmark database, gateways on free
# loopback ports, pgbench phases with latency percentiles from pgbench's own
# per-transaction log, and the gateway's CPU time and peak RSS from /proc.
#
# Knobs (environment): BENCH_CLIENTS (32), BENCH_SECONDS per phase (8),
# BENCH_ROUNDS (2), LOG_LEVEL of the gateways (info, as in production),
# BENCH_GATEWAY (a binary run in the gateway's place, such as
# build/async-probe; default BUILD/paintlock). A smoke run: BENCH_SECONDS=2
# BENCH_CLIENTS=2 BENCH_ROUNDS=1.
# Functions print JSON objects on stdout; progress goes to stderr.

bench_clients=${BENCH_CLIENTS:-32}
bench_seconds=${BENCH_SECONDS:-8}
bench_rounds=${BENCH_ROUNDS:-2}
bench_warmup_seconds=${BENCH_WARMUP_SECONDS:-3}
bench_api_key=bench-api-key-0123456789

# bench_start_cluster BUILD: starts $BUILD/pg, sets bench_admin_url and
# bench_work, and stops every gateway and the cluster when the script exits.
bench_gateway_pids=()
bench_start_cluster() {
  bench_build=$1
  bench_work=$bench_build/bench
  bench_gateway_bin=${BENCH_GATEWAY:-$bench_build/paintlock}
  [[ -x "$bench_gateway_bin" ]] || { echo "bench: no gateway binary $bench_gateway_bin" >&2; exit 2; }
  mkdir -p "$bench_work"
  bench_admin_url=$(fixtures/pg-cluster.sh start "$bench_build/pg")
  trap bench_cleanup EXIT
  bench_start_cgroups
}

bench_cleanup() {
  local pid
  for pid in "${bench_gateway_pids[@]}"; do
    kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  done
  fixtures/pg-cluster.sh stop "$bench_build/pg"
  bench_stop_cgroups
}

# BENCH_CGROUPS=1: scheduling as under systemd (deploy/systemd), PostgreSQL,
# the gateway and the clients each in a CPU cgroup of its own with equal
# shares, as postgresql.service, paintlock.service and a user's session are
# (needs a writable cgroup v1 cpu controller; otherwise it is skipped). By
# default autogroup decides, as in every report before: every PostgreSQL
# backend a group of its own, the gateway one (its own session, below), the
# clients one. The cgroups lift the gateway's ratios, but partly by slowing
# PostgreSQL for pgbench too (bench/reports/2026-12-06-2148-cgroups-probe.md),
# so they are not the default. bench_scheduling says which ran, for the report.
bench_cgroup_root=/sys/fs/cgroup/cpu
bench_cgroup=""
bench_scheduling="autogroup sessions"
bench_start_cgroups() {
  local pm p g
  [[ ${BENCH_CGROUPS:-0} == 1 && -w $bench_cgroup_root/cgroup.procs ]] || return 0
  bench_cgroup=$bench_cgroup_root/paintlock-bench-$$
  for g in postgres gateway clients; do mkdir -p "$bench_cgroup/$g" || { bench_cgroup=""; return 0; }; done
  pm=$(head -1 "$bench_build/pg/cluster/data/postmaster.pid")
  for p in "$pm" $(pgrep -P "$pm"); do echo "$p" >"$bench_cgroup/postgres/cgroup.procs"; done
  echo $$ >"$bench_cgroup/clients/cgroup.procs"  # this shell: the load generator, pgbench, psql
  bench_scheduling="CPU cgroups with equal shares (PostgreSQL, the gateway, the clients)"
}
bench_stop_cgroups() {
  [[ -n $bench_cgroup ]] || return 0
  local g
  echo $$ >"$bench_cgroup_root/cgroup.procs"
  for g in postgres gateway clients; do rmdir "$bench_cgroup/$g" 2>/dev/null || true; done
  rmdir "$bench_cgroup" 2>/dev/null || true
}

# bench_create_database NAME: a fresh, migrated database; prints its URL.
bench_create_database() {
  psql "$bench_admin_url" -qc "DROP DATABASE IF EXISTS $1 WITH (FORCE)" -qc "CREATE DATABASE $1"
  local url=${bench_admin_url/\/postgres\?/\/$1?}
  DATABASE_URL=$url "$bench_build/paintlockctl" migrate >/dev/null
  echo "$url"
}

# bench_seed_database DB_URL PAINTINGS ACCOUNTS BALANCE: the catalogue
# bench-1..bench-PAINTINGS (imported as a seller would, through paintlockctl)
# and credit accounts 1..ACCOUNTS holding BALANCE each.
bench_seed_database() {
  local db=$1 paintings=$2 accounts=$3 balance=$4
  {
    echo "id,title,price_minor,currency"
    for i in $(seq 1 "$paintings"); do echo "bench-$i,Bench painting $i,1000,eur"; done
  } >"$bench_work/catalog.csv"
  DATABASE_URL=$db "$bench_build/paintlockctl" catalog import "$bench_work/catalog.csv" >/dev/null
  psql "$db" -qc "INSERT INTO credit_accounts (id, balance)
                  SELECT i::text, $balance FROM generate_series(1, $accounts) i"
}

bench_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# bench_start_gateway DB_URL NAME [VAR=VALUE...]: a gateway with the bench
# API key, a dead Stripe, one pooled connection per client (and one
# asynchronous one, for the requests its reactor answers; BENCH_ASYNC_CONNECTIONS
# overrides, 0 for none) and the extra environment given; waits until it is ready. Sets gateway_pid and
# gateway_url; its log is $bench_work/NAME.log.
#
# The gateway runs in a session of its own (setsid), as a server is scheduled:
# with autogroup scheduling (Linux's default, /proc/sys/kernel/sched_autogroup_enabled)
# a session is a scheduling group, every PostgreSQL backend is one (postmaster
# children call setsid), and a systemd service (deploy/systemd) is a cgroup of its
# own. Left in the bench shell's session, the gateway shared one group's CPU share
# with the load generator driving it, while each backend had a share of its own:
# its single reactor thread queued behind the backends (rate-limit take p99 12.3 ms
# against 4.7 ms in its own session, bench/reports/2026-12-06-1602-setsid-probe.md).
# The clients (the load generator, pgbench) stay in the bench shell's session.
# setsid execs in place (a background job of a shell without job control is no
# group leader), so $! stays the gateway's pid; checked below.
bench_start_gateway() {
  local db=$1 name=$2
  shift 2
  local port
  port=$(bench_free_port)
  env DATABASE_URL="$db" PAINTLOCK_LISTEN="127.0.0.1:$port" PAINTLOCK_API_KEY="$bench_api_key" \
    STRIPE_SECRET_KEY=sk_test_bench STRIPE_API_BASE=http://127.0.0.1:9 \
    STRIPE_WEBHOOK_SECRET=whsec_bench PAINTLOCK_LOG_LEVEL="${LOG_LEVEL:-info}" \
    PAINTLOCK_DB_POOL="$bench_clients" PAINTLOCK_DB_ASYNC_CONNECTIONS="${BENCH_ASYNC_CONNECTIONS:-$bench_clients}" \
    PAINTLOCK_HTTP_THREADS=$((bench_clients * 2)) \
    "$@" setsid "$bench_gateway_bin" >"$bench_work/$name.log" 2>&1 &
  [[ -z $bench_cgroup ]] || echo $! >"$bench_cgroup/gateway/cgroup.procs"
  gateway_pid=$!
  gateway_url=http://127.0.0.1:$port
  bench_gateway_pids+=("$gateway_pid")
  local _ ready=0
  for _ in $(seq 100); do
    curl -fs "$gateway_url/readyz" >/dev/null 2>&1 && { ready=1; break; }
    sleep 0.1
  done
  if ((!ready)); then
    kill "$gateway_pid" 2>/dev/null || true
    echo "bench: the gateway $name did not become ready; its log:" >&2
    cat "$bench_work/$name.log" >&2
    exit 1
  fi
  # The pid measured is the gateway's, and it leads its own session.
  if [[ $(readlink -f "/proc/$gateway_pid/exe") != "$(readlink -f "$bench_gateway_bin")" ||
    $(ps -o sid= -p "$gateway_pid" | tr -d ' ') != "$gateway_pid" ]]; then
    echo "bench: pid $gateway_pid is not the gateway $name in a session of its own" >&2
    exit 1
  fi
}

bench_stop_gateway() {  # PID
  kill "$1" 2>/dev/null && wait "$1" 2>/dev/null || true
}

# CPU clock ticks (user + system) a process has used so far.
bench_cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# Context switches (voluntary + involuntary) of all the process's threads so
# far: each is a thread put to sleep or pre-empted, which the profile shows to
# be most of a request's cost on this machine.
bench_switches() {
  cat /proc/"$1"/task/*/status 2>/dev/null |
    awk '/^(voluntary|nonvoluntary)_ctxt_switches:/ {n += $2} END {print n + 0}'
}

# The process's peak resident set (VmHWM), in kB.
bench_peak_rss_kb() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status"; }

# CPU ticks PostgreSQL has used so far: the postmaster and every live child
# (backends, background workers), plus what its ended children used (its
# cutime + cstime: a backend that ends is reaped by the postmaster).
bench_pg_cpu_ticks() {
  local pm child
  pm=$(head -1 "$bench_build/pg/cluster/data/postmaster.pid")
  {
    awk '{print $14 + $15 + $16 + $17}' "/proc/$pm/stat"
    # A backend may end between pgrep and the read (its time then moves to the
    # postmaster's cutime, read above or at the next call): skip it.
    for child in $(pgrep -P "$pm"); do
      awk '{print $14 + $15}' "/proc/$child/stat" 2>/dev/null || true
    done
  } | awk '{n += $1} END {print n + 0}'
}

# WAL flushes (fdatasync of the WAL, by any process) the cluster has made so
# far. A commit under synchronous_commit waits for one, and one flush serves
# every commit waiting then (group commit): the fewer commits wait together,
# the more flushes a unit of work costs PostgreSQL. Read outside the CPU
# windows (it is a backend of its own). PostgreSQL 15's processes publish
# their counts at most once a second (and an idle backend up to a second after
# its last statement), so the count after a phase is read 1.2 s after it ends.
bench_wal_flushes() { psql "$bench_admin_url" -Atqc "SELECT wal_sync FROM pg_stat_wal"; }
bench_wal_flushes_settled() { sleep 1.2 && bench_wal_flushes; }

# CPU ticks the whole machine has been busy so far (every core; idle and
# iowait excluded).
bench_busy_ticks() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat; }

# bench_timed OUT-FILE COMMAND...: runs COMMAND and writes the CPU ticks it
# and its children used (user + system, from the shell's `times`) to OUT-FILE.
bench_timed() {
  local out=$1
  shift
  (
    "$@"
    times >"$out.times"  # not in a pipe: a piped builtin runs in a fork with no children
    awk -v hz="$(getconf CLK_TCK)" 'NR == 2 {
      split($1, u, /[ms]/); split($2, s, /[ms]/)
      printf "%.0f\n", ((u[1] * 60 + u[2]) + (s[1] * 60 + s[2])) * hz }' "$out.times" >"$out"
  )
}

# bench_cpu_json JSON ITERATIONS-KEY CLIENT-TICKS PG-BEFORE PG-AFTER BUSY-BEFORE
# BUSY-AFTER WAL-BEFORE WAL-AFTER: adds client_cpu_us (the load generator or
# pgbench), db_cpu_us (PostgreSQL), machine_cpu_us (every core, everything)
# and wal_flushes (bench_wal_flushes) per iteration.
bench_cpu_json() {
  python3 -c 'import json, sys, os
r = json.loads(sys.argv[1])
n = max(r[sys.argv[2]], 1)
us = 1e6 / os.sysconf("SC_CLK_TCK") / n
client, pg0, pg1, busy0, busy1, wal0, wal1 = (int(x) for x in sys.argv[3:10])
r["client_cpu_us"] = client * us
r["db_cpu_us"] = (pg1 - pg0) * us
r["machine_cpu_us"] = (busy1 - busy0) * us
r["wal_flushes"] = (wal1 - wal0) / n
print(json.dumps(r))' "$@"
}

# bench_gateway_phase PID LOAD-ARGS...: runs bench/load_main.cc against the
# gateway PID serves, and adds to its JSON the gateway's CPU µs per iteration
# (utime + stime over the phase, from /proc) and its threads' context
# switches per iteration.
bench_gateway_phase() {
  local pid=$1
  shift
  local before after switches_before switches_after out pg_before busy_before wal_before
  wal_before=$(bench_wal_flushes)
  switches_before=$(bench_switches "$pid")
  before=$(bench_cpu_ticks "$pid")
  pg_before=$(bench_pg_cpu_ticks)
  busy_before=$(bench_busy_ticks)
  bench_timed "$bench_work/load.ticks" "$bench_build/load" --url "$gateway_url" \
    --api-key "$bench_api_key" --clients "$bench_clients" --seconds "$bench_seconds" "$@" \
    >"$bench_work/load.json"
  local busy_after pg_after
  busy_after=$(bench_busy_ticks)
  pg_after=$(bench_pg_cpu_ticks)
  after=$(bench_cpu_ticks "$pid")
  switches_after=$(bench_switches "$pid")
  local wal_after
  wal_after=$(bench_wal_flushes_settled)
  out=$(python3 -c 'import json, sys, os
r = json.loads(sys.argv[1])
ticks = int(sys.argv[3]) - int(sys.argv[2])
r["gateway_cpu_us"] = 1e6 * ticks / os.sysconf("SC_CLK_TCK") / max(r["iterations"], 1)
r["gateway_switches"] = (int(sys.argv[5]) - int(sys.argv[4])) / max(r["iterations"], 1)
print(json.dumps(r))' "$(cat "$bench_work/load.json")" "$before" "$after" "$switches_before" \
    "$switches_after")
  bench_cpu_json "$out" iterations "$(cat "$bench_work/load.ticks")" "$pg_before" "$pg_after" \
    "$busy_before" "$busy_after" "$wal_before" "$wal_after"
}

# bench_pgbench_phase DB_URL SCRIPT [PGBENCH-ARGS...]: pgbench -M prepared
# (-M $BENCH_PGBENCH_PROTOCOL when set: extended = unnamed statements) with
# the bench's clients and seconds. Prints {tps, p50_ms, p99_ms,
# transactions, failed}; latencies are pgbench's own per-transaction log.
bench_pgbench_phase() {
  local db=$1 script=$2
  shift 2
  rm -f "$bench_work"/pgbench_log.*
  local pg_before busy_before pg_after busy_after wal_before wal_after
  wal_before=$(bench_wal_flushes)
  pg_before=$(bench_pg_cpu_ticks)
  busy_before=$(bench_busy_ticks)
  (cd "$bench_work" && bench_timed pgbench.ticks pgbench -n -M "${BENCH_PGBENCH_PROTOCOL:-prepared}" \
    -c "$bench_clients" -j 2 -T "$bench_seconds" -f "$script" -l --log-prefix=pgbench_log "$@" \
    "$db" >pgbench.out 2>&1) || { cat "$bench_work/pgbench.out" >&2; exit 1; }
  busy_after=$(bench_busy_ticks)
  pg_after=$(bench_pg_cpu_ticks)
  wal_after=$(bench_wal_flushes_settled)
  local tps failed
  tps=$(awk '/^tps = / {print $3; exit}' "$bench_work/pgbench.out")
  failed=$(awk '/^number of failed transactions: / {print $5; exit}' "$bench_work/pgbench.out")
  # Per-transaction latencies (µs, third column) from pgbench's log.
  cat "$bench_work"/pgbench_log.* | awk '{print $3}' | sort -n >"$bench_work/lat.txt"
  local n p50 p99
  n=$(wc -l <"$bench_work/lat.txt")
  p50=$(awk -v n="$n" 'NR == int(n * 0.50) + 1 {printf "%.3f", $1 / 1000; exit}' "$bench_work/lat.txt")
  p99=$(awk -v n="$n" 'NR == int(n * 0.99) + 1 {printf "%.3f", $1 / 1000; exit}' "$bench_work/lat.txt")
  bench_cpu_json "{\"tps\": $tps, \"p50_ms\": ${p50:-0}, \"p99_ms\": ${p99:-0}, \"transactions\": $n, \"failed\": ${failed:-0}}" \
    transactions "$(cat "$bench_work/pgbench.ticks")" "$pg_before" "$pg_after" "$busy_before" \
    "$busy_after" "$wal_before" "$wal_after"
}

# bench_statement SQL_FILE SED-ARGS...: a gateway statement from sql/queries/
# with pgbench variables in place of $1..$n, comments dropped, on one line.
bench_statement() {
  local file=$1
  shift
  sed "$@" -e '/^--/d' "$file" | tr '\n' ' '
}
