// quota-load: drives POST /v1/quotas/{quota}/consume with concurrent
// keep-alive clients for a fixed time and prints throughput and latency
// percentiles as one JSON object. Used by bench/quota.sh beside pgbench
// running the same statement (sql/queries/quota_consume.sql).
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr const char* kUsage =
    "Usage: quota-load --url http://127.0.0.1:8080 --api-key KEY [--quota bench] [--clients 32]\n"
    "                  [--seconds 10] [--subjects 20000] [--prefix bench-]\n"
    "Each client consumes one unit of QUOTA for a random subject (PREFIX1..PREFIXN, named\n"
    "with the API key) per request, back to back, on one keep-alive connection.\n"
    "Prints {\"tps\", \"p50_ms\", \"p99_ms\", \"allowed\", \"refused\", \"errors\", ...} as "
    "JSON.\n";

struct Options {
  std::string url;
  std::string api_key;
  std::string quota = "bench";
  int clients = 32;
  int seconds = 10;
  int subjects = 20000;
  std::string prefix = "bench-";
};

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(p * (v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

int PositiveInt(const std::string& flag, const std::string& value) {
  try {
    size_t used = 0;
    const int n = std::stoi(value, &used);
    if (used == value.size() && n > 0) return n;
  } catch (const std::exception&) {
  }
  std::fprintf(stderr, "quota-load: %s needs a positive whole number, got \"%s\"\n", flag.c_str(),
               value.c_str());
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "quota-load: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") return std::cout << kUsage, 0;
    if (a == "--url")
      o.url = next();
    else if (a == "--api-key")
      o.api_key = next();
    else if (a == "--quota")
      o.quota = next();
    else if (a == "--clients")
      o.clients = PositiveInt(a, next());
    else if (a == "--seconds")
      o.seconds = PositiveInt(a, next());
    else if (a == "--subjects")
      o.subjects = PositiveInt(a, next());
    else if (a == "--prefix")
      o.prefix = next();
    else {
      std::fprintf(stderr, "quota-load: unknown argument %s\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  if (o.url.empty() || o.api_key.empty()) {
    std::fprintf(stderr, "quota-load: --url and --api-key are required\n%s", kUsage);
    return 2;
  }

  const std::string path = "/v1/quotas/" + o.quota + "/consume";
  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> latencies(o.clients);
  std::vector<long> allowed(o.clients), refused(o.clients), errors(o.clients);
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < o.clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client client(o.url);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      client.set_read_timeout(30, 0);
      const httplib::Headers headers = {{"Authorization", "Bearer " + o.api_key}};
      std::mt19937 rng(2000 + c);  // seeded: every run asks for the same subjects
      std::uniform_int_distribution<int> pick(1, o.subjects);
      latencies[c].reserve(200000);
      while (!stop.load(std::memory_order_relaxed)) {
        const std::string body = "{\"subject\":\"" + o.prefix + std::to_string(pick(rng)) + "\"}";
        const auto t0 = std::chrono::steady_clock::now();
        auto res = client.Post(path.c_str(), headers, body, "application/json");
        const auto t1 = std::chrono::steady_clock::now();
        latencies[c].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        if (!res) {
          ++errors[c];
          client.stop();  // reconnect on the next request
        } else if (res->status == 200) {
          ++allowed[c];
        } else if (res->status == 429) {
          ++refused[c];
        } else {
          ++errors[c];
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(o.seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::vector<double> all;
  long a = 0, r = 0, e = 0;
  for (int c = 0; c < o.clients; ++c) {
    all.insert(all.end(), latencies[c].begin(), latencies[c].end());
    a += allowed[c];
    r += refused[c];
    e += errors[c];
  }
  const nlohmann::json out = {{"requests", all.size()},
                              {"allowed", a},
                              {"refused", r},
                              {"errors", e},
                              {"seconds", elapsed},
                              {"tps", static_cast<double>(all.size()) / elapsed},
                              {"p50_ms", Percentile(all, 0.50)},
                              {"p99_ms", Percentile(all, 0.99)}};
  std::cout << out.dump() << "\n";
  return 0;  // errors are reported in the JSON, not hidden behind an exit code
}
