"""The `make bench` report: one table over every workload, gateway vs pgbench.

Called by bench/run.sh as
  report.py OUT CLIENTS SECONDS ROUNDS SETUP PUBLISHING_OFF LOG_LEVEL ROW...
where each ROW is NAME|REQUESTS_PER_ITERATION|gateway JSON|pgbench JSON|…(per
round)…|{"peak_rss_kb": N}. Writes markdown to OUT and prints it.
"""
import datetime
import json
import statistics
import sys

out, clients, seconds, rounds, setup, publishing_off, log_level, *rows = sys.argv[1:]

TITLES = {
    "reserve": "reserve, availability publishing on",
    "reserve-sql": "reserve SQL, availability publishing off",
    "reserve-unnamed": "reserve, unnamed statements (PgBouncer mode)",
    "reserve-watched": "reserve, availability streams open",
    "credit-hold-commit": "credit hold + commit",
    "ratelimit-take": "rate-limit take",
    "quota-consume": "quota consume",
}
SQL = {
    "reserve": "reserve.sql",
    "reserve-sql": "reserve.sql",
    "reserve-unnamed": "reserve.sql",
    "reserve-watched": "reserve.sql",
    "credit-hold-commit": "credit_hold.sql + credit_commit.sql",
    "ratelimit-take": "ratelimit_take.sql",
    "quota-consume": "quota_consume.sql",
}


def mean(xs, key):
    return statistics.mean(x[key] for x in xs)


def ratio(a, b):
    return a / b if b else float("nan")


# A section of the report: its heading, its paragraphs, then a table's head.
def section(title, paragraphs, columns):
    out = ["", f"### {title}", ""]
    for paragraph in paragraphs:
        out += [paragraph, ""]
    return out + ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]


# Each round's gateway phase against its pgbench phase (next to each other, in
# turns: bench/run.sh): how far the ratio moves between rounds of the same
# code is the noise a reader must allow.
def round_ratios(g, p):
    return ", ".join(f"{ratio(a['tps'], b['tps']):.2f}" for a, b in zip(g, p))


workloads = []
for row in rows:
    name, per_iteration, *phases = row.split("|")
    rss = json.loads(phases.pop())["peak_rss_kb"]
    gateway = [json.loads(x) for x in phases[0::2]]
    pgbench = [json.loads(x) for x in phases[1::2]]
    workloads.append((name, int(per_iteration), gateway, pgbench, rss))
    if name == "reserve-watched":
        TITLES[name] = f"reserve, {gateway[0].get('watchers', '?')} availability streams open"

stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
lines = [
    f"# Benchmark: the gateway vs pgbench on the same SQL ({stamp})", "",
    f"{clients} concurrent clients, {seconds} s per phase, {rounds} round(s) per "
    f"workload, one gateway per workload (log level {log_level}). {setup}. The gateway is driven "
    f"by bench/load_main.cc over keep-alive HTTP; pgbench -M prepared runs bench/pgbench/*.sql, "
    f"the gateway's statements from sql/queries/. Both share the machine's cores with "
    f"PostgreSQL; synchronous_commit on. The gateway runs in a session of its own (setsid): "
    f"its own scheduling group, as each PostgreSQL backend is (bench/lib.sh says why); the "
    f"clients share the bench shell's. Publishing off: `{publishing_off}`, for "
    f"every pgbench phase (only the gateway's publisher notifies; bench/run.sh) and for the "
    f"gateway's phases of `reserve-sql`.", "",
    "Ratios are gateway/pgbench over the means of the rounds. CPU is the gateway process's "
    "utime + stime over its phases divided by the HTTP requests it answered; switches are its "
    "threads' context switches (voluntary and not) per request; RSS is its VmHWM.",
    "",
    "| workload | gateway tps | pgbench tps | **tps ratio** | each round's tps ratio | "
    "gateway p50 / p99 ms | pgbench p50 / p99 ms | p50 ratio | **p99 ratio** | "
    "gateway CPU µs/request | gateway switches/request | gateway peak RSS MB | "
    "gateway errors |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
]
for name, per_iteration, g, p, rss in workloads:
    cpu = mean(g, "gateway_cpu_us") / per_iteration
    switches = mean(g, "gateway_switches") / per_iteration
    lines.append(
        f"| {TITLES.get(name, name)} | {mean(g, 'tps'):.0f} | {mean(p, 'tps'):.0f} | "
        f"**{ratio(mean(g, 'tps'), mean(p, 'tps')):.2f}** | {round_ratios(g, p)} | "
        f"{mean(g, 'p50_ms'):.2f} / {mean(g, 'p99_ms'):.2f} | "
        f"{mean(p, 'p50_ms'):.2f} / {mean(p, 'p99_ms'):.2f} | "
        f"{ratio(mean(g, 'p50_ms'), mean(p, 'p50_ms')):.2f} | "
        f"**{ratio(mean(g, 'p99_ms'), mean(p, 'p99_ms')):.2f}** | {cpu:.0f} | {switches:.1f} | {rss / 1024:.1f} | "
        f"{sum(x['errors'] for x in g)} |")

# Where the machine's CPU went, per request, on each side. When the cores are
# saturated, throughput is about (cores × 1 s) / machine CPU per request, so
# the ratio of the two sides' machine CPU predicts the tps ratio.
has_cpu = all("machine_cpu_us" in x for w in workloads for x in w[2] + w[3])
if has_cpu:
    lines += section(
        "Where the CPU went (µs per unit of work, the mean of the rounds)",
        ["A unit of work is one gateway iteration and one pgbench transaction (for credit "
         "hold + commit: two requests, one transaction of both statements).",
         "Gateway side: the gateway, the load generator (bench/load_main.cc: 2 threads "
         "multiplexing the connections over epoll) and PostgreSQL; pgbench side: pgbench "
         "(`-j 2`, asynchronous libpq) and PostgreSQL. The machine column is every core's busy "
         "time over the phase (everything that ran), so it can exceed the sum. Measured from "
         "/proc: the processes' utime + stime, PostgreSQL's as its postmaster's live children "
         "plus the ended ones it reaped, the clients' with the shell's `times`."],
        ["workload", "gateway", "load generator", "PostgreSQL (gateway side)",
         "machine (gateway side)", "pgbench", "PostgreSQL (pgbench side)",
         "machine (pgbench side)", "**machine CPU ratio** pgbench/gateway"])
    for name, per_iteration, g, p, rss in workloads:
        gm, pm = mean(g, "machine_cpu_us"), mean(p, "machine_cpu_us")
        lines.append(
            f"| {TITLES.get(name, name)} | {mean(g, 'gateway_cpu_us'):.0f} | "
            f"{mean(g, 'client_cpu_us'):.0f} | {mean(g, 'db_cpu_us'):.0f} | {gm:.0f} | "
            f"{mean(p, 'client_cpu_us'):.0f} | {mean(p, 'db_cpu_us'):.0f} | {pm:.0f} | "
            f"**{ratio(pm, gm):.2f}** |")

# Group commit: how many WAL flushes PostgreSQL made for a unit of work on each
# side. More flushes a unit is more PostgreSQL CPU a unit with the same SQL.
if all("wal_flushes" in x for w in workloads for x in w[2] + w[3]):
    lines += section(
        "WAL flushes per unit of work (the mean of the rounds)",
        ["pg_stat_wal.wal_sync over each phase divided by its units. Under synchronous_commit a "
         "commit waits for a flush of the WAL, and one flush serves every commit waiting then "
         "(group commit): the fewer commits wait together, the more flushes the same work "
         "costs PostgreSQL."],
        ["workload", "gateway side", "pgbench side", "gateway/pgbench"])
    for name, per_iteration, g, p, rss in workloads:
        gw, pw = mean(g, "wal_flushes"), mean(p, "wal_flushes")
        lines.append(f"| {TITLES.get(name, name)} | {gw:.3f} | {pw:.3f} | **{ratio(gw, pw):.2f}** |")

# The reserves' outcomes, counted in the database after each phase
# (bench/run.sh count_outcomes): granted, and of those how many took over a
# lapsed hold; the rest were refused. The mixes differ when the sides' paces do.
if any("granted" in x for w in workloads for x in w[2] + w[3]):
    lines += section(
        "What the reserves came to (shares of the units, the mean of the rounds)",
        ["Counted in `reservations` after each phase. A grant costs PostgreSQL more than a "
         "refusal, and a grant that takes over a lapsed hold more again (it releases the "
         "old reservation too). Each side's mix follows its own pace: the quicker side leaves "
         "more paintings held (more refusals) and more holds lapsed (more take-overs)."],
        ["workload", "gateway: granted", "of which took over", "pgbench: granted",
         "of which took over"])

    def shares(xs, units):
        n = sum(x[units] for x in xs)
        granted = sum(x["granted"] for x in xs)
        took = sum(x["took_over"] for x in xs)
        return f"{granted / n:.1%} | {took / max(granted, 1):.1%}" if n else "– | –"

    for name, per_iteration, g, p, rss in workloads:
        if all("granted" in x for x in g + p):
            lines.append(f"| {TITLES.get(name, name)} | {shares(g, 'iterations')} | "
                         f"{shares(p, 'transactions')} |")

by_name = {w[0]: w for w in workloads}
if "reserve" in by_name:
    g, p = by_name["reserve"][2], by_name["reserve"][3]
    lines += ["", "Reserve through the gateway (publishing on) vs pgbench on the same SQL with "
              f"publishing off, side by side (the `reserve` workload's own phases): "
              f"**{ratio(mean(g, 'tps'), mean(p, 'tps')):.2f}** throughput (rounds "
              f"{round_ratios(g, p)}), p99 {ratio(mean(g, 'p99_ms'), mean(p, 'p99_ms')):.2f}."]
    if "reserve-sql" in by_name:
        p = by_name["reserve-sql"][3]
        lines += ["", "The same against the `reserve-sql` workload's pgbench phases, minutes "
                  "away (how the reports up to 2026-12-07 00:49 computed it): "
                  f"**{ratio(mean(g, 'tps'), mean(p, 'tps')):.2f}**, p99 "
                  f"{ratio(mean(g, 'p99_ms'), mean(p, 'p99_ms')):.2f}."]

if "reserve" in by_name and "reserve-unnamed" in by_name:
    named, unnamed = by_name["reserve"], by_name["reserve-unnamed"]
    lines += ["", "Unnamed statements (PAINTLOCK_DB_STATEMENTS=unnamed) vs named, reserve through "
              f"the gateway: **{ratio(mean(unnamed[2], 'tps'), mean(named[2], 'tps')):.2f}** "
              f"throughput, CPU µs/request {mean(unnamed[2], 'gateway_cpu_us'):.0f} vs "
              f"{mean(named[2], 'gateway_cpu_us'):.0f}; pgbench -M extended vs -M prepared: "
              f"**{ratio(mean(unnamed[3], 'tps'), mean(named[3], 'tps')):.2f}**."]

lines += ["", "## Rounds", ""]
for name, per_iteration, g, p, rss in workloads:
    lines += [f"### {TITLES.get(name, name)}", "",
              f"SQL: `sql/queries/{SQL.get(name, '?')}`; {per_iteration} request(s) per "
              "gateway iteration, one pgbench transaction each.", "",
              "| round | gateway tps | p50 ms | p99 ms | ok | refused | errors | "
              "pgbench tps | p50 ms | p99 ms | failed |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for i, (a, b) in enumerate(zip(g, p), 1):
        lines.append(
            f"| {i} | {a['tps']:.0f} | {a['p50_ms']:.2f} | {a['p99_ms']:.2f} | {a['ok']} | "
            f"{a['refused']} | {a['errors']} | {b['tps']:.0f} | {b['p50_ms']:.2f} | "
            f"{b['p99_ms']:.2f} | {b['failed']} |")
    if name == "reserve-watched":
        lines += ["", "Streams lost (refused or closed early), and MB they were sent, each gateway "
                  "round: " + ", ".join(f"{a['watchers_lost']} lost, {a['watcher_bytes'] / 1e6:.1f} MB"
                                       for a in g)]
    if name == "quota-consume":
        off = sum(1 for a in g if a["ok"] != a["counted"])
        lines += ["", f"Rounds where the gateway's 200s ≠ the counts in quota_usage: {off}"]
    lines.append("")

text = "\n".join(lines)
with open(out, "w") as f:
    f.write(text)
print(text)
