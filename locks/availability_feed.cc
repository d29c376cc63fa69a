#include "locks/availability_feed.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>

#include "base/log.h"
#include "locks/painting_id.h"
#include "locks/reservations.h"
#include "locks/sql_files.h"
#include "locks/statements.h"

namespace paintlock::locks {

namespace {

constexpr char kChannel[] = "paintlock_availability";
// Re-read a lapsing hold this long after the database says it lapses, so the
// read never comes a hair too early.
constexpr std::chrono::milliseconds kLapseMargin{25};

// Collects the painting ids of notifications until the listener takes them.
class IdReceiver final : public pqxx::notification_receiver {
 public:
  IdReceiver(pqxx::connection_base& c, std::set<std::string>* ids,
             std::atomic<std::uint64_t>* heard)
      : pqxx::notification_receiver(c, kChannel), ids_(ids), heard_(heard) {}
  void operator()(const std::string& payload, int) override {
    if (IsPaintingId(payload)) ids_->insert(payload);
    ++*heard_;
  }

 private:
  std::set<std::string>* ids_;
  std::atomic<std::uint64_t>* heard_;
};

// libpq has keepalives settings, but they would have to be spliced into
// DATABASE_URL (a URI or key=value form); setting them on its socket is
// equivalent. A peer that vanished without a FIN is noticed within about 30 s
// instead of the kernel's retransmission timeout. Unix sockets ignore them.
void SetKeepalives(int fd) {
  if (fd < 0) return;
  int on = 1, idle = 10, interval = 5, count = 3;
  unsigned int user_timeout_ms = 30000;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
}

}  // namespace

AvailabilityFeed::AvailabilityFeed(AvailabilityFeedOptions options, Sink sink, Watched watched,
                                   Current current)
    : options_(std::move(options)),
      sink_(std::move(sink)),
      watched_(std::move(watched)),
      current_(std::move(current)) {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

AvailabilityFeed::~AvailabilityFeed() {
  Stop();
  if (wake_fd_ >= 0) close(wake_fd_);
}

void AvailabilityFeed::Start() {
  thread_ = std::thread([this] { Run(); });
}

void AvailabilityFeed::Wake() {
  if (wake_fd_ >= 0) {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
  }
}

void AvailabilityFeed::DrainWakes() {
  std::uint64_t count;
  [[maybe_unused]] ssize_t n = read(wake_fd_, &count, sizeof count);
}

void AvailabilityFeed::Stop() {
  stopping_ = true;
  Wake();
  // Two threads may call Stop() at once (a signal handler's thread and a
  // destructor): only one may join.
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (thread_.joinable()) thread_.join();
}

bool AvailabilityFeed::Pause(std::chrono::milliseconds d) {
  // A Wake() does not cut the back-off short; only Stop() does.
  const auto until = std::chrono::steady_clock::now() + d;
  for (auto now = std::chrono::steady_clock::now(); !stopping_ && now < until;
       now = std::chrono::steady_clock::now()) {
    pollfd wake{wake_fd_, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - now);
    poll(&wake, 1, static_cast<int>(left.count()) + 1);
    DrainWakes();
  }
  return !stopping_;
}

void AvailabilityFeed::Run() {
  auto backoff = options_.first_backoff;
  while (!stopping_) {
    bool connected = false;
    Listen(&connected);
    if (stopping_) break;
    if (connected) backoff = options_.first_backoff;
    base::LogWarn("availability_listener_reconnecting", {{"retry_in_ms", backoff.count()}});
    if (!Pause(backoff)) break;
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

void AvailabilityFeed::Listen(bool* connected) {
  using std::chrono::steady_clock;
  try {
    pqxx::connection c(options_.database.url);
    ApplySessionSettings(c, options_.database, "paintlock-availability");
    // A full read's plan costs more than jit_above_cost: compiling it took
    // 30-35 ms of each 143-157 ms read (EXPLAIN ANALYZE, 20,000 paintings;
    // 101-104 ms without), on every gateway at every full read.
    {
      pqxx::nontransaction n(c);
      n.exec("SET jit = off");
      n.commit();
    }
    SetKeepalives(c.sock());
    std::set<std::string> due;  // notified or lapsed, not read yet
    // Listening (LISTEN) only while reading: from just before each full read
    // that makes the board current (the first, and each on waking). Not while
    // idle (UNLISTEN), so PostgreSQL does not deliver notifications for the
    // feed to drop; the full read on waking covers what changed meanwhile.
    std::optional<IdReceiver> receiver;
    lapses_.Clear();
    // Whether the sink has had everything since the last full read on this
    // connection: false until the first, and while idle.
    bool reading = false;
    // When `watched` was first seen false since it last said true (max():
    // watched, or not asked yet).
    auto unwatched_since = steady_clock::time_point::max();
    const auto idle = [&](steady_clock::time_point now) {
      if (!watched_) return false;
      if (watched_()) {
        unwatched_since = steady_clock::time_point::max();
        return false;
      }
      if (!reading) return true;  // nobody watched when it connected, or since it idled
      unwatched_since = std::min(unwatched_since, now);
      return now - unwatched_since >= options_.idle_after;
    };
    auto last_full_read = steady_clock::now();
    auto last_read = last_full_read;
    base::LogInfo("availability_feed_connected",
                  {{"channel", kChannel}, {"backend_pid", c.backendpid()}});
    if (idle(last_read)) {
      *connected = true;  // its LISTEN and first read wait for someone to watch
      if (current_) current_(false);
    }

    while (!stopping_) {
      pollfd fds[2] = {{c.sock(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
      if (fds[0].fd < 0) throw pqxx::broken_connection("the connection is closed");
      // Also delivers notifications libpq buffered while a read ran: those
      // never make the socket readable again.
      c.get_notifs();
      auto now = steady_clock::now();
      if (idle(now)) {
        receiver.reset();  // UNLISTEN
        if (reading) {
          reading = false;
          lapses_.Clear();
          if (current_) current_(false);
          base::LogInfo("availability_feed_idle", {{"why", "no stream open"},
                                                   {"idle_after_ms", options_.idle_after.count()}});
        }
        due.clear();
        poll(fds, 2, -1);
        DrainWakes();
        continue;
      }
      lapses_.TakeDue(now, &due);
      // What is in `due` is taken before a read: anything notified while it
      // runs stays for the next.
      if (!reading || now - last_full_read >= options_.full_read_interval) {
        if (!receiver) receiver.emplace(c, &due, &heard_);  // LISTEN before the read
        due.clear();
        Read(c, {});
        last_full_read = last_read = now;
        if (!reading) {
          reading = true;
          *connected = true;
          if (current_) current_(true);
        }
        continue;
      }
      const auto read_at = last_read + options_.read_interval;
      if (!due.empty() && now >= read_at) {
        std::set<std::string> ids;
        ids.swap(due);
        Read(c, ids);
        last_read = now;
        continue;
      }
      auto next = last_full_read + options_.full_read_interval;
      if (!due.empty()) next = std::min(next, read_at);
      next = std::min(next, lapses_.Next());  // the due ones wait in `due`
      if (unwatched_since != steady_clock::time_point::max()) {
        next = std::min(next, unwatched_since + options_.idle_after);
      }
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - now) +
                        std::chrono::milliseconds(1);
      poll(fds, 2, static_cast<int>(std::max<std::int64_t>(wait.count(), 0)));
      DrainWakes();
    }
  } catch (const pqxx::broken_connection& e) {
    base::LogWarn("availability_listener_lost", {{"error", BrokenConnectionDetail(e)}});
  } catch (const pqxx::sql_error& e) {
    base::LogError("availability_listener_failed",
                   {{"error", e.what()},
                    {"sqlstate", e.sqlstate()},
                    {"hint", "is the schema migrated (paintlockctl migrate)?"}});
  } catch (const std::exception& e) {
    base::LogError("availability_listener_failed", {{"error", e.what()}});
  }
}

void AvailabilityFeed::LapseSchedule::Set(const std::string& painting, Time at) {
  Forget(painting);
  at_.emplace(painting, at);
  order_.emplace(at, painting);
}

void AvailabilityFeed::LapseSchedule::Forget(const std::string& painting) {
  const auto it = at_.find(painting);
  if (it == at_.end()) return;
  order_.erase({it->second, painting});
  at_.erase(it);
}

void AvailabilityFeed::LapseSchedule::Clear() {
  at_.clear();
  order_.clear();
}

void AvailabilityFeed::LapseSchedule::TakeDue(Time now, std::set<std::string>* due) {
  while (!order_.empty() && order_.begin()->first <= now) {
    due->insert(order_.begin()->second);
    at_.erase(order_.begin()->second);
    order_.erase(order_.begin());
  }
}

AvailabilityFeed::LapseSchedule::Time AvailabilityFeed::LapseSchedule::Next() const {
  return order_.empty() ? Time::max() : order_.begin()->first;
}

void AvailabilityFeed::Read(pqxx::connection_base& c, const std::set<std::string>& ids) {
  pqxx::result rows;
  {
    pqxx::nontransaction n(c);
    // The full read (every painting) is a scan of the catalogue, unnamed and
    // planned for each read, every full_read_interval. A read of some is
    // paintlock_availability_of (sql/migrations/0027), whose plan, made once
    // per connection, reads each painting by key: planning the view for
    // every read cost as much as running it. One statement for both once
    // failed: a named statement's plan is made once for any ids, and after
    // a burst of large reads (many holds lapsing at once) PostgreSQL kept a
    // scan of every painting for the reads of a few (in make bench: 0.3–4 s
    // a read, once past statement_timeout, each holding back vacuum
    // meanwhile).
    if (ids.empty()) {
      rows = n.exec_params(NamedQuerySql("availability_read"), std::optional<std::string>());
    } else {
      rows = n.exec_params(NamedQuerySql("availability_read_some"),
                           TextArrayLiteral(std::vector<std::string>(ids.begin(), ids.end())));
    }
  }
  const auto now = std::chrono::steady_clock::now();
  if (ids.empty()) {
    lapses_.Clear();
  } else {
    for (const auto& id : ids) lapses_.Forget(id);
  }
  std::vector<PaintingAvailability> read;
  read.reserve(rows.size());
  for (const auto& row : rows) {
    PaintingAvailability a{row[0].as<std::string>(),
                           row[1].as<std::string>(),
                           row[2].as<std::string>(),
                           row[4].as<long long>(0),
                           {}};
    if (!row[5].is_null()) {
      // [[token_sha256, your_turn, window_from, window_until], ...] (sql/migrations/0010)
      for (const auto& place : nlohmann::json::parse(row[5].as<std::string>())) {
        a.line.push_back({place.at(0).get<std::string>(), place.at(1).get<bool>(),
                          place.at(2).get<std::string>(), place.at(3).get<std::string>()});
      }
    }
    if (!row[3].is_null()) {
      lapses_.Set(a.painting,
                  now + std::chrono::milliseconds(row[3].as<long long>()) + kLapseMargin);
    }
    read.push_back(std::move(a));
  }
  sink_(read);
}

}  // namespace paintlock::locks
