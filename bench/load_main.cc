// load: drives one gateway workload with concurrent keep-alive clients for a
// fixed time and prints throughput, outcome counts and latency percentiles as
// one JSON object. bench/run.sh runs it beside pgbench on the same SQL.
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <variant>

#include "bench/load.h"

namespace {

using paintlock::bench::Answer;
using paintlock::bench::LoadOptions;
using paintlock::bench::Outcome;
using paintlock::bench::Request;
using paintlock::bench::Workload;

constexpr const char* kUsage =
    "Usage: load --workload W --url http://127.0.0.1:8080 --api-key KEY [--clients 32]\n"
    "            [--threads 2] [--seconds 10] [--keys 1000] [--prefix bench-] [--bucket api] "
    "[--quota bench]\n"
    "            [--watchers N]\n"
    "Each client runs iterations of W back to back on one keep-alive connection, each on a\n"
    "random key 1..KEYS; THREADS threads share the clients, as pgbench -j does:\n"
    "  reserve             POST /v1/reservations for painting PREFIX<k>\n"
    "  credit-hold-commit  POST /v1/accounts/<k>/holds (1 credit), then POST\n"
    "                      /v1/holds/{id}/commit: one iteration, both must succeed\n"
    "  ratelimit-take      POST /v1/ratelimits/BUCKET:<k>/take\n"
    "  quota-consume       POST /v1/quotas/QUOTA/consume for subject PREFIX<k>\n"
    "--watchers N opens N availability streams (GET /v1/paintings/stream) first, waits\n"
    "until each has its first chunk, and reads them until the end: watching browsers.\n"
    "Prints {\"workload\", \"iterations\", \"ok\", \"refused\", \"errors\", \"tps\", \"p50_ms\",\n"
    "\"p99_ms\", \"clients_lost\", \"watchers_lost\", ...} as JSON. refused counts 409 (reserve,\n"
    "holds) and 429 (ratelimit, quota).\n";

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

// What an answer with `ok_status`, `refused_status` or anything else comes to.
Outcome Classify(const Answer& a, int ok_status, int refused_status) {
  if (a.status == ok_status) return Outcome::kOk;
  if (a.status == refused_status) return Outcome::kRefused;
  return Outcome::kError;
}

// A workload of one POST per iteration.
Workload OnePost(std::function<Request(int key)> request, int ok_status, int refused_status) {
  return {std::move(request), [=](int, const Answer& a) -> std::variant<Outcome, Request> {
            return Classify(a, ok_status, refused_status);
          }};
}

// Hold one credit, then commit the hold: both must succeed.
Workload HoldAndCommit() {
  return {[](int key) {
            return Request{"/v1/accounts/" + std::to_string(key) + "/holds",
                           R"({"amount":1,"ttl_seconds":60})"};
          },
          [](int step, const Answer& a) -> std::variant<Outcome, Request> {
            if (step == 1) return Classify(a, 200, -1);
            if (a.status != 201) return Classify(a, 201, 409);
            const auto hold = nlohmann::json::parse(a.body, nullptr, /*allow_exceptions=*/false);
            if (!hold.is_object() || !hold.contains("hold_id") || !hold["hold_id"].is_string()) {
              return Outcome::kError;
            }
            return Request{"/v1/holds/" + hold["hold_id"].get<std::string>() + "/commit", ""};
          }};
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
    } else if (a == "--threads") {
      o.threads = PositiveInt(a, next());
    } else if (a == "--seconds") {
      o.seconds = PositiveInt(a, next());
    } else if (a == "--keys") {
      o.keys = PositiveInt(a, next());
    } else if (a == "--prefix") {
      prefix = next();
    } else if (a == "--bucket") {
      bucket = next();
    } else if (a == "--watchers") {
      o.watchers = PositiveInt(a, next());
    } else if (a == "--quota") {
      quota = next();
    } else {
      Usage("unknown argument " + a);
    }
  }
  if (o.url.empty() || o.api_key.empty()) Usage("--url and --api-key are required");

  const std::map<std::string, Workload> workloads = {
      {"reserve", OnePost(
                      [&](int k) {
                        return Request{"/v1/reservations", R"({"paintings":[")" + prefix +
                                                               std::to_string(k) + R"("]})"};
                      },
                      201, 409)},
      {"credit-hold-commit", HoldAndCommit()},
      {"ratelimit-take",
       OnePost(
           [&](int k) {
             return Request{"/v1/ratelimits/" + bucket + ":" + std::to_string(k) + "/take", ""};
           },
           200, 429)},
      {"quota-consume", OnePost(
                            [&](int k) {
                              return Request{
                                  "/v1/quotas/" + quota + "/consume",
                                  R"({"subject":")" + prefix + std::to_string(k) + R"("})"};
                            },
                            200, 429)},
  };
  const auto chosen = workloads.find(workload);
  if (chosen == workloads.end()) Usage("--workload must be one of the four below");

  nlohmann::json out;
  try {
    out = paintlock::bench::RunLoad(o, chosen->second).ToJson();
  } catch (const std::runtime_error& e) {
    Usage(e.what());
  }
  out["workload"] = workload;
  out["clients"] = o.clients;
  out["watchers"] = o.watchers;
  std::cout << out.dump() << "\n";
  return 0;  // errors are reported in the JSON, not hidden behind an exit code
}
