// locks/async_pool.h against a real PostgreSQL: statements multiplexed over a
// few connections from one event loop, and the truth about each when a
// connection breaks.
#include "locks/async_pool.h"

#include <doctest/doctest.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <set>

#include "tests/support/harness.h"

using namespace paintlock::testing;
using paintlock::locks::AsyncLoop;
using paintlock::locks::AsyncPool;
using paintlock::locks::AsyncPoolOptions;
using paintlock::locks::AsyncReply;
using paintlock::locks::StatementMode;

namespace {

constexpr const char* kApplication = "async-pool-test";

// The smallest event loop: one epoll, the pool's sockets only.
class TestLoop : public AsyncLoop {
 public:
  TestLoop() : epoll_(epoll_create1(EPOLL_CLOEXEC)) {}
  ~TestLoop() override { close(epoll_); }

  void Watch(int fd, std::uint32_t events, void* tag) override {
    paintlock::locks::WatchInEpoll(epoll_, fd, events, reinterpret_cast<std::uintptr_t>(tag));
  }

  // Runs `pool` until `done` holds; false if it does not within 20 s.
  bool RunUntil(AsyncPool& pool, const std::function<bool()>& done) {
    const auto deadline = AsyncPool::Clock::now() + std::chrono::seconds(20);
    for (;;) {
      if (done()) return true;
      const auto now = AsyncPool::Clock::now();
      if (now >= deadline) return false;
      const auto next = std::min(pool.Tick(now), now + std::chrono::milliseconds(50));
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
      epoll_event events[16];
      const auto wait_began = AsyncPool::Clock::now();
      const int n = epoll_wait(epoll_, events, 16, static_cast<int>(std::max<long>(0, wait)));
      for (int i = 0; i < n; ++i) {
        pool.OnEvent(reinterpret_cast<void*>(events[i].data.u64), events[i].events);
      }
      if (says_events_read_ && n < 16) pool.EventsRead(wait_began);
    }
  }

  // Whether the loop tells the pool when a wait's events were read, as the
  // edge's reactor does (off: the pool polls an idle connection before use).
  void SayEventsRead() { says_events_read_ = true; }

 private:
  int epoll_;
  bool says_events_read_ = false;
};

AsyncPoolOptions Options(const std::string& url, int connections) {
  AsyncPoolOptions o;
  o.url = url;
  o.connections = connections;
  o.session_setup = std::string("SET application_name = '") + kApplication + "'";
  o.statements = {{"add", "SELECT $1::int + 1 AS n"},
                  {"divide", "SELECT 10 / $1::int AS n"},
                  {"who",
                   "SELECT pg_backend_pid() AS pid, current_setting('application_name') "
                   "AS app, pg_sleep(0.05) AS slept"},
                  {"sleep", "SELECT pg_sleep(30)"}};
  return o;
}

// Collects replies by submission order.
struct Replies {
  std::vector<std::optional<AsyncReply>> got;
  AsyncPool::Done At(std::size_t i) {
    if (got.size() <= i) got.resize(i + 1);
    return [this, i](AsyncReply r) { got[i] = std::move(r); };
  }
  bool All() const {
    return std::all_of(got.begin(), got.end(), [](const auto& r) { return r.has_value(); });
  }
};

std::string Backends(TestDatabase& db, const std::string& condition = "true") {
  return db.Scalar(std::string("SELECT count(*) FROM pg_stat_activity WHERE datname = "
                               "current_database() AND application_name = '") +
                   kApplication + "' AND " + condition);
}

// Ends the pool's connections from the server's side, waiting until they
// are gone; how many it ended.
std::string EndPoolBackends(TestDatabase& db) {
  return db.Scalar(std::string("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000)) "
                               "FROM pg_stat_activity WHERE datname = current_database() AND "
                               "application_name = '") +
                   kApplication + "'");
}

}  // namespace

TEST_CASE("async pool: statements are multiplexed over the connections, named or unnamed") {
  TestDatabase db({{"p1", 1000}});
  for (const StatementMode mode : {StatementMode::kNamed, StatementMode::kUnnamed}) {
    CAPTURE(static_cast<int>(mode));
    TestLoop loop;
    AsyncPoolOptions options = Options(db.url(), 3);
    options.mode = mode;
    AsyncPool pool(options, loop);
    Replies replies;
    for (int i = 0; i < 100; ++i) pool.Submit(0, {std::to_string(i)}, replies.At(i));
    for (int i = 100; i < 106; ++i) pool.Submit(2, {}, replies.At(i));
    // One nobody wants by the time a connection is free: dropped unrun, never answered.
    int unwanted_answers = 0;
    pool.Submit(
        0, {"7"}, [&](AsyncReply) { ++unwanted_answers; }, [] { return false; });
    CHECK(pool.waiting() == 107);  // nothing is sent before the connections are up
    REQUIRE(loop.RunUntil(pool, [&] { return replies.All(); }));

    for (int i = 0; i < 100; ++i) {
      REQUIRE(replies.got[i]->ok());
      CHECK(replies.got[i]->Value(0, "n") == std::to_string(i + 1));
    }
    std::set<std::string> pids;
    for (int i = 100; i < 106; ++i) {
      REQUIRE(replies.got[i]->ok());
      CHECK(replies.got[i]->Value(0, "app") == kApplication);  // the session set-up ran
      pids.insert(replies.got[i]->Value(0, "pid"));
    }
    CHECK(pids.size() == 3);  // six sleeps, three connections: each ran some
    CHECK(pool.connects() == 3);
    CHECK(pool.waiting() == 0);
    CHECK(unwanted_answers == 0);

    // An SQL error is the statement's answer; its connection goes on.
    Replies after;
    pool.Submit(1, {"0"}, after.At(0));
    pool.Submit(1, {"5"}, after.At(1));
    REQUIRE(loop.RunUntil(pool, [&] { return after.All(); }));
    CHECK_FALSE(after.got[0]->ok());
    CHECK(after.got[0]->sqlstate() == "22012");
    CHECK_FALSE(after.got[0]->may_have_committed());
    CHECK(after.got[1]->Value(0, "n") == "2");
    CHECK(pool.connects() == 3);
  }
}

TEST_CASE(
    "async pool: nothing is sent on a connection the server closed, and in flight it may have "
    "run") {
  TestDatabase db({{"p1", 1000}});
  TestLoop loop;
  AsyncPool pool(Options(db.url(), 2), loop);
  REQUIRE(loop.RunUntil(pool, [&] { return pool.ready() == 2; }));

  // The server ends both idle connections (and waits until they are gone).
  CHECK(EndPoolBackends(db) == "2");
  Replies replies;
  for (int i = 0; i < 4; ++i) pool.Submit(0, {std::to_string(i)}, replies.At(i));
  REQUIRE(loop.RunUntil(pool, [&] { return replies.All(); }));
  for (int i = 0; i < 4; ++i) {
    REQUIRE(replies.got[i]->ok());  // run on fresh connections, not failed on dead ones
    CHECK(replies.got[i]->Value(0, "n") == std::to_string(i + 1));
  }
  // Both replaced: the statements ran on whichever came up first.
  REQUIRE(loop.RunUntil(pool, [&] { return pool.ready() == 2; }));
  CHECK(pool.connects() == 4);

  // A statement in flight when its connection ends: the outcome is unknown.
  Replies sleeping;
  pool.Submit(3, {}, sleeping.At(0));
  REQUIRE(loop.RunUntil(pool, [&] { return Backends(db, "state = 'active'") == "1"; }));
  db.Exec(std::string("SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity WHERE "
                      "datname = current_database() AND application_name = '") +
          kApplication + "' AND state = 'active'");
  REQUIRE(loop.RunUntil(pool, [&] { return sleeping.All(); }));
  CHECK_FALSE(sleeping.got[0]->ok());
  CHECK(sleeping.got[0]->may_have_committed());
  CHECK_FALSE(sleeping.got[0]->error().empty());

  Replies next;
  pool.Submit(0, {"41"}, next.At(0));
  REQUIRE(loop.RunUntil(pool, [&] { return next.All(); }));
  CHECK(next.got[0]->Value(0, "n") == "42");
}

TEST_CASE(
    "async pool: a loop that says when a wait's events were read has closed connections "
    "replaced, and the pool takes its word") {
  TestDatabase db({{"p1", 1000}});
  TestLoop loop;
  loop.SayEventsRead();
  AsyncPool pool(Options(db.url(), 2), loop);
  REQUIRE(loop.RunUntil(pool, [&] { return pool.ready() == 2; }));
  // The server ends both; the loop reads that, then statements come (as the
  // reactor's requests come after the turn's database events).
  CHECK(EndPoolBackends(db) == "2");
  REQUIRE(loop.RunUntil(pool, [&] { return pool.connects() == 4 && pool.ready() == 2; }));
  Replies replies;
  for (int i = 0; i < 4; ++i) pool.Submit(0, {std::to_string(i)}, replies.At(i));
  REQUIRE(loop.RunUntil(pool, [&] { return replies.All(); }));
  for (int i = 0; i < 4; ++i) {
    REQUIRE(replies.got[i]->ok());
    CHECK(replies.got[i]->Value(0, "n") == std::to_string(i + 1));
  }

  // Its word is taken: connections idle since before a wait whose events
  // were read are not polled again, so a close that came after it (here:
  // a word given without reading) is found by the statement sent on it.
  CHECK(EndPoolBackends(db) == "2");
  pool.EventsRead(AsyncPool::Clock::now());
  Replies sent_on_closed;
  pool.Submit(0, {"7"}, sent_on_closed.At(0));
  REQUIRE(loop.RunUntil(pool, [&] { return sent_on_closed.All(); }));
  CHECK_FALSE(sent_on_closed.got[0]->ok());
}

TEST_CASE("async pool: with no database, a statement fails unrun once it has waited its time") {
  TestLoop loop;
  AsyncPoolOptions options =
      Options("host=127.0.0.1 port=" + std::to_string(FreeLoopbackPort()) + " dbname=none", 2);
  options.queue_timeout = std::chrono::milliseconds(300);
  AsyncPool pool(options, loop);
  Replies replies;
  pool.Submit(0, {"1"}, replies.At(0));
  REQUIRE(loop.RunUntil(pool, [&] { return replies.All(); }));
  CHECK_FALSE(replies.got[0]->ok());
  CHECK_FALSE(replies.got[0]->may_have_committed());
  CHECK(replies.got[0]->error() == "no database connection was ready in time");
  CHECK(pool.ready() == 0);
  CHECK(pool.connects() == 0);
}
