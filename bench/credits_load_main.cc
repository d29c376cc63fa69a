// credits-load: drives the gateway's credit holds or rate limits with
// concurrent keep-alive clients for a fixed time and prints throughput and
// latency percentiles as one JSON object. Used by bench/credits.sh beside
// pgbench running the same SQL.
//
//   --mode holds      each iteration: POST /v1/accounts/{a}/holds, then
//                     POST /v1/holds/{id}/commit (one "transaction", as one
//                     pgbench script run of the same two statements)
//   --mode ratelimit  each iteration: POST /v1/ratelimits/api:{k}/take
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
    "Usage: credits-load --url http://127.0.0.1:8080 --api-key KEY --mode holds|ratelimit\n"
    "                    [--clients 32] [--seconds 10] [--keys 1000] [--bucket api]\n"
    "holds: each client holds 1 credit on a random account 1..KEYS and commits it, back to\n"
    "back, on one keep-alive connection. ratelimit: each client takes 1 token from a random\n"
    "key BUCKET:1..BUCKET:KEYS. Prints {\"tps\", \"p50_ms\", \"p99_ms\", ...} as JSON.\n";

struct Options {
  std::string url;
  std::string api_key;
  std::string mode;
  int clients = 32;
  int seconds = 10;
  int keys = 1000;
  std::string bucket = "api";
};

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(p * (v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

struct Counts {
  long ok = 0;       // hold+commit both succeeded / a take was decided (200 or 429)
  long refused = 0;  // 409 on a hold / 429 on a take
  long errors = 0;   // anything else
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "credits-load: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") return std::cout << kUsage, 0;
    if (a == "--url")
      o.url = next();
    else if (a == "--api-key")
      o.api_key = next();
    else if (a == "--mode")
      o.mode = next();
    else if (a == "--clients")
      o.clients = std::stoi(next());
    else if (a == "--seconds")
      o.seconds = std::stoi(next());
    else if (a == "--keys")
      o.keys = std::stoi(next());
    else if (a == "--bucket")
      o.bucket = next();
    else {
      std::fprintf(stderr, "credits-load: unknown argument %s\n%s", a.c_str(), kUsage);
      return 2;
    }
  }
  if (o.url.empty() || o.api_key.empty() || (o.mode != "holds" && o.mode != "ratelimit")) {
    std::fprintf(stderr,
                 "credits-load: --url, --api-key and --mode holds|ratelimit are required\n%s",
                 kUsage);
    return 2;
  }

  std::atomic<bool> stop{false};
  std::vector<std::vector<double>> latencies(static_cast<size_t>(o.clients));
  std::vector<Counts> counts(static_cast<size_t>(o.clients));
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < o.clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client client(o.url);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      client.set_read_timeout(30, 0);
      const httplib::Headers headers = {{"Authorization", "Bearer " + o.api_key}};
      std::mt19937 rng(2000 + c);
      std::uniform_int_distribution<int> pick(1, o.keys);
      auto& lat = latencies[static_cast<size_t>(c)];
      auto& n = counts[static_cast<size_t>(c)];
      lat.reserve(200000);
      while (!stop.load(std::memory_order_relaxed)) {
        const std::string key = std::to_string(pick(rng));
        const auto t0 = std::chrono::steady_clock::now();
        if (o.mode == "holds") {
          auto held = client.Post(("/v1/accounts/" + key + "/holds").c_str(), headers,
                                  R"({"amount":1,"ttl_seconds":60})", "application/json");
          if (!held || held->status != 201) {
            if (!held) client.stop();
            (held && held->status == 409 ? n.refused : n.errors)++;
          } else {
            const std::string hold = nlohmann::json::parse(held->body)["hold_id"];
            auto done = client.Post(("/v1/holds/" + hold + "/commit").c_str(), headers, "",
                                    "application/json");
            if (!done) client.stop();
            (done && done->status == 200 ? n.ok : n.errors)++;
          }
        } else {
          auto took = client.Post(("/v1/ratelimits/" + o.bucket + ":" + key + "/take").c_str(),
                                  headers, "", "application/json");
          if (!took) {
            client.stop();
            ++n.errors;
          } else if (took->status == 200) {
            ++n.ok;
          } else if (took->status == 429) {
            ++n.ok;
            ++n.refused;
          } else {
            ++n.errors;
          }
        }
        lat.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(o.seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::vector<double> all;
  Counts total;
  for (int c = 0; c < o.clients; ++c) {
    all.insert(all.end(), latencies[static_cast<size_t>(c)].begin(),
               latencies[static_cast<size_t>(c)].end());
    total.ok += counts[static_cast<size_t>(c)].ok;
    total.refused += counts[static_cast<size_t>(c)].refused;
    total.errors += counts[static_cast<size_t>(c)].errors;
  }
  nlohmann::json out = {{"mode", o.mode},
                        {"iterations", all.size()},
                        {"ok", total.ok},
                        {"refused", total.refused},
                        {"errors", total.errors},
                        {"seconds", elapsed},
                        {"tps", static_cast<double>(all.size()) / elapsed},
                        {"p50_ms", Percentile(all, 0.50)},
                        {"p99_ms", Percentile(all, 0.99)}};
  std::cout << out.dump() << "\n";
  return 0;  // errors are reported in the JSON, not hidden behind an exit code
}
