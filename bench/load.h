// The load generator's engine, shared by every workload of bench/load_main.cc:
// N concurrent clients, each on one keep-alive connection, run one workload
// iteration after another for a fixed time; the result counts outcomes and
// keeps every iteration's latency for percentiles.
//
// The clients are driven like pgbench drives its own: a few threads (pgbench
// -j 2 in bench/lib.sh, --threads 2 here), each multiplexing its share of the
// connections over epoll, so the load generator costs the 2-core machine about
// what pgbench does. Blocking client threads (one per connection, the first
// version of this engine, on httplib::Client) cost 48 µs of CPU per request
// against pgbench's 14 (bench/reports/2026-12-04-0845-where-the-cpu-goes.md),
// CPU taken from the gateway under test and not from PostgreSQL under pgbench.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace paintlock::bench {

// What one iteration came to. kNoAnswer (the connection failed or the answer
// could not be read) counts as an error and makes the client reconnect.
enum class Outcome { kOk, kRefused, kError, kNoAnswer };

// One request of an iteration: POST `path` with a JSON `body` (may be empty).
struct Request {
  std::string path;
  std::string body;
};

// An answer: its status and body (valid only during the call it is given to).
struct Answer {
  int status = 0;
  std::string_view body;
};

// A workload: `start` gives an iteration's first request for `key`; `next`,
// given the answer to request number `step` (0 for the first), says what the
// iteration came to or which request comes next. Called from every engine
// thread at once, so neither may touch shared mutable state.
struct Workload {
  std::function<Request(int key)> start;
  std::function<std::variant<Outcome, Request>(int step, const Answer& answer)> next;
};

struct LoadOptions {
  std::string url;  // http://host:port of the gateway
  std::string api_key;
  int clients = 32;
  int threads = 2;  // as pgbench -j 2
  int seconds = 10;
  int keys = 1000;  // iterations pick a key uniformly from 1..keys
  // Seeds client c's key sequence with seed + c, so every run asks for the
  // same keys in the same order.
  std::uint32_t seed = 1000;
  // Availability streams (GET /v1/paintings/stream) opened before the clients
  // start and read until the run ends, on a thread of their own: the
  // storefront's watching browsers, which every change is pushed to.
  int watchers = 0;
};

struct LoadResult {
  long iterations = 0;
  long ok = 0;
  long refused = 0;             // the service's deliberate "no" (409 busy, 429 over a limit)
  long errors = 0;              // anything else, no answer included
  long clients_lost = 0;        // clients that could not (re)connect and stopped early
  long watchers_lost = 0;       // streams refused (no 200) or closed before the end
  long long watcher_bytes = 0;  // what the streams were sent, the first chunks included
  double seconds = 0;
  double p50_ms = 0;
  double p99_ms = 0;

  double tps() const { return seconds > 0 ? static_cast<double>(iterations) / seconds : 0; }
  nlohmann::json ToJson() const;
};

// Runs `workload` on options.clients connections for options.seconds and
// returns the totals. Blocks for about options.seconds plus the slowest
// iteration in flight when time is up (at most 30 s more; iterations still
// unanswered then are dropped, not counted). Throws std::runtime_error when
// the URL cannot be understood.
LoadResult RunLoad(const LoadOptions& options, const Workload& workload);

// One HTTP/1.1 response read from the front of a connection's bytes.
struct ParsedResponse {
  std::size_t used = 0;  // bytes of the response, head and body
  int status = 0;
  bool close = false;  // "Connection: close": the server ends the connection after it
  std::string_view body;
};

enum class ParseResult { kNeedMore, kDone, kBad };

// Reads the response at the front of `bytes`: kDone fills `out`; kNeedMore
// when the head or the body is incomplete; kBad for anything but a status
// line, headers and a Content-Length body (the gateway answers every bench
// route that way), or a head over 64 KiB.
ParseResult ParseResponse(std::string_view bytes, ParsedResponse* out);

// The p-quantile (0 ≤ p ≤ 1) of `values` by nearest rank; 0 when empty.
// Reorders `values`.
double Percentile(std::vector<double>& values, double p);

}  // namespace paintlock::bench
