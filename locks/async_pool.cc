#include "locks/async_pool.h"

#include <poll.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/log.h"

namespace paintlock::locks {

void WatchInEpoll(int epoll_fd, int fd, std::uint32_t events, std::uint64_t data) {
  if (events == 0) {
    epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    return;
  }
  epoll_event e{};
  e.events = events;
  e.data.u64 = data;
  if (epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &e) != 0 && errno == ENOENT) {
    epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &e);
  }
}

// ------------------------------------------------------------------ reply --

AsyncReply::AsyncReply(PGresult* result, std::string error, bool may_have_committed)
    : result_(result), error_(std::move(error)), may_have_committed_(may_have_committed) {}

bool AsyncReply::ok() const {
  if (!result_) return false;
  const ExecStatusType s = PQresultStatus(result_.get());
  return s == PGRES_TUPLES_OK || s == PGRES_COMMAND_OK;
}

std::string AsyncReply::sqlstate() const {
  if (!result_) return "";
  const char* state = PQresultErrorField(result_.get(), PG_DIAG_SQLSTATE);
  return state ? state : "";
}

int AsyncReply::rows() const { return ok() ? PQntuples(result_.get()) : 0; }

std::string AsyncReply::Value(int row, const char* name) const {
  if (row < 0 || row >= rows()) return "";
  const int column = PQfnumber(result_.get(), name);
  if (column < 0 || PQgetisnull(result_.get(), row, column)) return "";
  return PQgetvalue(result_.get(), row, column);
}

DbFailure AsyncReply::Failure(const char* what) const {
  const std::string state = sqlstate();
  if (state == "55P03") return DbFailure{DbFailureKind::kContended, "lock_timeout"};
  if (!result_ || IsUnavailableState(state) || state == "40001" || state == "40P01") {
    base::LogWarn(may_have_committed_ ? "database_outcome_unknown" : "database_unavailable",
                  {{"operation", what}, {"sqlstate", state}, {"error", error_}});
    return DbFailure{DbFailureKind::kUnavailable, error_, may_have_committed_};
  }
  base::LogError("database_error", {{"operation", what}, {"sqlstate", state}, {"error", error_}});
  return DbFailure{DbFailureKind::kInternal, error_};
}

// ------------------------------------------------------------------- pool --

struct AsyncPool::Conn {
  enum class State { kDown, kConnecting, kSettingUp, kIdle, kBusy } state = State::kDown;
  PGconn* pg = nullptr;
  int fd = -1;                       // the socket the loop watches for it (-1: none)
  std::uint32_t watched = 0;         // what it watches
  Clock::time_point retry_at;        // kDown: the next attempt
  Clock::time_point setup_deadline;  // kConnecting, kSettingUp
  std::chrono::milliseconds backoff{0};
  std::size_t setup_step = 0;    // kSettingUp: 0 the session settings, then each statement
  Job job;                       // kBusy
  bool sent = false;             // kBusy: every byte of the statement left (it may run)
  PGresult* last = nullptr;      // the current exchange's last result so far
  Clock::time_point idle_since;  // kIdle: since when
};

namespace {

std::string Message(PGconn* pg, const char* fallback) {
  std::string m = pg ? PQerrorMessage(pg) : "";
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m.empty() ? fallback : m;
}

bool SqlStateIs(const PGresult* r, const char* state) {
  const char* s = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  return s && std::string(s) == state;
}

// An idle connection has nothing to read: a byte or a hang-up is the server
// closing it (locks/database.cc checks its pooled connections the same way).
bool IdleLooksDead(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) != 0;
}

}  // namespace

AsyncPool::AsyncPool(AsyncPoolOptions options, AsyncLoop& loop)
    : options_(std::move(options)), loop_(loop) {
  const auto now = Clock::now();
  for (int i = 0; i < std::max(1, options_.connections); ++i) {
    conns_.push_back(std::make_unique<Conn>());
    StartConnecting(*conns_.back(), now);
  }
}

AsyncPool::~AsyncPool() {
  for (auto& c : conns_) {
    if (!c->pg) continue;
    if (c->fd >= 0 && PQsocket(c->pg) == c->fd) loop_.Watch(c->fd, 0, c.get());
    PQclear(c->last);
    PQfinish(c->pg);
  }
}

void AsyncPool::WatchSocket(Conn& c, std::uint32_t events) {
  const int fd = PQsocket(c.pg);
  if (fd == c.fd && events == c.watched) return;
  if (fd < 0) return;
  loop_.Watch(fd, events, &c);
  c.fd = fd;
  c.watched = events;
}

void AsyncPool::StartConnecting(Conn& c, Clock::time_point now) {
  c.pg = PQconnectStart(options_.url.c_str());
  c.fd = -1;
  c.watched = 0;
  c.setup_deadline = now + options_.connect_timeout;
  if (!c.pg || PQstatus(c.pg) == CONNECTION_BAD) {
    return Fail(c, Message(c.pg, "cannot start a connection"));
  }
  c.state = Conn::State::kConnecting;
  WatchSocket(c, EPOLLOUT);  // libpq: begin as if PQconnectPoll had asked to write
}

void AsyncPool::ContinueConnecting(Conn& c) {
  switch (PQconnectPoll(c.pg)) {
    // While connecting, libpq may close a socket and open the next (another
    // host) under the same number, which epoll forgot: always re-register.
    case PGRES_POLLING_READING:
      c.watched = 0;
      return WatchSocket(c, EPOLLIN);
    case PGRES_POLLING_WRITING:
      c.watched = 0;
      return WatchSocket(c, EPOLLOUT);
    case PGRES_POLLING_OK:
      if (PQsetnonblocking(c.pg, 1) != 0) return Fail(c, Message(c.pg, "cannot go non-blocking"));
      c.state = Conn::State::kSettingUp;
      c.setup_step = 0;
      return SendNextSetupStep(c);
    default:
      return Fail(c, Message(c.pg, "connection failed"));
  }
}

void AsyncPool::SendNextSetupStep(Conn& c) {
  const bool named = options_.mode == StatementMode::kNamed;
  const std::size_t steps = 1 + (named ? options_.statements.size() : 0);
  while (c.setup_step < steps) {
    int sent = 0;
    if (c.setup_step == 0) {
      if (!options_.session_setup.empty()) {
        sent = PQsendQuery(c.pg, options_.session_setup.c_str()) ? 1 : -1;
      }
    } else {
      const auto& [name, sql] = options_.statements[c.setup_step - 1];
      sent = PQsendPrepare(c.pg, name.c_str(), sql.c_str(), 0, nullptr) ? 1 : -1;
    }
    if (sent < 0) return Fail(c, Message(c.pg, "cannot send the set-up"));
    if (sent > 0) {
      const int flushed = PQflush(c.pg);
      if (flushed < 0) return Fail(c, Message(c.pg, "cannot send the set-up"));
      return WatchSocket(c, flushed ? EPOLLIN | EPOLLOUT : EPOLLIN);
    }
    ++c.setup_step;  // nothing to send for this step
  }
  c.state = Conn::State::kIdle;
  c.idle_since = Clock::now();
  c.backoff = std::chrono::milliseconds(0);
  ++connects_;
  ++ready_;
  if (failed_attempts_ > 0) {
    const auto failing_for = std::chrono::duration_cast<std::chrono::milliseconds>(
        Clock::now() - connect_failing_since_);
    base::LogInfo("database_connected_again", {{"async", true},
                                               {"failed_attempts", failed_attempts_},
                                               {"failing_for_ms", failing_for.count()}});
    failed_attempts_ = 0;
  }
  WatchSocket(c, EPOLLIN);
  Dispatch();
}

void AsyncPool::OnEvent(void* tag, std::uint32_t events) {
  Conn& c = *static_cast<Conn*>(tag);
  switch (c.state) {
    case Conn::State::kDown:
      return;  // an event queued before the connection was dropped
    case Conn::State::kConnecting:
      return ContinueConnecting(c);
    case Conn::State::kIdle:
      return Fail(c, "closed by the server while idle");
    case Conn::State::kSettingUp:
    case Conn::State::kBusy:
      return Drive(c, events);
  }
}

void AsyncPool::Drive(Conn& c, std::uint32_t events) {
  if (events & EPOLLOUT) {
    const int flushed = PQflush(c.pg);
    if (flushed < 0) return Fail(c, Message(c.pg, "cannot send"));
    if (flushed == 0) {
      c.sent = true;
      WatchSocket(c, EPOLLIN);
    }
  }
  if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR))) return;
  if (!PQconsumeInput(c.pg)) return Fail(c, Message(c.pg, "connection lost"));
  while (!PQisBusy(c.pg)) {
    PGresult* r = PQgetResult(c.pg);
    if (!r) {
      PGresult* last = c.last;
      c.last = nullptr;
      return Finished(c, last);
    }
    PQclear(c.last);
    c.last = r;
  }
}

void AsyncPool::Finished(Conn& c, PGresult* last) {
  const ExecStatusType status = last ? PQresultStatus(last) : PGRES_FATAL_ERROR;
  const bool ok = status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK;
  if (c.state == Conn::State::kSettingUp) {
    std::string why = last ? PQresultErrorMessage(last) : "no answer to the set-up";
    PQclear(last);
    if (!ok) return Fail(c, why);
    ++c.setup_step;
    return SendNextSetupStep(c);
  }
  std::string error = ok ? "" : (last ? PQresultErrorMessage(last) : "no result");
  while (!error.empty() && error.back() == '\n') error.pop_back();
  // A FATAL error ends the connection, and may come after the statement
  // committed (the server was told to terminate between its commit and its
  // answer): that is a lost connection, not a failed statement.
  const char* severity = last ? PQresultErrorField(last, PG_DIAG_SEVERITY_NONLOCALIZED) : nullptr;
  if (!ok && SqlStateIs(last, "25006")) {
    PQclear(last);
    c.sent = false;  // refused, not run: once more, on a fresh connection
    return Fail(c, "the server is read-only now (a demoted primary)");
  }
  if (!ok &&
      (PQstatus(c.pg) == CONNECTION_BAD ||
       (severity && (std::string(severity) == "FATAL" || std::string(severity) == "PANIC")))) {
    PQclear(last);
    return Fail(c, error);
  }
  Job job = std::move(c.job);
  c.state = Conn::State::kIdle;  // before the callback, which may submit again
  c.idle_since = Clock::now();
  Deliver(std::move(job), AsyncReply(last, std::move(error), false));
  Dispatch();
}

void AsyncPool::Fail(Conn& c, const std::string& why) {
  const bool had_job = c.state == Conn::State::kBusy;
  const bool was_ready = had_job || c.state == Conn::State::kIdle;
  if (was_ready) --ready_;
  if (c.pg) {
    // libpq may have closed the socket already (epoll forgot it then), and
    // its number may belong to someone else by now: unwatch only our own.
    if (c.fd >= 0 && PQsocket(c.pg) == c.fd) loop_.Watch(c.fd, 0, &c);
    PQclear(c.last);
    c.last = nullptr;
    PQfinish(c.pg);
    c.pg = nullptr;
  }
  c.fd = -1;
  c.watched = 0;
  c.state = Conn::State::kDown;
  c.backoff = std::clamp(c.backoff * 2, options_.reconnect_min, options_.reconnect_max);
  c.retry_at = Clock::now() + c.backoff;
  const nlohmann::json fields = {{"why", why}, {"async", true}, {"retry_in_ms", c.backoff.count()}};
  if (was_ready) {
    base::LogWarn("database_connection_dropped", fields);
  } else if (failed_attempts_ == 0) {
    // One warning for a database that does not take connections, however many
    // connections retry how often; then debug lines until one gets through
    // (database_connected_again).
    connect_failing_since_ = Clock::now();
    failed_attempts_ = 1;
    base::LogWarn("database_connect_failed", fields);
  } else {
    ++failed_attempts_;
    base::Log(base::LogLevel::kDebug, "database_connect_failed", fields);
  }
  if (had_job) {
    Job job = std::move(c.job);
    if (!c.sent && !job.requeued) {
      job.requeued = true;  // it cannot have run: once more, on another connection
      queue_.push_front(std::move(job));
    } else {
      Deliver(std::move(job), AsyncReply(nullptr, why, c.sent));
    }
  }
  Dispatch();
}

void AsyncPool::Submit(int statement, std::vector<Param> params, Done done,
                       std::function<bool()> wanted) {
  queue_.push_back(
      {statement, std::move(params), std::move(done), std::move(wanted), Clock::now(), false});
  Dispatch();
}

void AsyncPool::Dispatch() {
  if (dispatching_) return;  // Fail() and callbacks inside the loop below come back here
  dispatching_ = true;
  // First the idle connections epoll has looked at since they went idle
  // (EventsRead: a close by the server would have been its event), then the
  // ones that went idle since, each after a look of its own (a poll).
  for (const bool vouched : {true, false}) {
    for (auto& ptr : conns_) {
      if (queue_.empty()) break;
      Conn& c = *ptr;
      if (c.state != Conn::State::kIdle || (c.idle_since < events_read_) != vouched) continue;
      if (!vouched && IdleLooksDead(c.fd)) {
        Fail(c, "closed by the server while idle");
        continue;
      }
      // The first statement still wanted; the others are dropped unrun.
      std::optional<Job> job;
      while (!job && !queue_.empty()) {
        job = std::move(queue_.front());
        queue_.pop_front();
        if (job->wanted && !job->wanted()) job.reset();
      }
      if (!job) break;
      c.job = std::move(*job);
      Send(c);
    }
  }
  dispatching_ = false;
}

void AsyncPool::Send(Conn& c) {
  c.state = Conn::State::kBusy;
  c.sent = false;
  const Job& job = c.job;
  std::vector<const char*> values;
  values.reserve(job.params.size());
  for (const Param& p : job.params) values.push_back(p ? p->c_str() : nullptr);
  const auto& [name, sql] = options_.statements.at(static_cast<std::size_t>(job.statement));
  const int n = static_cast<int>(values.size());
  const int queued =
      options_.mode == StatementMode::kNamed
          ? PQsendQueryPrepared(c.pg, name.c_str(), n, values.data(), nullptr, nullptr, 0)
          : PQsendQueryParams(c.pg, sql.c_str(), n, nullptr, values.data(), nullptr, nullptr, 0);
  if (!queued) return Fail(c, Message(c.pg, "cannot send"));
  const int flushed = PQflush(c.pg);
  if (flushed < 0) return Fail(c, Message(c.pg, "cannot send"));
  c.sent = flushed == 0;
  WatchSocket(c, flushed ? EPOLLIN | EPOLLOUT : EPOLLIN);
}

void AsyncPool::EventsRead(Clock::time_point wait_began) {
  events_read_ = std::max(events_read_, wait_began);
}

void AsyncPool::Deliver(Job job, AsyncReply reply) { job.done(std::move(reply)); }

AsyncPool::Clock::time_point AsyncPool::Tick(Clock::time_point now) {
  auto next = Clock::time_point::max();
  for (auto& ptr : conns_) {
    Conn& c = *ptr;
    if (c.state == Conn::State::kDown && c.retry_at <= now) StartConnecting(c, now);
    if ((c.state == Conn::State::kConnecting || c.state == Conn::State::kSettingUp) &&
        c.setup_deadline <= now) {
      Fail(c, "connecting timed out");
    }
    if (c.state == Conn::State::kDown) next = std::min(next, c.retry_at);
    if (c.state == Conn::State::kConnecting || c.state == Conn::State::kSettingUp) {
      next = std::min(next, c.setup_deadline);
    }
  }
  while (!queue_.empty() && queue_.front().queued + options_.queue_timeout <= now) {
    Job job = std::move(queue_.front());
    queue_.pop_front();
    Deliver(std::move(job), AsyncReply(nullptr, "no database connection was ready in time", false));
  }
  if (!queue_.empty()) next = std::min(next, queue_.front().queued + options_.queue_timeout);
  return next;
}

}  // namespace paintlock::locks
