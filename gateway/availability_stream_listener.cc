#include "gateway/availability_stream_listener.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <pqxx/pqxx>
#include <regex>

#include "base/log.h"

namespace paintlock::gateway {

namespace {

constexpr char kChannel[] = "paintlock_availability";
// Re-read a lapsing hold this long after the database says it lapses, so the
// read never comes a hair too early.
constexpr std::chrono::milliseconds kLapseMargin{25};

bool IsPaintingId(const std::string& s) {
  static const std::regex re("^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$");
  return std::regex_match(s, re);
}

// Collects the painting ids of notifications until the listener takes them.
class IdReceiver final : public pqxx::notification_receiver {
 public:
  IdReceiver(pqxx::connection_base& c, std::set<std::string>* ids)
      : pqxx::notification_receiver(c, kChannel), ids_(ids) {}
  void operator()(const std::string& payload, int) override {
    if (IsPaintingId(payload)) ids_->insert(payload);
  }

 private:
  std::set<std::string>* ids_;
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

std::string ArrayLiteral(const std::set<std::string>& ids) {
  std::string out = "{";
  for (const auto& id : ids) {
    if (out.size() > 1) out += ",";
    out += "\"" + id + "\"";  // ids are [A-Za-z0-9_.-]: nothing to escape
  }
  return out + "}";
}

}  // namespace

AvailabilityListener::AvailabilityListener(AvailabilityListenerOptions options,
                                           AvailabilityStream& stream)
    : options_(std::move(options)), stream_(stream) {
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

AvailabilityListener::~AvailabilityListener() {
  Stop();
  if (wake_fd_ >= 0) close(wake_fd_);
}

void AvailabilityListener::Start() {
  thread_ = std::thread([this] { Run(); });
}

void AvailabilityListener::Stop() {
  stopping_ = true;
  if (wake_fd_ >= 0) {
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(wake_fd_, &one, sizeof one);
  }
  // Two threads may call Stop() at once (a signal handler's thread and a
  // destructor): only one may join.
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (thread_.joinable()) thread_.join();
}

bool AvailabilityListener::Pause(std::chrono::milliseconds d) {
  pollfd wake{wake_fd_, POLLIN, 0};
  poll(&wake, 1, static_cast<int>(d.count()));
  return !stopping_;
}

void AvailabilityListener::Run() {
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

void AvailabilityListener::Listen(bool* connected) {
  using std::chrono::steady_clock;
  try {
    pqxx::connection c(options_.database_url);
    {
      pqxx::nontransaction n(c);
      n.exec("SET application_name = 'paintlock-availability'");
      n.exec("SET statement_timeout = " + std::to_string(options_.statement_timeout.count()));
    }
    SetKeepalives(c.sock());
    std::set<std::string> notified;
    IdReceiver receiver(c, &notified);  // LISTEN, before the first read
    lapse_due_.clear();
    Read(c, {});
    auto last_full_read = steady_clock::now();
    *connected = true;
    base::LogInfo("availability_listening", {{"channel", kChannel}, {"backend_pid", c.backendpid()}});

    while (!stopping_) {
      // Also delivers notifications libpq buffered while a read ran: those
      // never make the socket readable again.
      c.get_notifs();
      auto now = steady_clock::now();
      std::set<std::string> ids;
      ids.swap(notified);
      for (const auto& [id, due] : lapse_due_) {
        if (due <= now) ids.insert(id);
      }
      if (now - last_full_read >= options_.full_read_interval) {
        Read(c, {});
        last_full_read = now;
        continue;
      }
      if (!ids.empty()) {
        Read(c, ids);
        continue;
      }
      auto next = last_full_read + options_.full_read_interval;
      for (const auto& [id, due] : lapse_due_) next = std::min(next, due);
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - now) +
                        std::chrono::milliseconds(1);
      pollfd fds[2] = {{c.sock(), POLLIN, 0}, {wake_fd_, POLLIN, 0}};
      if (fds[0].fd < 0) throw pqxx::broken_connection("the connection is closed");
      poll(fds, 2, static_cast<int>(std::max<std::int64_t>(wait.count(), 0)));
    }
  } catch (const pqxx::broken_connection& e) {
    base::LogWarn("availability_listener_lost", {{"error", e.what()}});
  } catch (const pqxx::sql_error& e) {
    base::LogError("availability_listener_failed",
             {{"error", e.what()},
              {"sqlstate", e.sqlstate()},
              {"hint", "is the schema migrated (paintlockctl migrate)?"}});
  } catch (const std::exception& e) {
    base::LogError("availability_listener_failed", {{"error", e.what()}});
  }
}

void AvailabilityListener::Read(pqxx::connection_base& c, const std::set<std::string>& ids) {
  pqxx::result rows;
  {
    pqxx::nontransaction n(c);
    const char* columns = "SELECT id, state, coalesce(free_at, ''), free_in_ms FROM ";
    rows = ids.empty() ? n.exec(std::string(columns) + "paintlock_availability(NULL)")
                       : n.exec_params(std::string(columns) + "paintlock_availability($1::text[])",
                                       ArrayLiteral(ids));
  }
  const auto now = std::chrono::steady_clock::now();
  if (ids.empty()) {
    lapse_due_.clear();
  } else {
    for (const auto& id : ids) lapse_due_.erase(id);
  }
  std::vector<Availability> read;
  read.reserve(rows.size());
  for (const auto& row : rows) {
    Availability a{row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<std::string>()};
    if (!row[3].is_null()) {
      lapse_due_[a.painting] =
          now + std::chrono::milliseconds(row[3].as<long long>()) + kLapseMargin;
    }
    read.push_back(std::move(a));
  }
  const int changed = stream_.Update(read);
  if (changed > 0)
    Log(base::LogLevel::kDebug, "availability_changed", {{"read", read.size()}, {"changed", changed}});
}

}  // namespace paintlock::gateway
