#include "tests/support/harness.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "admin/catalog_file.h"
#include "base/loopback.h"
#include "locks/catalogue.h"
#include "locks/database.h"
#include "locks/migrator.h"
#include "webhooks/signature.h"

extern char** environ;

namespace paintlock::testing {

namespace {

std::string Env(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string RandomSuffix() {
  static std::mt19937_64 rng(std::random_device{}() ^ static_cast<unsigned>(getpid()));
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::string s;
  for (int i = 0; i < 10; ++i) s.push_back("abcdefghijklmnopqrstuvwxyz0123456789"[rng() % 36]);
  return s;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "postgresql:///postgres?host=…" → the same URL for database `name`.
std::string WithDatabase(const std::string& admin, const std::string& name) {
  static const std::regex re(R"(^(postgres(?:ql)?://[^/]*/)([^?]*)(.*)$)");
  std::smatch m;
  if (std::regex_match(admin, m, re)) return std::string(m[1]) + name + std::string(m[3]);
  return admin + " dbname=" + name;
}

// build/test-logs/<name>-<test pid>-<random>: where a process's output goes.
std::string LogStem(const std::string& name) {
  const std::string dir = BuildDir() + "/test-logs";
  mkdir(dir.c_str(), 0755);
  return dir + "/" + name + "-" + std::to_string(getpid()) + "-" + RandomSuffix();
}

int OpenLog(const std::string& path) {
  return open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

// The logs of the processes the running test case started. When it fails,
// their last lines are printed after doctest's report, so that a failure seen
// only in CI's output (ctest --output-on-failure) says what the gateway saw.
// Printed at the test case's end: the processes have exited by then and
// written everything (the gateway's log writer batches lines).
std::mutex g_case_logs_mu;
std::vector<std::string> g_case_logs;

void NoteCaseLog(const std::string& path) {
  // The chaos campaign runs this harness with no test case to report on.
  if (!doctest::is_running_in_test) return;
  std::lock_guard<std::mutex> lock(g_case_logs_mu);
  g_case_logs.push_back(path);
}

void PrintLogTail(const std::string& path, std::size_t lines) {
  std::ifstream in(path);
  std::deque<std::string> tail;
  for (std::string line; std::getline(in, line);) {
    tail.push_back(line.size() > 600 ? line.substr(0, 600) + " [...]" : line);
    if (tail.size() > lines) tail.pop_front();
  }
  std::cerr << "----- last " << tail.size() << " lines of " << path << "\n";
  for (const auto& line : tail) std::cerr << line << "\n";
}

struct ProcessLogsOnFailure : doctest::IReporter {
  explicit ProcessLogsOnFailure(const doctest::ContextOptions&) {}
  void test_case_start(const doctest::TestCaseData&) override {
    std::lock_guard<std::mutex> lock(g_case_logs_mu);
    g_case_logs.clear();
  }
  void test_case_end(const doctest::CurrentTestCaseStats& stats) override {
    if (stats.testCaseSuccess) return;
    std::lock_guard<std::mutex> lock(g_case_logs_mu);
    for (const auto& path : g_case_logs) PrintLogTail(path, 40);
  }
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};
REGISTER_LISTENER("process-logs", 1, ProcessLogsOnFailure);

// A waitpid status as a shell shows it: the exit code, or 128+signal.
int ExitCodeOf(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

// The one way the harness starts a program: argv[0] a path, `env` over the
// test's environment (an empty value stays set, empty), stdout and stderr on
// out_fd and err_fd (they may be the same), no signal blocked. Everything the
// child needs is built before fork(): after it, in a threaded process, the
// child may only exec. Closes both descriptors in the parent; returns the
// child's pid, or -1 when fork fails.
pid_t Launch(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
             int out_fd, int err_fd) {
  std::map<std::string, std::string> merged;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    merged[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : env) merged[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : merged) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  const pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(out_fd);
  if (err_fd != out_fd) close(err_fd);
  return pid;
}

}  // namespace

std::string AdminUrl() {
  const char* v = std::getenv("PAINTLOCK_TEST_ADMIN_URL");
  if (!v || !*v) {
    FAIL("PAINTLOCK_TEST_ADMIN_URL is not set: run the tests with `make test`");
  }
  return v;
}

std::string BuildDir() { return Env("PAINTLOCK_BUILD_DIR", PAINTLOCK_BUILD_DIR); }
std::string SourceDir() { return Env("PAINTLOCK_SOURCE_DIR", PAINTLOCK_SOURCE_DIR); }

namespace {

// The kernel's ephemeral ports: what bind(0) and outgoing connections are
// given. Ports handed out below never come from it.
std::pair<int, int> EphemeralPorts() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 32768, high = 60999;
  range >> low >> high;
  return {low, high};
}

// Whether nothing is bound to 127.0.0.1:port (no SO_REUSEADDR: a port with
// connections lingering in TIME_WAIT counts as taken too).
bool LoopbackPortFree(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  const sockaddr_in addr = base::LoopbackAddress(port);
  const bool free = bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return free;
}

}  // namespace

// A port is handed out a while before anything listens on it: a fake Stripe
// is told the gateway's webhook address before the gateway starts. So that
// nothing else takes it meanwhile, the port is
//  - outside the ephemeral range, which bind(0) (every fake Stripe) and every
//    outgoing connection draw from;
//  - not handed to another test process within two minutes: the ports handed
//    out are kept, under an exclusive lock, in a file all test processes share.
// Our servers bind without SO_REUSEPORT (base/http_server.h), so if anything
// still took the port, the gateway fails to start and says so; it never
// shares the port.
int FreeLoopbackPort() {
  constexpr std::time_t kKept = 120;
  const std::string registry = "/tmp/paintlock-test-ports";
  const int lock = open((registry + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  REQUIRE_MESSAGE(lock >= 0, "cannot open " << registry << ".lock");
  REQUIRE(flock(lock, LOCK_EX) == 0);
  const std::time_t now = std::time(nullptr);
  std::map<int, std::time_t> handed_out;
  {
    std::ifstream in(registry);
    int port = 0;
    std::time_t at = 0;
    while (in >> port >> at) {
      if (now - at < kKept) handed_out[port] = at;
    }
  }
  const auto [ephemeral_low, ephemeral_high] = EphemeralPorts();
  const bool below = ephemeral_low > 11000;
  const int first = below ? 10000 : ephemeral_high + 1;
  const int last = below ? ephemeral_low - 1 : 65535;
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> pick(first, last);
  int port = 0;
  for (int attempt = 0; attempt < 1000 && port == 0; ++attempt) {
    const int candidate = pick(random);
    if (!handed_out.count(candidate) && LoopbackPortFree(candidate)) port = candidate;
  }
  if (port != 0) {
    handed_out[port] = now;
    std::ofstream out(registry, std::ios::trunc);
    for (const auto& [p, at] : handed_out) out << p << ' ' << at << '\n';
  }
  flock(lock, LOCK_UN);
  close(lock);
  REQUIRE_MESSAGE(port != 0, "no free loopback port in " << first << "-" << last);
  return port;
}

namespace {

// Every test database is a copy of one migrated template: copying it costs
// about 0.25 s less than applying every migration, in each of the suite's
// hundreds of tests. The first test of a run builds it, under an advisory lock
// that every test process takes, as t_template_building renamed when complete,
// so no test copies a half-migrated one. run-tests.sh drops it with the other
// t_ databases at the start of a run, so each run migrates afresh; a template
// older than this binary's migrations is topped up on each copy (below).
const std::string& MigratedTemplate() {
  static const std::string name = "t_template";
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string lock_key = "hashtext('paintlock test template')";
    pqxx::connection admin(AdminUrl());
    pqxx::nontransaction n(admin);
    n.exec("SELECT pg_advisory_lock(" + lock_key + ")");
    if (n.exec("SELECT 1 FROM pg_database WHERE datname = " + n.quote(name)).empty()) {
      const std::string building = name + "_building";
      n.exec("DROP DATABASE IF EXISTS " + building + " WITH (FORCE)");
      n.exec("CREATE DATABASE " + building);
      std::string error;
      REQUIRE_MESSAGE(locks::ApplyMigrations(WithDatabase(AdminUrl(), building), nullptr, &error),
                      error);
      n.exec("ALTER DATABASE " + building + " RENAME TO " + name);
    }
    n.exec("SELECT pg_advisory_unlock(" + lock_key + ")");
  });
  return name;
}

}  // namespace

TestDatabase::TestDatabase(const std::map<std::string, long long>& paintings) {
  name_ = "t_" + RandomSuffix();
  {
    pqxx::connection admin(AdminUrl());
    pqxx::nontransaction n(admin);
    n.exec("CREATE DATABASE " + name_ + " TEMPLATE " + MigratedTemplate());
  }
  url_ = WithDatabase(AdminUrl(), name_);
  std::string error;
  // Nothing to do unless the template predates a migration this binary has.
  REQUIRE_MESSAGE(locks::ApplyMigrations(url_, nullptr, &error), error);

  std::vector<locks::CatalogueEntry> entries;
  if (paintings.empty()) {
    std::vector<std::string> problems;
    const std::string path = SourceDir() + "/fixtures/catalog.json";
    REQUIRE(admin::ParseCatalogFile(path, ReadFile(path), &entries, &problems));
  } else {
    for (const auto& [id, price] : paintings)
      entries.push_back({id, "Painting " + id, price, "eur"});
  }
  locks::DatabaseOptions options;
  options.url = url_;
  options.pool_size = 1;
  auto db = locks::Database::Open(options, &error);
  REQUIRE_MESSAGE(db, error);
  locks::Catalogue catalogue(*db);
  auto report = catalogue.Import(entries, false);
  REQUIRE(std::holds_alternative<locks::ImportReport>(report));
}

TestDatabase::~TestDatabase() {
  try {
    pqxx::connection admin(AdminUrl());
    pqxx::nontransaction n(admin);
    n.exec("DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
  } catch (const std::exception&) {
    // A leftover test database is harmless; the cluster is private.
  }
}

pqxx::result TestDatabase::Exec(const std::string& sql) {
  pqxx::connection c(url_);
  pqxx::nontransaction n(c);
  return n.exec(sql);
}

std::string TestDatabase::Scalar(const std::string& sql) {
  pqxx::result r = Exec(sql);
  if (r.empty() || r[0][0].is_null()) return "";
  return r[0][0].as<std::string>();
}

std::string TestDatabase::HeldOn(const std::string& painting) {
  return Scalar(
      "SELECT count(*) FROM reservations r JOIN reservation_items i ON i.reservation_id = r.id "
      "WHERE i.painting_id = '" +
      painting + "' AND r.state = 'held'");
}

std::string TestDatabase::ReservationsOf(const std::string& painting) {
  return Scalar("SELECT count(*) FROM reservation_items WHERE painting_id = '" + painting + "'");
}

std::string TestDatabase::LockWaiters() {
  return Scalar(
      "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
      "AND wait_event_type = 'Lock'");
}

std::string InvariantsSql() { return ReadFile(SourceDir() + "/sql/checks/invariants.sql"); }

std::vector<std::string> TestDatabase::InvariantViolations() {
  std::vector<std::string> out;
  for (const auto& row : Exec(InvariantsSql())) {
    out.push_back(row[0].as<std::string>() + ": " + row[1].as<std::string>(""));
  }
  return out;
}

void ReportStatisticsNow(pqxx::connection_base& c) {
  pqxx::nontransaction n(c);
  n.exec("SELECT pg_stat_force_next_flush()");
  n.commit();
}

void CheckInvariants(TestDatabase& db) {
  const auto violations = db.InvariantViolations();
  std::string all;
  for (const auto& v : violations) all += "\n  " + v;
  CHECK_MESSAGE(violations.empty(), "invariants violated:" << all);
}

Process::Process(const std::string& name, const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env) {
  log_path_ = LogStem(name) + ".log";
  const int fd = OpenLog(log_path_);
  REQUIRE(fd >= 0);
  NoteCaseLog(log_path_);
  pid_ = Launch(argv, env, fd, fd);
  REQUIRE(pid_ >= 0);
}

Process::~Process() {
  if (!Running()) return;
  Signal(SIGTERM);
  if (Wait(std::chrono::seconds(5)) < 0) {
    Signal(SIGKILL);
    Wait(std::chrono::seconds(5));
  }
}

bool Process::Running() {
  if (exited_) return false;
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exited_ = true;
    status_ = ExitCodeOf(status);
    return false;
  }
  return true;
}

void Process::Signal(int sig) {
  if (Running()) kill(pid_, sig);
}

int Process::Wait(std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (Running()) {
    if (std::chrono::steady_clock::now() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status_;
}

std::string Process::Log() const { return ReadFile(log_path_); }

std::vector<nlohmann::json> Process::Events(const std::string& event) const {
  std::vector<nlohmann::json> found;
  std::istringstream lines(Log());
  std::string line;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("event", "") == event) found.push_back(std::move(j));
  }
  return found;
}

int Process::WaitForPort(std::chrono::seconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    for (const auto& line : Events("listening")) {
      if (line.contains("port")) return line["port"].get<int>();
    }
    if (!Running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  FAIL("process did not start listening; its log (" << log_path_ << "):\n" << Log());
  return -1;
}

FakeStripe::FakeStripe(const std::string& webhook_url) {
  std::vector<std::string> argv = {BuildDir() + "/fake-stripe", "--listen", "127.0.0.1:0",
                                   "--webhook-secret", kWebhookSecret};
  if (!webhook_url.empty()) {
    argv.push_back("--webhook-url");
    argv.push_back(webhook_url);
  }
  process_ = std::make_unique<Process>("fake-stripe", argv, std::map<std::string, std::string>{});
  port_ = process_->WaitForPort();
}

nlohmann::json FakeStripe::Control(const std::string& method, const std::string& path,
                                   const nlohmann::json& body) {
  Reply r = Request(base(), method, path, method == "GET" ? "" : body.dump());
  REQUIRE_MESSAGE(r.status >= 200, "fake Stripe control " << path << " gave no answer");
  REQUIRE_MESSAGE(r.status < 300,
                  "fake Stripe control " << path << " → " << r.status << " " << r.body);
  return r.json;
}

Gateway::Gateway(const TestDatabase& db, const std::string& stripe_base, GatewayOptions options) {
  port_ = options.port ? options.port : FreeLoopbackPort();
  std::map<std::string, std::string> env = {
      {"DATABASE_URL", db.url()},
      {"PAINTLOCK_LISTEN", "127.0.0.1:" + std::to_string(port_)},
      {"STRIPE_SECRET_KEY", kStripeKey},
      {"STRIPE_API_BASE", stripe_base},
      {"STRIPE_WEBHOOK_SECRET", kWebhookSecret},
      {"PAINTLOCK_API_KEY", kApiKey},
      {"PAINTLOCK_HTTP_THREADS", "32"},
      {"PAINTLOCK_DB_POOL", "8"},
      {"STRIPE_TIMEOUT_MS", "2000"},
      // Tests assert outcomes, not latency. With the production bounds (1 s
      // lock wait, 5 s statement), one commit stalled on a busy disk (the CI
      // machine's fsync can take seconds) turns every request queued on its row
      // into an honest 503 and an exact count into a timing result. A test of
      // the bounds themselves sets them (truthful_answers_test, idempotency_test).
      {"PAINTLOCK_DB_LOCK_TIMEOUT_MS", "20000"},
      {"PAINTLOCK_DB_STATEMENT_TIMEOUT_MS", "30000"},
  };
  for (const auto& [k, v] : options.env) env[k] = v;
  process_ = std::make_unique<Process>("gateway",
                                       std::vector<std::string>{BuildDir() + "/paintlock"}, env);
  process_->WaitForPort();
}

std::string Gateway::LogUpToNow() {
  static std::atomic<int> marks{0};
  const std::string mark = "log-up-to-now-" + std::to_string(++marks);
  const Reply health = Request(base(), "GET", "/healthz", "", "", {{"X-Request-Id", mark}});
  if (health.status != 200) throw std::runtime_error("GET /healthz for the log: no 200");
  const std::string line = "\"request_id\":\"" + mark + "\"";
  std::string log;
  if (!Eventually([&] {
        log = process_->Log();
        return log.find(line) != std::string::npos;
      })) {
    throw std::runtime_error("the gateway never logged request " + mark);
  }
  return log;
}

std::string Reply::Header(const std::string& name) const {
  auto it = headers.find(name);
  return it == headers.end() ? "" : it->second;
}

Reply Request(const std::string& base, const std::string& method, const std::string& path,
              const std::string& body, const std::string& content_type,
              const httplib::Headers& headers) {
  httplib::Client client(base);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(30, 0);
  REQUIRE((method == "GET" || method == "POST" || method == "DELETE"));
  httplib::Result res = method == "GET" ? client.Get(path.c_str(), headers)
                        : method == "POST"
                            ? client.Post(path.c_str(), headers, body, content_type.c_str())
                            : client.Delete(path.c_str(), headers);
  Reply reply;
  if (!res) return reply;
  reply.status = res->status;
  reply.body = res->body;
  reply.headers = res->headers;
  reply.json = nlohmann::json::parse(res->body, nullptr, false);
  if (reply.json.is_discarded()) reply.json = nullptr;
  return reply;
}

Reply PostJson(const std::string& base, const std::string& path, const nlohmann::json& body,
               const httplib::Headers& headers) {
  return Request(base, "POST", path, body.dump(), "application/json", headers);
}

Reply DeliverSigned(const std::string& gateway_base, const nlohmann::json& event) {
  const std::string body = event.dump();
  const std::string header = webhooks::SignatureHeader(kWebhookSecret, std::time(nullptr), body);
  return Request(gateway_base, "POST", "/v1/webhooks/stripe", body, "application/json",
                 {{"Stripe-Signature", header}});
}

httplib::Headers ApiKeyHeader() { return {{"Authorization", std::string("Bearer ") + kApiKey}}; }

nlohmann::json CompletedProcess::Json() const {
  nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

CompletedProcess RunToCompletion(const std::vector<std::string>& argv,
                                 const std::map<std::string, std::string>& env,
                                 std::chrono::seconds timeout) {
  REQUIRE(!argv.empty());
  const std::string stem = LogStem(argv[0].substr(argv[0].find_last_of('/') + 1));
  const std::string out_path = stem + ".out", err_path = stem + ".err";
  const int out_fd = OpenLog(out_path);
  const int err_fd = OpenLog(err_path);
  REQUIRE(out_fd >= 0);
  REQUIRE(err_fd >= 0);
  const pid_t pid = Launch(argv, env, out_fd, err_fd);
  REQUIRE(pid >= 0);

  CompletedProcess done;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      done.exit_code = ExitCodeOf(status);
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      done.exit_code = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  done.out = ReadFile(out_path);
  done.err = ReadFile(err_path);
  return done;
}

void RunConcurrently(int n, const std::function<void(int)>& fn) {
  std::mutex mu;
  std::condition_variable cv;
  bool go = false;
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return go; });
      }
      fn(i);
    });
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    go = true;
  }
  cv.notify_all();
  for (auto& t : threads) t.join();
}

bool Eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

}  // namespace paintlock::testing
