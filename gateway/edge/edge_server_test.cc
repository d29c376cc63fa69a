#include "gateway/edge/edge_server.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

using paintlock::gateway::edge::EdgeOptions;
using paintlock::gateway::edge::EdgeServer;
using paintlock::gateway::edge::SetHandBackHookForTesting;

namespace {

std::atomic<EdgeServer*> g_server{nullptr};
std::atomic<bool> g_hold_next_hand_back{false};
// What the hook saw, checked on the test's thread: an assertion that throws
// on a worker thread would end the process instead of failing the test.
std::atomic<bool> g_event_seen{false};
std::atomic<bool> g_turns_seen{false};

// Waits (polling, up to 5 s) until `done` holds.
template <typename Done>
bool Await(Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// The hand-back hook: once armed, holds the worker between its epoll add and
// its hand-back until the client's next request has reached the reactor, and
// then while the reactor goes round its loop twice more.
void HoldHandBack() {
  if (!g_hold_next_hand_back.exchange(false)) return;
  EdgeServer* server = g_server.load();
  g_event_seen = Await([&] { return server->Counters().events_in_worker > 0; });
  const auto turns = server->Counters().turns;
  g_turns_seen = Await([&] { return server->Counters().turns >= turns + 2; });
}

}  // namespace

TEST_CASE(
    "edge server: a request that arrives while its connection is being handed back is answered, "
    "and the reactor does not spin on it") {
  EdgeOptions options;
  options.workers = 1;
  EdgeServer server(options);
  server.Get("/n", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok", "text/plain");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  REQUIRE(port > 0);
  std::thread listener([&] { server.listen_after_bind(); });
  g_server = &server;
  SetHandBackHookForTesting(&HoldHandBack);

  httplib::Client client("127.0.0.1", port);
  client.set_keep_alive(true);
  g_hold_next_hand_back = true;
  auto first = client.Get("/n");
  REQUIRE(first);
  CHECK(first->status == 200);
  // Sent as soon as the first answer is read, while the worker holds the
  // connection between epoll and the hand-back.
  auto second = client.Get("/n");
  REQUIRE(second);
  CHECK(second->status == 200);
  CHECK(second->body == "ok");
  CHECK(g_event_seen);  // the second request reached the reactor while the worker held it
  CHECK(g_turns_seen);
  CHECK(server.OpenConnections() == 1);  // one keep-alive connection served both
  // One event reached the reactor while the worker held the connection: the
  // reactor muted it instead of seeing it again on every pass of its loop.
  CHECK(server.Counters().events_in_worker == 1);

  client.stop();
  server.stop();
  listener.join();
  SetHandBackHookForTesting(nullptr);
  g_server = nullptr;
}

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
  }
  ~Served() {
    server.stop();
    listener.join();
  }
  EdgeServer server;
  int port = 0;
  std::thread listener;
};

// A raw keep-alive connection: what it sends, and one whole answer read back.
class RawClient {
 public:
  explicit RawClient(int port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    timeval timeout{5, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  ~RawClient() { ::close(fd_); }
  void Send(const std::string& bytes) {
    REQUIRE(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(bytes.size()));
  }
  // Reads until a whole "ok" answer (or 5 s without one); returns what came.
  std::string ReadAnswer() {
    std::string got;
    char buf[4096];
    while (got.find("\r\n\r\nok") == std::string::npos) {
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      got.append(buf, static_cast<size_t>(n));
    }
    return got;
  }

 private:
  int fd_;
};

constexpr const char* kGet = "GET /n HTTP/1.1\r\nHost: test\r\n\r\n";

// Two workers (lingering needs another one idle), and a linger far longer
// than any wait below, so which path a request takes never depends on timing.
EdgeOptions Lingering() {
  EdgeOptions options;
  options.workers = 2;
  options.keepalive_linger = std::chrono::milliseconds(5000);
  return options;
}

}  // namespace

TEST_CASE("edge server: a keep-alive client's next request is read by the worker that answered") {
  Served s(Lingering());
  RawClient client(s.port);
  for (int i = 0; i < 3; ++i) {
    client.Send(kGet);
    CHECK(client.ReadAnswer().rfind("HTTP/1.1 200", 0) == 0);
  }
  // The second and third came to the worker that had just answered.
  CHECK(s.server.Counters().lingered == 2);
  CHECK(s.server.OpenConnections() == 1);
}

TEST_CASE("edge server: a lingering worker never keeps a new request waiting") {
  Served s(Lingering());
  RawClient idle(s.port);
  idle.Send(kGet);
  REQUIRE(idle.ReadAnswer().rfind("HTTP/1.1 200", 0) == 0);
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
  client.Send(kGet);
  REQUIRE(client.ReadAnswer().rfind("HTTP/1.1 200", 0) == 0);
  client.Send("GET /n HTTP/1.1\r\nHost: te");
  REQUIRE(Await([&] { return s.server.Counters().lingered_partial == 1; }));
  client.Send("st\r\n\r\n");
  const std::string answer = client.ReadAnswer();
  CHECK(answer.rfind("HTTP/1.1 200", 0) == 0);
  CHECK(answer.find("ok") != std::string::npos);
  CHECK(s.server.Counters().lingered == 0);
}
