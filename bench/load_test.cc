#include "bench/load.h"

#include <doctest/doctest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

using paintlock::bench::Answer;
using paintlock::bench::LoadOptions;
using paintlock::bench::Outcome;
using paintlock::bench::ParsedResponse;
using paintlock::bench::ParseResponse;
using paintlock::bench::ParseResult;
using paintlock::bench::Request;
using paintlock::bench::RunLoad;
using paintlock::bench::Workload;

TEST_CASE("The load generator reads a response with a Content-Length body") {
  const std::string bytes =
      "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\nContent-Length: 7\r\n\r\n"
      "{\"a\":1}";
  ParsedResponse r;
  REQUIRE(ParseResponse(bytes, &r) == ParseResult::kDone);
  CHECK(r.status == 201);
  CHECK(r.used == bytes.size());
  CHECK(r.body == "{\"a\":1}");
  CHECK_FALSE(r.close);

  // Every shorter prefix is incomplete, not wrong.
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    CHECK(ParseResponse(std::string_view(bytes).substr(0, n), &r) == ParseResult::kNeedMore);
  }
  // A second response behind the first is left for later.
  REQUIRE(ParseResponse(bytes + bytes, &r) == ParseResult::kDone);
  CHECK(r.used == bytes.size());

  REQUIRE(ParseResponse("HTTP/1.1 429 Too Many\r\nCONNECTION: Close\r\ncontent-length: 0\r\n\r\n",
                        &r) == ParseResult::kDone);
  CHECK(r.status == 429);
  CHECK(r.close);
  CHECK(r.body.empty());
}

TEST_CASE("The load generator refuses answers it cannot frame") {
  ParsedResponse r;
  CHECK(ParseResponse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", &r) ==
        ParseResult::kBad);
  CHECK(ParseResponse("HTTP/1.1 200 OK\r\nX: y\r\n\r\n", &r) == ParseResult::kBad);
  CHECK(ParseResponse("HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n", &r) == ParseResult::kBad);
  CHECK(ParseResponse("SSH-2.0-OpenSSH\r\n\r\n", &r) == ParseResult::kBad);
  CHECK(ParseResponse("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", &r) == ParseResult::kBad);
  CHECK(ParseResponse("HTTP/1.1 200 OK\r\nX: " + std::string(70000, 'a'), &r) == ParseResult::kBad);
}

TEST_CASE("The load generator refuses a URL without a port") {
  LoadOptions o;
  o.url = "http://127.0.0.1";
  o.seconds = 1;
  const Workload none{
      [](int) {
        return Request{"/", ""};
      },
      [](int, const Answer&) -> std::variant<Outcome, Request> { return Outcome::kOk; }};
  CHECK_THROWS_AS(RunLoad(o, none), std::runtime_error);
}

namespace {

// A server answering POST /first with 201 and {"next":"<key>"} and POST
// /second/<key> with 200, counting both; the workload chains them. GET
// /v1/paintings/stream: the first `stream_limit` get an event, then a
// comment every 300 ms until the server stops; the rest 503.
struct TwoStepServer {
  httplib::Server server;
  std::atomic<long> first{0}, second{0}, unauthorised{0}, streams{0};
  int port = 0;
  std::thread thread;

  explicit TwoStepServer(int keep_alive_max, long stream_limit = 0) {
    server.set_keep_alive_max_count(static_cast<std::size_t>(keep_alive_max));
    server.Get("/v1/paintings/stream", [this, stream_limit](const httplib::Request&,
                                                            httplib::Response& res) {
      if (++streams > stream_limit) {
        res.status = 503;
        res.set_content(R"({"error":{"code":"too_many_streams"}})", "application/json");
        return;
      }
      res.set_chunked_content_provider(
          "text/event-stream", [sent = false](size_t, httplib::DataSink& sink) mutable {
            if (sent) std::this_thread::sleep_for(std::chrono::milliseconds(300));
            const std::string text = sent ? ": heartbeat\n\n" : "event: painting\ndata: {}\n\n";
            sent = true;
            return sink.write(text.data(), text.size());
          });
    });
    server.Post("/first", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.get_header_value("Authorization") != "Bearer k3y") ++unauthorised;
      ++first;
      res.status = 201;
      res.set_content(R"({"next":")" + req.body + R"("})", "application/json");
    });
    server.Post(R"(/second/(\d+))", [this](const httplib::Request&, httplib::Response& res) {
      ++second;
      res.set_content("{}", "application/json");
    });
    port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
    // bind_to_any_port listens already: connections queue until the accept loop runs.
  }
  ~TwoStepServer() {
    server.stop();
    thread.join();
  }
};

// Options to drive `s` with its API key.
LoadOptions OptionsFor(const TwoStepServer& s) {
  LoadOptions o;
  o.url = "http://127.0.0.1:" + std::to_string(s.port);
  o.api_key = "k3y";
  return o;
}

Workload TwoSteps() {
  return {[](int key) {
            return Request{"/first", std::to_string(key)};
          },
          [](int step, const Answer& a) -> std::variant<Outcome, Request> {
            if (step == 1) return a.status == 200 ? Outcome::kOk : Outcome::kError;
            if (a.status != 201) return Outcome::kError;
            const auto body = nlohmann::json::parse(a.body, nullptr, false);
            if (!body.is_object() || !body["next"].is_string()) return Outcome::kError;
            return Request{"/second/" + body["next"].get<std::string>(), ""};
          }};
}

}  // namespace

TEST_CASE("The load generator runs chained requests on many clients over two threads") {
  TwoStepServer s(/*keep_alive_max=*/100000);
  LoadOptions o = OptionsFor(s);
  o.clients = 6;
  o.threads = 2;
  o.seconds = 1;
  const auto result = RunLoad(o, TwoSteps());
  CHECK(result.iterations > 0);
  CHECK(result.ok == result.iterations);
  CHECK(result.errors == 0);
  CHECK(result.clients_lost == 0);
  // Every iteration made both requests, and none was left half-done at the end.
  CHECK(s.first == result.iterations);
  CHECK(s.second == result.iterations);
  CHECK(s.unauthorised == 0);
}

TEST_CASE("The load generator reconnects when the server closes after each answer") {
  TwoStepServer s(/*keep_alive_max=*/1);  // "Connection: close" on every answer
  LoadOptions o = OptionsFor(s);
  o.clients = 3;
  o.seconds = 1;
  const auto result = RunLoad(o, TwoSteps());
  // The first answer closes the connection, so the second step cannot be sent
  // on it: each iteration ends without an answer, and the client reconnects.
  CHECK(result.iterations > 1);
  CHECK(result.ok == 0);
  CHECK(result.errors == result.iterations);
  CHECK(result.clients_lost == 0);
  CHECK(s.first == result.iterations);
  CHECK(s.second == 0);
}

TEST_CASE("The load generator keeps its watchers' streams open and counts the refused") {
  TwoStepServer s(/*keep_alive_max=*/100000, /*stream_limit=*/3);
  LoadOptions o = OptionsFor(s);
  o.clients = 2;
  o.seconds = 1;
  o.watchers = 4;
  const auto result = RunLoad(o, TwoSteps());
  CHECK(s.streams == 4);
  CHECK(result.watchers_lost == 1);  // the fourth was answered 503
  // Three streams' first events and at least their status lines were read.
  CHECK(result.watcher_bytes > 3 * static_cast<long long>(sizeof "event: painting\ndata: {}"));
  CHECK(result.iterations > 0);
  CHECK(result.ok == result.iterations);
}
