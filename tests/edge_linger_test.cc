// The edge's keep-alive linger (gateway/edge/edge_server.h, EdgeOptions::
// keepalive_linger): an EdgeServer in this process, so its counters say which
// path each request took, and raw loopback connections that send exactly the
// bytes each case needs.
#include <doctest/doctest.h>
#include <httplib.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gateway/edge/edge_server.h"
#include "tests/support/harness.h"
#include "tests/support/raw_client.h"

using paintlock::gateway::edge::EdgeOptions;
using paintlock::gateway::edge::EdgeServer;
using paintlock::testing::Eventually;
using paintlock::testing::RawClient;
using std::chrono::milliseconds;

namespace {

// An EdgeServer on a loopback port, listening on its own thread, with "/n".
struct Served {
  explicit Served(EdgeOptions options) : server(options) {
    server.Get("/n", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("ok", "text/plain");
    });
    port = server.bind_to_any_port("127.0.0.1");
    REQUIRE(port > 0);
    listener = std::thread([this] { server.listen_after_bind(); });
    // A worker lingers only while another is idle: wait until every worker
    // has started and waits, or the first answers could find none idle.
    REQUIRE(paintlock::testing::Eventually(
        [&] { return server.Counters().idle_workers == options.workers; }));
  }
  ~Served() {
    server.stop();
    listener.join();
  }
  EdgeServer server;
  int port = 0;
  std::thread listener;
};

constexpr const char* kGet = "GET /n HTTP/1.1\r\nHost: test\r\n\r\n";
constexpr milliseconds kAnswerWithin{5000};

// Two workers (lingering needs another one idle), and a linger far longer
// than any wait below, so which path a request takes never depends on timing.
EdgeOptions Lingering() {
  EdgeOptions options;
  options.workers = 2;
  options.keepalive_linger = milliseconds(5000);
  return options;
}

}  // namespace

TEST_CASE("edge server: a keep-alive client's next request is read by the worker that answered") {
  Served s(Lingering());
  RawClient client(s.port);
  REQUIRE(client.connected());
  for (int i = 0; i < 3; ++i) {
    REQUIRE(client.Send(kGet));
    CHECK(client.ReadResponse(kAnswerWithin) == 200);
  }
  // The second and third came to the worker that had just answered.
  CHECK(s.server.Counters().lingered == 2);
  CHECK(s.server.OpenConnections() == 1);
}

TEST_CASE("edge server: a lingering worker never keeps a new request waiting") {
  Served s(Lingering());
  RawClient idle(s.port);
  REQUIRE(idle.Send(kGet));
  REQUIRE(idle.ReadResponse(kAnswerWithin) == 200);
  // One worker now waits (up to 5 s) for `idle`'s next request. Each new
  // client is answered by the other, which does not linger: no worker would
  // be left for the next one. A 2 s read timeout: far below the linger. Every
  // client stays connected, keep-alive, so a worker that lingered on one would
  // be gone for the next.
  std::vector<std::unique_ptr<httplib::Client>> others;
  for (int i = 0; i < 3; ++i) {
    others.push_back(std::make_unique<httplib::Client>("127.0.0.1", s.port));
    others.back()->set_keep_alive(true);
    others.back()->set_read_timeout(2, 0);
    auto r = others.back()->Get("/n");
    REQUIRE(r);
    CHECK(r->status == 200);
  }
  CHECK(s.server.Counters().lingered == 0);
}

TEST_CASE("edge server: part of a request read by a lingering worker is finished by the reactor") {
  Served s(Lingering());
  RawClient client(s.port);
  REQUIRE(client.Send(kGet));
  REQUIRE(client.ReadResponse(kAnswerWithin) == 200);
  REQUIRE(client.Send("GET /n HTTP/1.1\r\nHost: te"));
  REQUIRE(Eventually([&] { return s.server.Counters().lingered_partial == 1; }));
  REQUIRE(client.Send("st\r\n\r\n"));
  CHECK(client.ReadResponse(kAnswerWithin) == 200);
  CHECK(client.body() == "ok");
  CHECK(s.server.Counters().lingered == 0);
}
