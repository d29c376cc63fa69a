#include "gateway/edge/edge_server.h"

#include <doctest/doctest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <thread>

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
