// load: drives one gateway workload with concurrent keep-alive clients for a
// fixed time and prints throughput, outcome counts and latency percentiles as
// one JSON object. bench/run.sh runs it beside pgbench on the same SQL.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/load.h"

namespace {

using paintlock::bench::Iteration;
using paintlock::bench::LoadOptions;
using paintlock::bench::Outcome;

constexpr const char* kUsage =
    "Usage: load --workload W --url http://127.0.0.1:8080 --api-key KEY [--clients 32]\n"
    "            [--seconds 10] [--keys 1000] [--prefix bench-] [--bucket api] [--quota bench]\n"
    "Each client runs iterations of W back to back on one keep-alive connection, each on a\n"
    "random key 1..KEYS:\n"
    "  reserve             POST /v1/reservations for painting PREFIX<k>\n"
    "  credit-hold-commit  POST /v1/accounts/<k>/holds (1 credit), then POST\n"
    "                      /v1/holds/{id}/commit: one iteration, both must succeed\n"
    "  ratelimit-take      POST /v1/ratelimits/BUCKET:<k>/take\n"
    "  quota-consume       POST /v1/quotas/QUOTA/consume for subject PREFIX<k>\n"
    "Prints {\"workload\", \"iterations\", \"ok\", \"refused\", \"errors\", \"tps\", \"p50_ms\",\n"
    "\"p99_ms\", ...} as JSON. refused counts 409 (reserve, holds) and 429 (ratelimit, quota).\n";

constexpr const char* kJson = "application/json";

[[noreturn]] void Usage(const std::string& why) {
  std::fprintf(stderr, "load: %s\n%s", why.c_str(), kUsage);
  std::exit(2);
}

int PositiveInt(const std::string& flag, const std::string& value) {
  try {
    std::size_t used = 0;
    const int n = std::stoi(value, &used);
    if (used == value.size() && n > 0) return n;
  } catch (const std::exception&) {
  }
  Usage(flag + " needs a positive whole number, got \"" + value + "\"");
}

// One POST whose answer is `ok_status`, `refused_status` or anything else.
Outcome Post(httplib::Client& client, const httplib::Headers& headers, const std::string& path,
             const std::string& body, int ok_status, int refused_status) {
  auto res = client.Post(path.c_str(), headers, body, kJson);
  if (!res) return Outcome::kNoAnswer;
  if (res->status == ok_status) return Outcome::kOk;
  if (res->status == refused_status) return Outcome::kRefused;
  return Outcome::kError;
}

Outcome HoldAndCommit(httplib::Client& client, const httplib::Headers& headers, int key) {
  auto held = client.Post(("/v1/accounts/" + std::to_string(key) + "/holds").c_str(), headers,
                          R"({"amount":1,"ttl_seconds":60})", kJson);
  if (!held) return Outcome::kNoAnswer;
  if (held->status == 409) return Outcome::kRefused;
  if (held->status != 201) return Outcome::kError;
  const auto hold = nlohmann::json::parse(held->body, nullptr, /*allow_exceptions=*/false);
  if (!hold.is_object() || !hold.contains("hold_id") || !hold["hold_id"].is_string()) {
    return Outcome::kError;
  }
  return Post(client, headers, "/v1/holds/" + hold["hold_id"].get<std::string>() + "/commit", "",
              200, -1);
}

}  // namespace

int main(int argc, char** argv) {
  LoadOptions o;
  std::string workload, prefix = "bench-", bucket = "api", quota = "bench";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Usage(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") return std::cout << kUsage, 0;
    if (a == "--workload") {
      workload = next();
    } else if (a == "--url") {
      o.url = next();
    } else if (a == "--api-key") {
      o.api_key = next();
    } else if (a == "--clients") {
      o.clients = PositiveInt(a, next());
    } else if (a == "--seconds") {
      o.seconds = PositiveInt(a, next());
    } else if (a == "--keys") {
      o.keys = PositiveInt(a, next());
    } else if (a == "--prefix") {
      prefix = next();
    } else if (a == "--bucket") {
      bucket = next();
    } else if (a == "--quota") {
      quota = next();
    } else {
      Usage("unknown argument " + a);
    }
  }
  if (o.url.empty() || o.api_key.empty()) Usage("--url and --api-key are required");

  const std::map<std::string, Iteration> workloads = {
      {"reserve",
       [&](httplib::Client& c, const httplib::Headers& h, int k) {
         return Post(c, h, "/v1/reservations",
                     R"({"paintings":[")" + prefix + std::to_string(k) + R"("]})", 201, 409);
       }},
      {"credit-hold-commit", HoldAndCommit},
      {"ratelimit-take",
       [&](httplib::Client& c, const httplib::Headers& h, int k) {
         return Post(c, h, "/v1/ratelimits/" + bucket + ":" + std::to_string(k) + "/take", "", 200,
                     429);
       }},
      {"quota-consume",
       [&](httplib::Client& c, const httplib::Headers& h, int k) {
         return Post(c, h, "/v1/quotas/" + quota + "/consume",
                     R"({"subject":")" + prefix + std::to_string(k) + R"("})", 200, 429);
       }},
  };
  const auto chosen = workloads.find(workload);
  if (chosen == workloads.end()) Usage("--workload must be one of the four below");

  nlohmann::json out = paintlock::bench::RunLoad(o, chosen->second).ToJson();
  out["workload"] = workload;
  out["clients"] = o.clients;
  std::cout << out.dump() << "\n";
  return 0;  // errors are reported in the JSON, not hidden behind an exit code
}
