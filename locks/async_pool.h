// PostgreSQL connections driven with asynchronous libpq from one event loop:
// the first step of moving the gateway's cheap statements off
// thread-per-request (issue 10; bench/reports/2026-12-05-0110-async-event-
// loop-probe.md measured the design at a quarter of the gateway's CPU a
// request). bench/async_probe.cc runs on it today.
//
// libpqxx 6 has no asynchronous statement API, so this is libpq itself, kept
// to one small state machine per connection:
//
//   down ──(back-off due)──▶ connecting (PQconnectPoll) ──▶ setting up (the
//   session settings, then each statement prepared, all sent asynchronously)
//   ──▶ idle ⇄ busy (one statement in flight, as pgbench -M prepared and
//   locks::Database run them)
//
// and any failure, anywhere, back to down (its fd unwatched, PQfinish, the
// next attempt after a doubling back-off). Statements wait in one FIFO for an
// idle connection.
//
// The truth about a statement whose connection broke (as locks/database.h):
//   * an idle connection is checked before a statement is sent on it (a
//     connection that never LISTENs has nothing to read while idle: a byte or
//     a hang-up there is the server closing it), so a statement is not sent on
//     a connection already known dead;
//   * a statement whose bytes never all left (the send or the flush failed)
//     cannot have run: it goes back to the front of the queue, once;
//   * a statement a read-only server refused (25006: a primary demoted under
//     us, as locks/database.h) did not run either: its connection is dropped
//     and it goes back to the front of the queue, once;
//   * once all its bytes were handed to the kernel, a broken connection
//     leaves the outcome unknown: the reply says may_have_committed, and the
//     caller must look the outcome up (or, for a rate-limit take, count it as
//     taken) before it tells anyone what happened.
//
// Not thread-safe: every call, and every callback, is on the loop's thread.
// The loop owns the epoll; the pool asks it to watch fds (AsyncLoop) and is
// told their events (OnEvent) and the time (Tick).
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "locks/database.h"
#include "locks/statements.h"

namespace paintlock::locks {

// What the pool needs from the event loop that owns it.
class AsyncLoop {
 public:
  virtual ~AsyncLoop() = default;
  // Watch `fd` for `events` (EPOLLIN, EPOLLOUT) and report them with
  // AsyncPool::OnEvent(tag, events); events 0: stop watching `fd`. An fd may
  // come back under a number the loop watched before (libpq closed a socket
  // and opened another): WatchInEpoll below handles that.
  virtual void Watch(int fd, std::uint32_t events, void* tag) = 0;
};

// For AsyncLoop::Watch on an epoll instance: modifies `fd`'s registration, or
// adds it if epoll has none (anymore); events 0 removes it (if it is there).
void WatchInEpoll(int epoll_fd, int fd, std::uint32_t events, std::uint64_t data);

struct AsyncPoolOptions {
  std::string url;  // libpq connection string or URI; may hold a password: never logged
  int connections = 4;
  // (name, SQL): Submit() names a statement by its index here.
  std::vector<std::pair<std::string, std::string>> statements;
  StatementMode mode = StatementMode::kNamed;  // kUnnamed: the text is sent every time
  // Run once on each new connection before any statement (SET …); may be empty.
  std::string session_setup;
  std::chrono::milliseconds connect_timeout{5000};
  // A statement that found no ready connection for this long fails unrun.
  std::chrono::milliseconds queue_timeout{5000};
  std::chrono::milliseconds reconnect_min{50}, reconnect_max{2000};  // the back-off
};

// A statement's outcome. Moves only; owns its PGresult.
class AsyncReply {
 public:
  AsyncReply() = default;
  AsyncReply(PGresult* result, std::string error, bool may_have_committed);
  AsyncReply(AsyncReply&&) noexcept = default;
  AsyncReply& operator=(AsyncReply&&) noexcept = default;

  // The statement ran and returned rows or a command status.
  bool ok() const;
  // The connection broke after the statement was sent: it may have run.
  bool may_have_committed() const { return may_have_committed_; }
  // Five characters for an SQL error (e.g. "55P03"); empty otherwise.
  std::string sqlstate() const;
  // Safe to log (the server's or libpq's message); never shown to a client.
  const std::string& error() const { return error_; }
  int rows() const;
  // The value of column `name` in `row`; "" for NULL or no such column.
  std::string Value(int row, const char* name) const;
  // A reply that is not ok(), as locks::Database::Run() reports the same
  // failure (and logs it, naming `what`): lock_timeout kContended; a lost
  // connection, a timeout or a shutdown kUnavailable (may_have_committed as
  // above); anything else kInternal.
  DbFailure Failure(const char* what) const;

 private:
  struct Clear {
    void operator()(PGresult* r) const { PQclear(r); }
  };
  std::unique_ptr<PGresult, Clear> result_;
  std::string error_;
  bool may_have_committed_ = false;
};

class AsyncPool {
 public:
  using Clock = std::chrono::steady_clock;
  using Done = std::function<void(AsyncReply)>;
  using Param = std::optional<std::string>;  // nullopt: NULL

  // Starts connecting every connection at once (nothing blocks).
  AsyncPool(AsyncPoolOptions options, AsyncLoop& loop);
  ~AsyncPool();  // closes every connection; waiting and in-flight statements are dropped unrun
  AsyncPool(const AsyncPool&) = delete;
  AsyncPool& operator=(const AsyncPool&) = delete;

  // Queues statement `statement` (an index into options.statements) with its
  // parameters (text format, or NULL); `done` is called exactly once, on this thread:
  // usually from OnEvent or Tick, before Submit returns only if the statement
  // failed at once (its connection broke as it was sent, twice). If `wanted`
  // is given, it is asked just before the statement is sent; false drops the
  // statement unrun, and then `done` is never called (nobody is waiting).
  void Submit(int statement, std::vector<Param> params, Done done,
              std::function<bool()> wanted = nullptr);

  // An event for a tag the pool passed to AsyncLoop::Watch.
  void OnEvent(void* tag, std::uint32_t events);

  // The loop's word that every event for the pool's sockets reported by an
  // epoll_wait begun at `wait_began` has been passed to OnEvent. A connection
  // idle since before then that epoll did not report was open then, so
  // Dispatch sends on it without the poll(2) it otherwise makes first (a
  // syscall a statement saved; a close that came since is found by the
  // statement, as one coming just after the poll would be). A loop that
  // never says so gets the poll every time.
  void EventsRead(Clock::time_point wait_began);

  // Starts the reconnects that are due and gives up connects past their
  // timeout; returns when it next needs a call (Clock::time_point::max(): never).
  Clock::time_point Tick(Clock::time_point now);

  int ready() const { return ready_; }  // connections idle or busy now
  std::size_t waiting() const { return queue_.size(); }
  std::uint64_t connects() const { return connects_; }  // connections made ready, ever

 private:
  struct Job {
    int statement = 0;
    std::vector<Param> params;
    Done done;
    std::function<bool()> wanted;
    Clock::time_point queued;
    bool requeued = false;
  };
  struct Conn;

  void StartConnecting(Conn& c, Clock::time_point now);
  void ContinueConnecting(Conn& c);
  void SendNextSetupStep(Conn& c);
  void Drive(Conn& c, std::uint32_t events);
  void Finished(Conn& c, PGresult* last);
  void Fail(Conn& c, const std::string& why);
  void Send(Conn& c);
  void Dispatch();
  void Deliver(Job job, AsyncReply reply);
  void WatchSocket(Conn& c, std::uint32_t events);

  AsyncPoolOptions options_;
  AsyncLoop& loop_;
  std::vector<std::unique_ptr<Conn>> conns_;
  std::deque<Job> queue_;
  std::uint64_t connects_ = 0;
  Clock::time_point events_read_;  // EventsRead's latest wait_began
  int ready_ = 0;  // connections idle or busy (kept as they change: read after every event)
  // Connection attempts failing since the first of them (logged once, not at
  // every retry); none failing when failed_attempts_ is 0.
  int failed_attempts_ = 0;
  Clock::time_point connect_failing_since_;
  bool dispatching_ = false;
};

}  // namespace paintlock::locks
