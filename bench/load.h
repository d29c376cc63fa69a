// The load generator's engine, shared by every workload of bench/load_main.cc:
// N concurrent clients, each on one keep-alive connection, run one workload
// iteration after another for a fixed time; the result counts outcomes and
// keeps every iteration's latency for percentiles.
#pragma once

#include <httplib.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace paintlock::bench {

// What one iteration came to. kNoAnswer (the connection failed) counts as an
// error and makes the client reconnect before its next iteration.
enum class Outcome { kOk, kRefused, kError, kNoAnswer };

struct LoadOptions {
  std::string url;  // http://host:port of the gateway
  std::string api_key;
  int clients = 32;
  int seconds = 10;
  int keys = 1000;  // iterations pick a key uniformly from 1..keys
  // Seeds client c's key sequence with seed + c, so every run asks for the
  // same keys in the same order.
  std::uint32_t seed = 1000;
};

// One iteration: the requests of one unit of work for `key`, on `client`,
// with `headers` (the API key). Called concurrently from every client
// thread, so it must not touch shared mutable state.
using Iteration =
    std::function<Outcome(httplib::Client& client, const httplib::Headers& headers, int key)>;

struct LoadResult {
  long iterations = 0;
  long ok = 0;
  long refused = 0;  // the service's deliberate "no" (409 busy, 429 over a limit)
  long errors = 0;   // anything else, no answer included
  double seconds = 0;
  double p50_ms = 0;
  double p99_ms = 0;

  double tps() const { return seconds > 0 ? static_cast<double>(iterations) / seconds : 0; }
  nlohmann::json ToJson() const;
};

// Runs `iteration` on options.clients threads for options.seconds and
// returns the totals. Blocks for about options.seconds (plus the slowest
// iteration in flight when time is up).
LoadResult RunLoad(const LoadOptions& options, const Iteration& iteration);

// The p-quantile (0 ≤ p ≤ 1) of `values` by nearest rank; 0 when empty.
// Reorders `values`.
double Percentile(std::vector<double>& values, double p);

}  // namespace paintlock::bench
