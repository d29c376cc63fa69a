// reserve-load: drives POST /v1/reservations with concurrent keep-alive
// clients for a fixed time and prints throughput and latency percentiles as
// one JSON object. Used by bench/run.sh beside pgbench running the same SQL.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr const char* kUsage =
    "Usage: reserve-load --url http://127.0.0.1:8080 --api-key KEY [--clients 32] [--seconds 10]\n"
    "                    [--paintings 20000] [--prefix bench-]\n"
    "Each client reserves one random painting (PREFIX1..PREFIXN) per request, back to back,\n"
    "on one keep-alive connection. Prints {\"tps\", \"p50_ms\", \"p99_ms\", ...} as JSON.\n";

struct Options {
  std::string url;
  std::string api_key;
  int clients = 32;
  int seconds = 10;
  int paintings = 20000;
  std::string prefix = "bench-";
};

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(p * (v.size() - 1));
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "reserve-load: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") return std::cout << kUsage, 0;
    if (a == "--url") o.url = next();
    else if (a == "--api-key") o.api_key = next();
    else if (a == "--clients") o.clients = std::stoi(next());
    else if (a == "--seconds") o.seconds = std::stoi(next());
    else if (a == "--paintings") o.paintings = std::stoi(next());
    else if (a == "--prefix") o.prefix = next();
    else {
      std::fprintf(stderr, "reserve-load: unknown argument %s\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  if (o.url.empty() || o.api_key.empty()) {
    std::fprintf(stderr, "reserve-load: --url and --api-key are required\n%s", kUsage);
    return 2;
  }

  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> latencies(o.clients);
  std::vector<long> granted(o.clients), conflicts(o.clients), errors(o.clients);
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < o.clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client client(o.url);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      client.set_read_timeout(30, 0);
      httplib::Headers headers = {{"Authorization", "Bearer " + o.api_key}};
      std::mt19937 rng(1000 + c);
      std::uniform_int_distribution<int> pick(1, o.paintings);
      latencies[c].reserve(200000);
      while (!stop.load(std::memory_order_relaxed)) {
        const std::string body = "{\"paintings\":[\"" + o.prefix + std::to_string(pick(rng)) + "\"]}";
        auto t0 = std::chrono::steady_clock::now();
        auto res = client.Post("/v1/reservations", headers, body, "application/json");
        auto t1 = std::chrono::steady_clock::now();
        latencies[c].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        if (!res) {
          ++errors[c];
          client.stop();  // reconnect on the next request
        }
        else if (res->status == 201) ++granted[c];
        else if (res->status == 409) ++conflicts[c];
        else ++errors[c];
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(o.seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::vector<double> all;
  long g = 0, cf = 0, e = 0;
  for (int c = 0; c < o.clients; ++c) {
    all.insert(all.end(), latencies[c].begin(), latencies[c].end());
    g += granted[c];
    cf += conflicts[c];
    e += errors[c];
  }
  nlohmann::json out = {{"requests", all.size()},
                        {"granted", g},
                        {"conflicts", cf},
                        {"errors", e},
                        {"seconds", elapsed},
                        {"tps", all.size() / elapsed},
                        {"p50_ms", Percentile(all, 0.50)},
                        {"p99_ms", Percentile(all, 0.99)}};
  std::cout << out.dump() << "\n";
  return 0;  // errors are reported in the JSON, not hidden behind an exit code
}
