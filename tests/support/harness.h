// The integration-test harness: a fresh PostgreSQL database per test, and
// real fake-stripe and paintlock processes on loopback ports.
//
// Tests run against the private cluster `make test` starts; its admin URL
// comes in PAINTLOCK_TEST_ADMIN_URL. Binaries come from PAINTLOCK_BUILD_DIR.
// Every process logs to build/test-logs/<name>-<test pid>-<random>.log; a
// failing test prints the path of the log that tells its story.
#pragma once

#include <httplib.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

namespace paintlock::testing {

// A database created for one test from the migrations, with the sample
// catalogue (or the given paintings) imported; dropped at the end.
class TestDatabase {
 public:
  // `paintings`: id → price_minor (currency eur). Empty: fixtures/catalog.json.
  explicit TestDatabase(const std::map<std::string, long long>& paintings = {});
  ~TestDatabase();
  const std::string& url() const { return url_; }
  const std::string& name() const { return name_; }  // the database's
  // Runs one statement on a fresh connection; for assertions and ageing rows.
  pqxx::result Exec(const std::string& sql);
  // The first column of the first row, as text ("" for NULL).
  std::string Scalar(const std::string& sql);
  // How many held reservations hold `painting`, as text.
  std::string HeldOn(const std::string& painting);
  // How many reservations, in any state, have ever included `painting`, as text.
  std::string ReservationsOf(const std::string& painting);
  // How many backends of this database wait for a lock, as text.
  std::string LockWaiters();
  // Every invariant of DESIGN.md that SQL can see; empty when all hold.
  std::vector<std::string> InvariantViolations();

 private:
  std::string name_;
  std::string url_;
};

// The text of sql/checks/invariants.sql: one row per violated invariant.
std::string InvariantsSql();

// CHECKs that DESIGN.md's invariants hold (sql/checks/invariants.sql), naming
// every violation. Integration tests end with it.
void CheckInvariants(TestDatabase& db);

// Has c's backend report its statistics when it is next idle, which empties
// its unreported counts: pg_stat_get_xact_* on c then count only what c runs
// after this call (a backend reports on its own at most once a second).
void ReportStatisticsNow(pqxx::connection_base& c);

std::string AdminUrl();
std::string BuildDir();
std::string SourceDir();
// A loopback port nothing listens on, kept from other tests for two minutes
// (harness.cc says how): for a server started after it is handed out.
int FreeLoopbackPort();

// A child process whose stdout/stderr go to a log file.
class Process {
 public:
  Process(const std::string& name, const std::vector<std::string>& argv,
          const std::map<std::string, std::string>& env);
  ~Process();  // SIGTERM, then SIGKILL after 5 s
  // Waits for the JSON log line {"event":"listening",...,"port":N}.
  int WaitForPort(std::chrono::seconds timeout = std::chrono::seconds(20));
  void Signal(int sig);
  // Waits for exit; returns the exit status (or 128+signal), -1 on timeout.
  int Wait(std::chrono::seconds timeout = std::chrono::seconds(20));
  bool Running();
  std::string Log() const;  // everything it printed so far
  // The JSON log lines whose "event" is `event`, parsed, in the order written.
  std::vector<nlohmann::json> Events(const std::string& event) const;
  const std::string& log_path() const { return log_path_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
  std::string log_path_;
};

constexpr const char* kApiKey = "test-api-key-0123456789";
constexpr const char* kWebhookSecret = "whsec_test_paintlock_secret";
constexpr const char* kStripeKey = "sk_test_paintlock";
// A Stripe address nothing answers on (the discard port), for a gateway whose
// test never reaches Stripe.
constexpr const char* kNoStripe = "http://127.0.0.1:9";

class FakeStripe {
 public:
  // Delivers webhooks to `webhook_url` (may be empty).
  explicit FakeStripe(const std::string& webhook_url = "");
  int port() const { return port_; }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // POST/GET on the /_test control API (JSON); returns the parsed body.
  nlohmann::json Control(const std::string& method, const std::string& path,
                         const nlohmann::json& body = nlohmann::json::object());
  nlohmann::json Sessions() { return Control("GET", "/_test/sessions"); }
  nlohmann::json Requests() { return Control("GET", "/_test/requests"); }
  Process& process() { return *process_; }

 private:
  std::unique_ptr<Process> process_;
  int port_ = 0;
};

struct GatewayOptions {
  std::map<std::string, std::string> env;  // extra or overriding variables
  int port = 0;                            // 0: pick a free one
};

class Gateway {
 public:
  Gateway(const TestDatabase& db, const std::string& stripe_base, GatewayOptions options = {});
  int port() const { return port_; }
  std::string base() const { return "http://127.0.0.1:" + std::to_string(port_); }
  Process& process() { return *process_; }
  // Everything the gateway has logged up to now. Its log lines reach the file
  // from a writer thread, up to 100 ms after they were logged (base/log.cc),
  // so process().Log() may not hold them yet, and a check that a line is
  // absent could pass for that reason alone. This asks GET /healthz with a
  // request id of its own and waits for that request's access line: the
  // writer keeps the order, so every line logged before is then in the file.
  // Needs the info level (the default); throws if the line never comes.
  std::string LogUpToNow();

 private:
  std::unique_ptr<Process> process_;
  int port_ = 0;
};

// A gateway and a fake Stripe that delivers its webhooks to it.
struct Shop {
  explicit Shop(TestDatabase& db, std::map<std::string, std::string> env = {})
      : port(FreeLoopbackPort()),
        stripe("http://127.0.0.1:" + std::to_string(port) + "/v1/webhooks/stripe"),
        gateway(db, stripe.base(), GatewayOptions{env, port}) {}
  int port;
  FakeStripe stripe;
  Gateway gateway;
};

struct Reply {
  int status = 0;       // 0: no answer
  nlohmann::json json;  // null unless the body is JSON
  std::string body;
  httplib::Headers headers;
  std::string Header(const std::string& name) const;
};

// One request on a fresh connection (tests that need concurrency call these
// from many threads).
Reply Request(const std::string& base, const std::string& method, const std::string& path,
              const std::string& body = "", const std::string& content_type = "application/json",
              const httplib::Headers& headers = {});
Reply PostJson(const std::string& base, const std::string& path, const nlohmann::json& body,
               const httplib::Headers& headers = {});
httplib::Headers ApiKeyHeader();
// POSTs `event` to the gateway's webhook route, signed now with kWebhookSecret
// as Stripe would sign it.
Reply DeliverSigned(const std::string& gateway_base, const nlohmann::json& event);

// How a command that ran to completion ended, and what it printed on each
// stream (kept apart, so a test can tell a table from an error line).
struct CompletedProcess {
  int exit_code = -1;  // 128+signal when killed; -1 when it overran its timeout (then killed)
  std::string out;
  std::string err;
  // stdout parsed as JSON; null when it is not JSON.
  nlohmann::json Json() const;
};

// Runs argv (argv[0] a path) to completion with `env` added to the test's
// environment (an empty value unsets a variable for programs that treat
// empty as unset). Both streams also stay in build/test-logs. Thread-safe:
// tests run many at once.
CompletedProcess RunToCompletion(const std::vector<std::string>& argv,
                                 const std::map<std::string, std::string>& env,
                                 std::chrono::seconds timeout = std::chrono::seconds(60));

// Runs `fn(i)` for i in [0, n) on n threads released at once; joins them.
void RunConcurrently(int n, const std::function<void(int)>& fn);

// Polls `condition` every 20 ms until it holds or `timeout` passes.
bool Eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));

}  // namespace paintlock::testing
