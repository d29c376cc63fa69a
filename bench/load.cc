#include "bench/load.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>

#include "base/text.h"

// The engine speaks just enough HTTP/1.1 to its own gateway by hand rather
// than through a client library: httplib::Client blocks a thread per
// connection (the cost this engine exists to avoid) and libcurl's multi
// interface would add a dependency and its own per-request bookkeeping for
// four fixed POST routes whose answers always carry Content-Length.

namespace paintlock::bench {

namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxHead = 64 * 1024;
constexpr auto kDrainLimit = std::chrono::seconds(30);

struct Target {
  std::string host;
  std::string port;
};

Target ParseUrl(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (url.compare(0, kScheme.size(), kScheme) != 0) {
    throw std::runtime_error("the URL must start with http://, got \"" + url + "\"");
  }
  std::string rest = url.substr(kScheme.size());
  if (const auto slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
  const auto colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
    throw std::runtime_error("the URL needs a host and a port, got \"" + url + "\"");
  }
  return {rest.substr(0, colon), rest.substr(colon + 1)};
}

// A connected, non-blocking TCP socket with Nagle off; -1 on failure.
int Connect(const Target& target) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(target.host.c_str(), target.port.c_str(), &hints, &found) != 0) return -1;
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(found, freeaddrinfo);
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
      return fd;
    }
    close(fd);
  }
  return -1;
}

struct ClientTotals {
  std::vector<double> latencies_ms;
  long ok = 0;
  long refused = 0;
  long errors = 0;
  bool lost = false;
};

// One client: its connection, its key sequence and the iteration in flight.
struct Client {
  int fd = -1;
  std::mt19937 rng;
  int key = 0;
  int step = 0;
  Clock::time_point started;
  bool in_flight = false;
  bool wants_write = false;
  std::string out;  // request bytes not yet sent
  std::string in;   // answer bytes not yet used
  ClientTotals* totals = nullptr;
};

// Drives its share of the clients until `stop` and their last iterations end.
class Loop {
 public:
  Loop(const LoadOptions& o, const Target& target, const Workload& workload,
       const std::atomic<bool>& stop)
      : o_(o),
        target_(target),
        workload_(workload),
        stop_(stop),
        head_("Host: " + target.host + ":" + target.port + "\r\nAuthorization: Bearer " +
              o.api_key + "\r\nContent-Type: application/json\r\nContent-Length: "),
        epoll_(epoll_create1(EPOLL_CLOEXEC)) {}
  ~Loop() { close(epoll_); }
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  void Add(int c, ClientTotals* totals) {
    auto client = std::make_unique<Client>();
    client->rng.seed(o_.seed + static_cast<std::uint32_t>(c));
    client->totals = totals;
    totals->latencies_ms.reserve(200000);
    clients_.push_back(std::move(client));
  }

  void Run() {
    for (auto& c : clients_) Begin(*c);
    std::vector<epoll_event> events(64);
    std::optional<Clock::time_point> stopped;
    while (Active() > 0) {
      if (!stopped && stop_.load(std::memory_order_relaxed)) stopped = Clock::now();
      if (stopped && Clock::now() - *stopped > kDrainLimit) break;
      const int n = epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), 50);
      for (int i = 0; i < n; ++i) {
        Client& c = *static_cast<Client*>(events[static_cast<std::size_t>(i)].data.ptr);
        const std::uint32_t what = events[static_cast<std::size_t>(i)].events;
        if ((what & EPOLLOUT) != 0 && !Flush(c)) continue;
        if ((what & (EPOLLIN | EPOLLERR | EPOLLHUP)) != 0) Read(c);
      }
    }
    for (auto& c : clients_) Disconnect(*c);
  }

 private:
  int Active() const {
    int n = 0;
    for (const auto& c : clients_) n += c->in_flight ? 1 : 0;
    return n;
  }

  // Starts the client's next iteration, (re)connecting first if needed.
  void Begin(Client& c) {
    if (stop_.load(std::memory_order_relaxed)) return Disconnect(c);
    if (c.fd < 0) {
      c.fd = Connect(target_);
      if (c.fd < 0) {
        ++c.totals->errors;
        c.totals->lost = true;  // the gateway is gone: spinning on connect would only burn CPU
        return;
      }
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.ptr = &c;
      epoll_ctl(epoll_, EPOLL_CTL_ADD, c.fd, &ev);
      c.in.clear();
    }
    std::uniform_int_distribution<int> pick(1, o_.keys);
    c.key = pick(c.rng);
    c.step = 0;
    c.started = Clock::now();
    c.in_flight = true;
    Send(c, workload_.start(c.key));
  }

  void Send(Client& c, const Request& r) {
    c.out = "POST " + r.path + " HTTP/1.1\r\n" + head_ + std::to_string(r.body.size()) +
            "\r\n\r\n" + r.body;
    Flush(c);
  }

  // Writes what it can of c.out; false when the connection failed (and the
  // iteration was ended).
  bool Flush(Client& c) {
    while (!c.out.empty()) {
      const ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
      if (n > 0) {
        c.out.erase(0, static_cast<std::size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        Watch(c, true);  // the rest when the socket can take it
        return true;
      } else {
        Finish(c, Outcome::kNoAnswer);
        return false;
      }
    }
    if (c.wants_write) Watch(c, false);
    return true;
  }

  void Watch(Client& c, bool writable) {
    c.wants_write = writable;
    epoll_event ev{};
    ev.events = EPOLLIN | (writable ? EPOLLOUT : 0U);
    ev.data.ptr = &c;
    epoll_ctl(epoll_, EPOLL_CTL_MOD, c.fd, &ev);
  }

  void Read(Client& c) {
    char buffer[16384];
    for (;;) {
      const ssize_t n = recv(c.fd, buffer, sizeof buffer, 0);
      if (n > 0) {
        c.in.append(buffer, static_cast<std::size_t>(n));
        if (static_cast<std::size_t>(n) < sizeof buffer) break;
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        break;
      } else {
        return Finish(c, Outcome::kNoAnswer);  // closed or failed mid-iteration
      }
    }
    ParsedResponse r;
    switch (ParseResponse(c.in, &r)) {
      case ParseResult::kNeedMore:
        return;
      case ParseResult::kBad:
        return Finish(c, Outcome::kNoAnswer);
      case ParseResult::kDone:
        break;
    }
    if (!c.in_flight || r.used != c.in.size()) {
      return Finish(c, Outcome::kNoAnswer);  // an answer nobody asked for
    }
    auto next = workload_.next(c.step, Answer{r.status, r.body});
    c.in.clear();  // r.body is not used past this point
    if (r.close) Disconnect(c);
    if (auto* request = std::get_if<Request>(&next)) {
      if (c.fd < 0) return Finish(c, Outcome::kNoAnswer);
      ++c.step;
      return Send(c, *request);
    }
    Finish(c, std::get<Outcome>(next));
  }

  // Records the iteration's outcome and latency and starts the next one.
  void Finish(Client& c, Outcome outcome) {
    if (!c.in_flight) return Disconnect(c);
    c.in_flight = false;
    ClientTotals& t = *c.totals;
    t.latencies_ms.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - c.started).count());
    switch (outcome) {
      case Outcome::kOk:
        ++t.ok;
        break;
      case Outcome::kRefused:
        ++t.refused;
        break;
      case Outcome::kNoAnswer:
        Disconnect(c);  // reconnect for the next iteration
        ++t.errors;
        break;
      case Outcome::kError:
        ++t.errors;
        break;
    }
    Begin(c);
  }

  void Disconnect(Client& c) {
    if (c.fd < 0) return;
    epoll_ctl(epoll_, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
    c.fd = -1;
    c.out.clear();
    c.in.clear();
    c.wants_write = false;
  }

  const LoadOptions& o_;
  const Target& target_;
  const Workload& workload_;
  const std::atomic<bool>& stop_;
  const std::string head_;  // the request headers after the request line, up to the length
  const int epoll_;
  std::vector<std::unique_ptr<Client>> clients_;
};

// The three headers the reader needs, from one pass over the head's lines.
struct Framing {
  std::string_view content_length, transfer_encoding, connection;
};

Framing FramingOf(std::string_view head) {
  Framing f;
  std::size_t line = head.find("\r\n");  // past the status line
  while (line != std::string_view::npos && line + 2 < head.size()) {
    const std::size_t start = line + 2;
    const std::size_t end = std::min(head.find("\r\n", start), head.size());
    const std::string_view field = head.substr(start, end - start);
    if (const std::size_t colon = field.find(':'); colon != std::string_view::npos) {
      const std::string name = base::AsciiLower(base::TrimView(field.substr(0, colon)));
      const std::string_view value = base::TrimView(field.substr(colon + 1));
      if (name == "content-length") f.content_length = value;
      if (name == "transfer-encoding") f.transfer_encoding = value;
      if (name == "connection") f.connection = value;
    }
    line = end == head.size() ? std::string_view::npos : end;
  }
  return f;
}

}  // namespace

ParseResult ParseResponse(std::string_view bytes, ParsedResponse* out) {
  const std::size_t head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string_view::npos) {
    return bytes.size() > kMaxHead ? ParseResult::kBad : ParseResult::kNeedMore;
  }
  if (head_end > kMaxHead) return ParseResult::kBad;
  const std::string_view head = bytes.substr(0, head_end);
  // "HTTP/1.1 201 Created": the three digits after the first space.
  if (head.compare(0, 5, "HTTP/") != 0) return ParseResult::kBad;
  const std::size_t space = head.find(' ');
  if (space == std::string_view::npos || space + 4 > head.size()) return ParseResult::kBad;
  int status = 0;
  for (std::size_t i = space + 1; i < space + 4; ++i) {
    if (head[i] < '0' || head[i] > '9') return ParseResult::kBad;
    status = status * 10 + (head[i] - '0');
  }
  const Framing framing = FramingOf(head);
  if (!framing.transfer_encoding.empty()) return ParseResult::kBad;
  const std::string_view length_text = framing.content_length;
  if (length_text.empty() || length_text.size() > 9) return ParseResult::kBad;
  std::size_t length = 0;
  for (const char ch : length_text) {
    if (ch < '0' || ch > '9') return ParseResult::kBad;
    length = length * 10 + static_cast<std::size_t>(ch - '0');
  }
  const std::size_t body_start = head_end + 4;
  if (bytes.size() - body_start < length) return ParseResult::kNeedMore;
  out->used = body_start + length;
  out->status = status;
  out->close = base::AsciiLower(framing.connection) == "close";
  out->body = bytes.substr(body_start, length);
  return ParseResult::kDone;
}

namespace {

// The run's availability streams: each sends one GET /v1/paintings/stream and
// then only reads, discarding the events, until `stop`. A stream whose answer
// is not a 200, or that the gateway closes before the end, is lost.
class Watchers {
 public:
  Watchers(const Target& target, int count, const std::atomic<bool>& stop)
      : stop_(stop), epoll_(epoll_create1(EPOLL_CLOEXEC)) {
    const std::string request = "GET /v1/paintings/stream HTTP/1.1\r\nHost: " + target.host + ":" +
                                target.port + "\r\nAccept: text/event-stream\r\n\r\n";
    for (int i = 0; i < count; ++i) {
      const int fd = Connect(target);
      // A fresh socket's buffer takes the short request whole.
      if (fd < 0 || send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
                        static_cast<ssize_t>(request.size())) {
        if (fd >= 0) close(fd);
        ++lost_;
        continue;
      }
      epoll_event e{};
      e.events = EPOLLIN;
      e.data.u64 = streams_.size();
      epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &e);
      streams_.push_back({fd, false});
    }
  }
  ~Watchers() {
    for (const Stream& w : streams_) {
      if (w.fd >= 0) close(w.fd);
    }
    close(epoll_);
  }
  Watchers(const Watchers&) = delete;
  Watchers& operator=(const Watchers&) = delete;

  // Reads until every stream opened has its answer (or is closed) and then
  // until 200 ms pass with nothing sent, at most 10 s in all: the load starts
  // once the gateway has sent every stream its first chunk (every painting).
  void AwaitFirstChunks() {
    const auto until = Clock::now() + std::chrono::seconds(10);
    while (answered_ < static_cast<long>(streams_.size()) && Clock::now() < until) Poll(100);
    while (Poll(200) > 0 && Clock::now() < until) {
    }
  }

  // Reads until `stop`.
  void Run() {
    while (!stop_) Poll(100);
  }

  long lost() const { return lost_; }
  long long bytes() const { return bytes_; }

 private:
  struct Stream {
    int fd;
    bool answered;
  };

  // One wait for events, then reading what came; returns how many streams had some.
  int Poll(int timeout_ms) {
    epoll_event events[64];
    const int n = epoll_wait(epoll_, events, 64, timeout_ms);
    for (int i = 0; i < n; ++i) Drain(streams_[events[i].data.u64]);
    return n;
  }

  // Reads what `w` has now. Its first bytes must be a 200's status line; a
  // refusal, an end or an error loses it.
  void Drain(Stream& w) {
    constexpr std::string_view kOk = "HTTP/1.1 200 ";
    char buf[64 * 1024];
    for (;;) {
      const ssize_t got = recv(w.fd, buf, sizeof buf, 0);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (got > 0) bytes_ += got;
      const bool first = !w.answered;
      if (first) {
        w.answered = true;
        ++answered_;
      }
      if (got <= 0 ||
          (first &&
           std::string_view(buf, static_cast<std::size_t>(got)).substr(0, kOk.size()) != kOk)) {
        return Lose(w);
      }
    }
  }

  void Lose(Stream& w) {
    epoll_ctl(epoll_, EPOLL_CTL_DEL, w.fd, nullptr);
    close(w.fd);
    w.fd = -1;
    ++lost_;
  }

  const std::atomic<bool>& stop_;
  const int epoll_;
  std::vector<Stream> streams_;
  long answered_ = 0;
  long lost_ = 0;
  long long bytes_ = 0;
};

}  // namespace

nlohmann::json LoadResult::ToJson() const {
  return {{"iterations", iterations},
          {"ok", ok},
          {"refused", refused},
          {"errors", errors},
          {"clients_lost", clients_lost},
          {"watchers_lost", watchers_lost},
          {"watcher_bytes", watcher_bytes},
          {"seconds", seconds},
          {"tps", tps()},
          {"p50_ms", p50_ms},
          {"p99_ms", p99_ms}};
}

double Percentile(std::vector<double>& values, double p) {
  if (values.empty()) return 0;
  const auto k =
      static_cast<std::size_t>(std::clamp(p, 0.0, 1.0) * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

LoadResult RunLoad(const LoadOptions& o, const Workload& workload) {
  const Target target = ParseUrl(o.url);
  const int threads = std::max(1, std::min(o.threads, o.clients));
  std::atomic<bool> stop{false};
  std::vector<ClientTotals> totals(static_cast<std::size_t>(o.clients));
  std::vector<std::unique_ptr<Loop>> loops;
  for (int t = 0; t < threads; ++t) {
    loops.push_back(std::make_unique<Loop>(o, target, workload, stop));
  }
  for (int c = 0; c < o.clients; ++c) {
    loops[static_cast<std::size_t>(c % threads)]->Add(c, &totals[static_cast<std::size_t>(c)]);
  }
  std::unique_ptr<Watchers> watchers;
  std::vector<std::thread> running;
  if (o.watchers > 0) {
    watchers = std::make_unique<Watchers>(target, o.watchers, stop);
    watchers->AwaitFirstChunks();
    running.emplace_back([&watchers] { watchers->Run(); });
  }
  const auto start = Clock::now();
  for (auto& loop : loops) running.emplace_back([&loop] { loop->Run(); });
  std::this_thread::sleep_for(std::chrono::seconds(o.seconds));
  stop = true;
  for (auto& t : running) t.join();

  LoadResult result;
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (const ClientTotals& t : totals) {
    all.insert(all.end(), t.latencies_ms.begin(), t.latencies_ms.end());
    result.ok += t.ok;
    result.refused += t.refused;
    result.errors += t.errors;
    result.clients_lost += t.lost ? 1 : 0;
  }
  if (watchers) {
    result.watchers_lost = watchers->lost();
    result.watcher_bytes = watchers->bytes();
  }
  result.iterations = static_cast<long>(all.size());
  result.p50_ms = Percentile(all, 0.50);
  result.p99_ms = Percentile(all, 0.99);
  return result;
}

}  // namespace paintlock::bench
