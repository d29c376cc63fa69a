#include "bench/load.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <thread>

namespace paintlock::bench {

namespace {

struct ClientTotals {
  std::vector<double> latencies_ms;
  long ok = 0;
  long refused = 0;
  long errors = 0;
};

void RunClient(const LoadOptions& o, const Iteration& iteration, int c,
               const std::atomic<bool>& stop, ClientTotals* totals) {
  httplib::Client client(o.url);
  client.set_keep_alive(true);
  client.set_tcp_nodelay(true);
  client.set_read_timeout(30, 0);
  const httplib::Headers headers = {{"Authorization", "Bearer " + o.api_key}};
  std::mt19937 rng(o.seed + static_cast<std::uint32_t>(c));
  std::uniform_int_distribution<int> pick(1, o.keys);
  totals->latencies_ms.reserve(200000);
  while (!stop.load(std::memory_order_relaxed)) {
    const int key = pick(rng);
    const auto t0 = std::chrono::steady_clock::now();
    const Outcome outcome = iteration(client, headers, key);
    totals->latencies_ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    switch (outcome) {
      case Outcome::kOk:
        ++totals->ok;
        break;
      case Outcome::kRefused:
        ++totals->refused;
        break;
      case Outcome::kNoAnswer:
        client.stop();  // reconnect on the next iteration
        ++totals->errors;
        break;
      case Outcome::kError:
        ++totals->errors;
        break;
    }
  }
}

}  // namespace

nlohmann::json LoadResult::ToJson() const {
  return {{"iterations", iterations}, {"ok", ok},     {"refused", refused}, {"errors", errors},
          {"seconds", seconds},       {"tps", tps()}, {"p50_ms", p50_ms},   {"p99_ms", p99_ms}};
}

double Percentile(std::vector<double>& values, double p) {
  if (values.empty()) return 0;
  const auto k =
      static_cast<std::size_t>(std::clamp(p, 0.0, 1.0) * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

LoadResult RunLoad(const LoadOptions& o, const Iteration& iteration) {
  std::atomic<bool> stop{false};
  std::vector<ClientTotals> totals(static_cast<std::size_t>(o.clients));
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < o.clients; ++c) {
    threads.emplace_back(RunClient, std::cref(o), std::cref(iteration), c, std::cref(stop),
                         &totals[static_cast<std::size_t>(c)]);
  }
  std::this_thread::sleep_for(std::chrono::seconds(o.seconds));
  stop = true;
  for (auto& t : threads) t.join();

  LoadResult result;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<double> all;
  for (const ClientTotals& t : totals) {
    all.insert(all.end(), t.latencies_ms.begin(), t.latencies_ms.end());
    result.ok += t.ok;
    result.refused += t.refused;
    result.errors += t.errors;
  }
  result.iterations = static_cast<long>(all.size());
  result.p50_ms = Percentile(all, 0.50);
  result.p99_ms = Percentile(all, 0.99);
  return result;
}

}  // namespace paintlock::bench
