// Requests the edge's reactor answers itself (gateway/edge/edge_server.h,
// ReactorRoutes): an EdgeServer in this process with routes of the test's own,
// whose deferred answers wait on an eventfd in the reactor's epoll (as the
// gateway's wait on PostgreSQL sockets), and raw loopback connections.
#include <doctest/doctest.h>
#include <httplib.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gateway/edge/edge_server.h"
#include "tests/support/harness.h"
#include "tests/support/raw_client.h"

using paintlock::gateway::edge::EdgeOptions;
using paintlock::gateway::edge::EdgeServer;
using paintlock::gateway::edge::ReactorRoutes;
using paintlock::gateway::edge::RouteTicket;
using paintlock::testing::Eventually;
using paintlock::testing::RawClient;
using std::chrono::milliseconds;

namespace {

constexpr milliseconds kAnswerWithin{5000};

// POST /now is answered inside Serve; POST /later once the test calls
// Release(); POST /handoff is passed to the workers then (ToWorkers);
// anything else is left to the workers.
class TestRoutes : public ReactorRoutes {
 public:
  TestRoutes() : release_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
  ~TestRoutes() override { close(release_); }

  void Start(paintlock::locks::AsyncLoop& loop) override {
    loop_ = &loop;
    loop.Watch(release_, EPOLLIN, this);
    started_ = true;
  }
  void Stop() override {
    loop_->Watch(release_, 0, this);
    stopped_ = true;
  }
  bool Wants(const std::string& method, const std::string& target) const override {
    return method == "POST" &&
           (target == "/now" || target == "/later" || target == "/hold" || target == "/handoff");
  }
  bool Serve(std::shared_ptr<httplib::Request> req, RouteTicket ticket) override {
    Record("serve " + req->path);
    if (req->path == "/hold") {  // keeps the reactor here until the test lets go
      std::unique_lock<std::mutex> lock(mu_);
      holding_ = true;
      cv_.wait(lock, [&] { return let_go_; });
      holding_ = false;
    }
    httplib::Response res;
    res.status = 200;
    res.set_header("X-Served-By", "reactor");
    res.set_content(req->get_header_value("X-Name") + ":" + req->body, "text/plain");
    if (req->path == "/now") {
      ticket.Answer(res);
    } else if (req->path == "/handoff") {
      handoffs_.push_back(ticket);
      ++waiting_count_;
    } else {
      waiting_.emplace_back(ticket, std::move(res));
      ++waiting_count_;
    }
    return true;
  }
  void OnEvent(void*, std::uint32_t) override {
    Record("event");
    std::uint64_t n;
    (void)!read(release_, &n, sizeof n);
    for (auto& [ticket, res] : waiting_) ticket.Answer(res);
    for (auto& ticket : handoffs_) ticket.ToWorkers();
    waiting_count_ -= static_cast<int>(waiting_.size() + handoffs_.size());
    waiting_.clear();
    handoffs_.clear();
  }
  void EventsRead(Clock::time_point) override { Record("read"); }
  Clock::time_point Tick(Clock::time_point) override { return Clock::time_point::max(); }

  // From the test's thread.
  void Release() {
    const std::uint64_t one = 1;
    (void)!write(release_, &one, sizeof one);
  }
  std::atomic<int> waiting_count_{0};
  std::atomic<bool> started_{false}, stopped_{false};

  // The reactor's calls into the routes, from when the test starts recording.
  void StartRecording() {
    std::lock_guard<std::mutex> lock(mu_);
    recording_ = true;
  }
  std::vector<std::string> Calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }
  bool Holding() {
    std::lock_guard<std::mutex> lock(mu_);
    return holding_;
  }
  void LetGo() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      let_go_ = true;
    }
    cv_.notify_all();
  }

 private:
  int release_;
  paintlock::locks::AsyncLoop* loop_ = nullptr;
  std::deque<std::pair<RouteTicket, httplib::Response>> waiting_;  // reactor thread only
  std::vector<RouteTicket> handoffs_;                              // reactor thread only
  void Record(const std::string& call) {
    std::lock_guard<std::mutex> lock(mu_);
    if (recording_) calls_.push_back(call);
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool recording_ = false, holding_ = false, let_go_ = false;
  std::vector<std::string> calls_;
};

struct Served {
  Served() : server(EdgeOptions{}), routes(std::make_shared<TestRoutes>()) {
    server.Get("/w", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("worker", "text/plain");
    });
    server.Post("/now", [](const httplib::Request&, httplib::Response& res) {
      res.set_content("a worker took /now", "text/plain");
    });
    server.Post("/handoff", [](const httplib::Request& req, httplib::Response& res) {
      res.set_content("a worker took /handoff:" + req.body, "text/plain");
    });
    server.SetReactorRoutes(routes);
    port = server.bind_to_any_port("127.0.0.1");
    REQUIRE(port > 0);
    listener = std::thread([this] { server.listen_after_bind(); });
    REQUIRE(Eventually([&] { return routes->started_.load(); }));
  }
  ~Served() {
    if (listener.joinable()) Stop();
  }
  void Stop() {
    server.stop();
    listener.join();
  }
  EdgeServer server;
  std::shared_ptr<TestRoutes> routes;
  int port = 0;
  std::thread listener;
};

std::string Post(const std::string& path, const std::string& name, const std::string& body,
                 const std::string& extra = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: test\r\nX-Name: " + name + "\r\n" + extra +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace

TEST_CASE(
    "edge reactor routes: taken requests are answered by the reactor, in order with a "
    "worker's") {
  Served s;
  RawClient client(s.port);
  REQUIRE(client.connected());
  // Pipelined: the reactor's, a worker's, the reactor's again.
  REQUIRE(client.Send(Post("/now", "one", "a") + "GET /w HTTP/1.1\r\nHost: test\r\n\r\n" +
                      Post("/now", "two", "bc")));
  REQUIRE(client.ReadResponse(kAnswerWithin) == 200);
  CHECK(client.body() == "one:a");
  CHECK(client.head().find("X-Served-By: reactor") != std::string::npos);
  CHECK(client.head().find("Content-Length: 5") != std::string::npos);
  REQUIRE(client.ReadResponse(kAnswerWithin) == 200);
  CHECK(client.body() == "worker");
  REQUIRE(client.ReadResponse(kAnswerWithin) == 200);
  CHECK(client.body() == "two:bc");
  CHECK(s.server.Counters().served_on_reactor == 2);
}

TEST_CASE(
    "edge reactor routes: a deferred answer comes when the routes give it, and the "
    "connection goes on") {
  Served s;
  RawClient client(s.port);
  REQUIRE(client.connected());
  REQUIRE(client.Send(Post("/later", "late", "x") + Post("/now", "next", "y")));
  REQUIRE(Eventually([&] { return s.routes->waiting_count_ == 1; }));
  s.routes->Release();
  REQUIRE(client.ReadResponse(kAnswerWithin) == 200);
  CHECK(client.body() == "late:x");
  REQUIRE(client.ReadResponse(kAnswerWithin) == 200);  // read only once the first was answered
  CHECK(client.body() == "next:y");

  // Connection: close is honoured: the answer says so, then the connection ends.
  REQUIRE(client.Send(Post("/now", "last", "z", "Connection: close\r\n")));
  REQUIRE(client.ReadResponse(kAnswerWithin) == 200);
  CHECK(client.head().find("Connection: close") != std::string::npos);
  CHECK(client.WaitClosed(kAnswerWithin));
}

TEST_CASE(
    "edge reactor routes: a request the routes pass on is served by a worker from the start, "
    "and the connection goes on") {
  Served s;
  RawClient client(s.port);
  REQUIRE(client.connected());
  REQUIRE(client.Send(Post("/handoff", "h", "body") + Post("/now", "next", "y")));
  REQUIRE(Eventually([&] { return s.routes->waiting_count_ == 1; }));
  s.routes->Release();
  REQUIRE(client.ReadResponse(kAnswerWithin) == 200);
  CHECK(client.body() == "a worker took /handoff:body");
  CHECK(client.head().find("X-Served-By") == std::string::npos);
  REQUIRE(client.ReadResponse(kAnswerWithin) == 200);  // the pipelined one, back at the reactor
  CHECK(client.body() == "next:y");
  CHECK(s.server.Counters().served_on_reactor == 2);
  CHECK(s.server.Counters().handed_to_workers == 1);
}

TEST_CASE(
    "edge reactor routes: a wait's events for the routes are read, and EventsRead said, before "
    "its requests") {
  Served s;
  RawClient holder(s.port);
  RawClient client(s.port);
  REQUIRE(holder.connected());
  REQUIRE(client.connected());
  // The client's connection is accepted and in epoll first: a connection the
  // reactor had not yet accepted when it got stuck below would be accepted in
  // the wait that reports the event, and read only in a later one.
  REQUIRE(client.Send(Post("/now", "warm", "")));
  REQUIRE(client.ReadResponse(kAnswerWithin) == 200);
  // The reactor is kept inside a Serve while a request and then an event for
  // the routes become ready: its next epoll_wait reports both, request first.
  REQUIRE(holder.Send(Post("/hold", "held", "")));
  REQUIRE(Eventually([&] { return s.routes->Holding(); }));
  s.routes->StartRecording();
  REQUIRE(client.Send(Post("/now", "n", "x")));
  // send() can return before loopback delivers the bytes; the request must
  // be in the server's socket before the event is, or it lands in a later
  // wait. Delivered means acknowledged: nothing left in the send queue.
  REQUIRE(Eventually([&] {
    int unacknowledged = -1;
    return ioctl(client.fd(), SIOCOUTQ, &unacknowledged) == 0 && unacknowledged == 0;
  }));
  s.routes->Release();
  s.routes->LetGo();
  REQUIRE(client.ReadResponse(kAnswerWithin) == 200);
  REQUIRE(holder.ReadResponse(kAnswerWithin) == 200);
  const std::vector<std::string> calls = s.routes->Calls();
  REQUIRE(calls.size() >= 3);
  CHECK(calls[0] == "event");
  CHECK(calls[1] == "read");
  CHECK(calls[2] == "serve /now");
}

TEST_CASE("edge reactor routes: a stop waits for a deferred answer, which closes its connection") {
  Served s;
  RawClient client(s.port);
  REQUIRE(client.connected());
  REQUIRE(client.Send(Post("/later", "drained", "d")));
  REQUIRE(Eventually([&] { return s.routes->waiting_count_ == 1; }));
  std::thread stopper([&] { s.Stop(); });
  s.routes->Release();
  REQUIRE(client.ReadResponse(kAnswerWithin) == 200);
  CHECK(client.body() == "drained:d");
  CHECK(client.WaitClosed(kAnswerWithin));
  stopper.join();
  CHECK(s.routes->stopped_);
}
