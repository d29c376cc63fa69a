// paintlock's seeded fault campaign (`make chaos SEED=… MINUTES=…`).
//
//   chaos [--seed N] [--minutes M] [--out DIR] [--ha] [--dry-run: print the schedule only]
//
// Starts real processes (a private PostgreSQL, the fake Stripe, two gateways,
// paintlockctl), runs the schedule the seed draws (buyers, webhooks, operator
// actions and faults), heals, waits for every hold to lapse, reconciles, then
// checks the invariants against the database, the fake Stripe's record and
// every answer the clients received. Prints the ledger and writes it to
// DIR/ledger-<seed>.md (every answer to DIR/answers-<seed>.jsonl). Exit 0: every
// invariant held; 1: a violation (the seed and the shortest history are
// printed); 2: the rig could not be set up; 77: --ha without Patroni and etcd installed.
#define DOCTEST_CONFIG_IMPLEMENT
#include <dirent.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

#include "chaos/campaign.h"
#include "chaos/checker.h"
#include "chaos/failover.h"
#include "chaos/rig.h"
#include "chaos/schedule.h"

using namespace paintlock::chaos;

namespace {

std::atomic<bool> g_interrupted{false};

// The longest a gateway may take to acknowledge a write again after a primary kill.
constexpr double kMaxOutageSeconds = 10;
constexpr int kSkipped = 77;  // ctest's SKIP_RETURN_CODE of the HA entry

void OnSignal(int) { g_interrupted = true; }

// Descriptors this process inherited (a `flock` lock, say) must not pass on
// to the daemons it starts: PostgreSQL would hold them long after we end.
void CloseInheritedOnExec() {
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return;
  while (dirent* e = readdir(dir)) {
    const int fd = atoi(e->d_name);
    if (fd > 2 && fd != dirfd(dir)) fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  closedir(dir);
}

// The harness's REQUIRE and FAIL run outside any doctest test here: turn
// them into exceptions that the rig's callers catch.
void HarnessFailure(const doctest::AssertData& ad) {
  throw std::runtime_error(std::string("harness check failed at ") + ad.m_file + ":" +
                           std::to_string(ad.m_line) + ": " + ad.m_expr);
}

std::string ReplayFlags(const CampaignShape& shape) {
  return shape.pgbouncer ? " PGBOUNCER=1" : shape.ha ? " HA=1" : "";
}

std::string Secs(std::int64_t ms) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(3);
  o << "+" << static_cast<double>(ms) / 1000.0 << "s";
  return o.str();
}

std::string Line(const Answer& a) {
  std::string ids;
  if (!a.reservation_id.empty()) ids += " res=" + a.reservation_id.substr(0, 8);
  if (!a.session_id.empty()) ids += " " + a.session_id.substr(0, 20);
  if (!a.hold_id.empty()) ids += " hold=" + a.hold_id.substr(0, 8);
  if (a.token >= 0) ids += " token=" + std::to_string(a.token);
  return Secs(a.started_ms) + ".." + Secs(a.ended_ms) + " " + Describe(a.step) + " → " +
         a.Outcome() + ids;
}

// The events touching what a violation names, with the faults of that span.
std::vector<std::string> History(const Violation& v, const std::vector<Answer>& answers) {
  std::set<std::string> tags(v.tags.begin(), v.tags.end());
  tags.erase("");
  std::vector<const Answer*> touching;
  for (const Answer& a : answers) {
    for (const auto& t : a.tags) {
      if (tags.count(t)) {
        touching.push_back(&a);
        break;
      }
    }
  }
  std::vector<std::string> out;
  if (touching.empty()) return out;
  const std::int64_t from = touching.front()->started_ms - 2000, to = touching.back()->ended_ms;
  for (const Answer& a : answers) {
    const bool fault = IsFault(a.step.kind) || a.step.kind == StepKind::kReconcile;
    const bool in = std::find(touching.begin(), touching.end(), &a) != touching.end();
    if (in || (fault && a.started_ms >= from && a.started_ms <= to)) out.push_back(Line(a));
  }
  return out;
}

std::string RenderLedger(std::uint64_t seed, double minutes, std::size_t steps_within,
                         const CampaignShape& shape, const std::vector<Step>& steps,
                         const std::vector<Answer>& answers, const std::vector<std::string>& settle,
                         const Rig::RelayStats& relay, const std::vector<InvariantResult>& results,
                         const std::string& failover, const std::string& out_dir,
                         bool interrupted) {
  std::ostringstream o;
  o << "# paintlock chaos ledger"
    << (shape.pgbouncer ? " (HA through PgBouncer: Patroni cluster, primary kills)"
        : shape.ha      ? " (HA: Patroni cluster, primary kills)"
                        : "")
    << "\n\n";
  o << "seed " << seed << ", " << minutes << " min; schedule of " << steps.size() << " steps ("
    << steps_within << " within the run), fingerprint " << std::hex << Fingerprint(steps)
    << std::dec << "\n";
  o << "replay: make chaos SEED=" << seed << " MINUTES=" << minutes << ReplayFlags(shape)
    << "  (the same steps at the same times; the wall-clock interleaving of concurrent "
       "clients may differ)\n\n";

  std::map<std::string, std::map<std::string, int>> ops, faults, ctl;
  std::map<std::string, int> scheduled_faults;
  for (const Step& s : steps) {
    if (IsFault(s.kind)) scheduled_faults[StepName(s.kind)]++;
  }
  for (const Answer& a : answers) {
    auto& table = IsFault(a.step.kind) ? faults : IsOperator(a.step.kind) ? ctl : ops;
    table[StepName(a.step.kind)][a.Outcome()]++;
  }
  auto print = [&](const std::string& title,
                   const std::map<std::string, std::map<std::string, int>>& t) {
    o << "## " << title << "\n";
    int total = 0;
    for (const auto& [kind, outcomes] : t) {
      int n = 0;
      std::string list;
      for (const auto& [outcome, count] : outcomes) {
        n += count;
        list += (list.empty() ? "" : ", ") + outcome + " ×" + std::to_string(count);
      }
      total += n;
      o << "  " << kind << std::string(kind.size() < 22 ? 22 - kind.size() : 1, ' ') << n << "  ("
        << list << ")\n";
    }
    o << "  total " << total << "\n\n";
  };
  print("operations and answers", ops);
  print("operator actions (paintlockctl)", ctl);
  print("faults injected, by kind", faults);
  o << "webhook relay: " << relay.forwarded << " forwarded, " << relay.delayed
    << " held back (reordered), " << relay.unanswered << " found no gateway\n\n";
  o << "## settling\n";
  for (const auto& s : settle) o << "  " << s << "\n";
  o << "\n" << failover << "## invariants\n";
  int violations = 0;
  for (const auto& r : results) {
    violations += static_cast<int>(r.violations.size());
    o << "  " << (r.violations.empty() ? "PASS" : "FAIL") << "  " << r.name << "  (" << r.checked
      << " checked"
      << (r.violations.empty() ? "" : ", " + std::to_string(r.violations.size()) + " violations")
      << ")\n";
  }
  if (violations) {
    o << "\n## violations (seed " << seed << ")\n";
    // The first ten with their histories, then once more without, last: CI
    // prints a failed phase's last lines again.
    std::string in_short;
    int shown = 0;
    for (const auto& r : results) {
      for (const auto& v : r.violations) {
        if (++shown > 10) break;
        const std::string line = "- " + r.name.substr(0, 2) + " " + v.detail + "\n";
        in_short += line;
        o << "\n" << line;
        const auto history = History(v, answers);
        for (size_t i = 0; i < history.size() && i < 60; ++i) o << "    " << history[i] << "\n";
        if (history.size() > 60) o << "    … " << history.size() - 60 << " more\n";
      }
    }
    if (violations > 10)
      o << "\n(" << violations - 10 << " more violations; see the answers file)\n";
    o << "\n## violations, in short\n" << in_short;
  }
  // An interrupted run checked only the steps it started: it passes nothing.
  o << "\nresult: "
    << (violations    ? "VIOLATED"
        : interrupted ? "INTERRUPTED: " + std::to_string(answers.size()) + " of " +
                            std::to_string(steps_within) +
                            " steps answered, no violation among them; the campaign is incomplete"
                      : "every invariant held")
    << " (seed " << seed << "); every answer: " << out_dir << "/answers-" << seed << ".jsonl\n";
  return o.str();
}

void WriteAnswers(const std::string& path, const std::vector<Answer>& answers) {
  std::ofstream out(path);
  for (const Answer& a : answers) {
    out << nlohmann::json{{"step", a.step.index},
                          {"what", Describe(a.step)},
                          {"started_ms", a.started_ms},
                          {"ended_ms", a.ended_ms},
                          {"outcome", a.Outcome()},
                          {"body", a.body},
                          {"reservation_id", a.reservation_id},
                          {"session_id", a.session_id},
                          {"hold_id", a.hold_id},
                          {"token", a.token}}
               .dump()
        << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t seed = std::random_device{}();
  seed = (seed << 32) ^ std::random_device{}();
  double minutes = 2;
  std::string out_dir = paintlock::testing::BuildDir() + "/chaos";
  bool dry_run = false;
  bool ha = false, pgbouncer = false;
  const char* usage =
      "usage: paintlock-chaos [--seed N] [--minutes M] [--out DIR] [--ha] [--pgbouncer]\n"
      "                       [--dry-run]\n"
      "\n"
      "A seeded fault campaign: a private PostgreSQL, the fake Stripe and two gateways,\n"
      "buyers, webhooks and operator actions interleaved with the faults the seed draws;\n"
      "then the invariant checker. Writes DIR/ledger-SEED.md and DIR/answers-SEED.jsonl.\n"
      "\n"
      "  --seed N     the schedule's seed (default: random, printed); the same seed\n"
      "               replays the same steps at the same times\n"
      "  --minutes M  how long the schedule runs, 0 < M <= 60 (default 2)\n"
      "  --out DIR    where the ledger goes (default: build/chaos)\n"
      "  --ha         PostgreSQL is an etcd + 3 Patroni nodes cluster (fixtures/ha/cluster.sh)\n"
      "               that gateways and paintlockctl reach through its multi-host URL; the\n"
      "               faults kill its primary node (SIGKILL) and bring the node back; the\n"
      "               ledger prints each gateway's outage and what was acknowledged and kept.\n"
      "               Fails when a gateway needs more than 10 s to acknowledge a write again\n"
      "  --pgbouncer  --ha with the gateways' pools through PgBouncer (transaction pooling,\n"
      "               fixtures/ha/pgbouncer.sh; PAINTLOCK_DB_STATEMENTS=unnamed) and their\n"
      "               LISTEN on the multi-host URL (PAINTLOCK_LISTEN_DATABASE_URL)\n"
      "  --dry-run    print the schedule and exit\n"
      "\n"
      "Exit 0: every invariant held; 1: a violation (seed and history printed), or the\n"
      "run was interrupted (SIGINT, SIGTERM) and checked only the steps it started;\n"
      "2: bad usage, or the rig could not be set up; 77: --ha, but Patroni or etcd\n"
      "is not installed (fixtures/deps.sh --ha).\n";
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::cout << usage;
      return 0;
    }
    if (flag == "--dry-run") {
      dry_run = true;
      continue;
    }
    if (flag == "--ha" || flag == "--pgbouncer") {
      ha = true;
      pgbouncer = pgbouncer || flag == "--pgbouncer";
      continue;
    }
    if (flag != "--seed" && flag != "--minutes" && flag != "--out") {
      std::cerr << "chaos: unknown option " << flag << "\n" << usage;
      return 2;
    }
    if (i + 1 >= argc) {
      std::cerr << "chaos: " << flag << " needs a value\n";
      return 2;
    }
    const std::string value = argv[++i];
    try {
      size_t used = 0;
      if (flag == "--seed" && !value.empty()) {
        seed = std::stoull(value, &used);
        if (used != value.size()) throw std::invalid_argument(value);
      } else if (flag == "--minutes") {
        minutes = std::stod(value, &used);
        if (used != value.size()) throw std::invalid_argument(value);
      } else if (flag == "--out") {
        out_dir = value;
      }
    } catch (const std::exception&) {
      std::cerr << "chaos: " << flag << " takes a number, not '" << value << "'\n";
      return 2;
    }
  }
  if (minutes <= 0 || minutes > 60) {
    std::cerr << "chaos: --minutes must be in (0, 60]\n";
    return 2;
  }
  const std::int64_t duration_ms = static_cast<std::int64_t>(minutes * 60000);
  CampaignShape shape = ShapeFor(duration_ms);
  shape.ha = ha;
  shape.pgbouncer = pgbouncer;
  std::cout << "chaos: seed " << seed << ", " << minutes << " min (replay: make chaos SEED=" << seed
            << " MINUTES=" << minutes << ReplayFlags(shape) << ")" << std::endl;

  CloseInheritedOnExec();
  doctest::Context context;
  context.setAsDefaultForAssertsOutOfTestCases();
  context.setAssertHandler(HarnessFailure);
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  signal(SIGPIPE, SIG_IGN);
  mkdir(out_dir.c_str(), 0755);

  const std::vector<Step> steps = MakeSchedule(seed, duration_ms, shape);

  if (dry_run) {
    // The schedule alone, for comparing two seeds or checking a replay.
    for (const Step& s : steps) std::cout << s.at_ms << " " << Describe(s) << "\n";
    std::cout << steps.size() << " steps, fingerprint " << std::hex << Fingerprint(steps)
              << std::dec << std::endl;
    return 0;
  }
  if (ha && paintlock::testing::RunToCompletion(
                {"/bin/sh", "-c", "command -v patroni && command -v etcd"}, {})
                    .exit_code != 0) {
    std::cout << "chaos: --ha needs patroni and etcd (fixtures/deps.sh --ha): skipped" << std::endl;
    return kSkipped;
  }
  std::unique_ptr<Rig> rig;
  try {
    rig = std::make_unique<Rig>(out_dir + "/run-" + std::to_string(getpid()), shape);
  } catch (const std::exception& e) {
    std::cerr << "chaos: the rig could not be set up: " << e.what() << "\n";
    return 2;
  } catch (...) {  // a harness FAIL: doctest's TestFailureException
    std::cerr << "chaos: the rig could not be set up: a harness check failed\n";
    return 2;
  }
  Campaign campaign(*rig, steps, shape, g_interrupted);
  std::vector<std::string> settle;
  CheckInput in;
  std::vector<InvariantResult> results;
  std::string failover;
  Rig::RelayStats relay;
  try {
    campaign.Run(duration_ms);
    settle = campaign.Settle();
    in.database_url = rig->DatabaseUrl();
    in.invariants_sql = paintlock::testing::InvariantsSql();
    // The fake Stripe's records; its being down fails the campaign (exit 2), never a check.
    auto records = [&rig](const std::string& path) {
      HttpAnswer a = Call(rig->StripeBase(), "GET", path);
      return StripeRecords(path, a.status, std::move(a.json));
    };
    in.stripe_sessions = records("/_test/sessions");
    in.stripe_refunds = records("/_test/refunds");
    in.stripe_events = records("/_test/events");
    in.answers = campaign.ledger().Done();
    in.sampled = campaign.sampled_violations();
    in.sampled_runs = campaign.sampled_runs();
    in.shape = shape;
    results = CheckEverything(in);
    if (ha) {
      FailoverReport report = CheckFailover(in, kMaxOutageSeconds, rig->NodeUrls());
      failover = report.Render(kMaxOutageSeconds);
      results.push_back(std::move(report.result));
    }
    relay = rig->relay_stats();
  } catch (const std::exception& e) {
    // Whatever went wrong, every process still stops (below).
    std::cerr << "chaos: the campaign failed (seed " << seed << "): " << e.what() << "\n";
    rig.reset();
    return 2;
  } catch (...) {  // a harness FAIL: doctest's TestFailureException
    std::cerr << "chaos: the campaign failed (seed " << seed << "): a harness check failed\n";
    rig.reset();
    return 2;
  }
  rig.reset();  // every process stops here, the cluster included

  const std::string ledger =
      RenderLedger(seed, minutes, StepsWithin(steps, duration_ms), shape, steps, in.answers, settle,
                   relay, results, failover, out_dir, g_interrupted);
  std::cout << ledger << std::flush;
  std::ofstream(out_dir + "/ledger-" + std::to_string(seed) + ".md") << ledger;
  WriteAnswers(out_dir + "/answers-" + std::to_string(seed) + ".jsonl", in.answers);
  for (const auto& r : results) {
    if (!r.violations.empty()) return 1;
  }
  return g_interrupted ? 1 : 0;
}
