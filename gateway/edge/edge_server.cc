#include "gateway/edge/edge_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/ids.h"
#include "base/log.h"
#include "base/metrics.h"
#include "gateway/edge/request_framer.h"

namespace paintlock::gateway::edge {

namespace {

using Clock = std::chrono::steady_clock;

// The request a worker is running, for the handler's calls below.
struct DetachSlot {
  std::shared_ptr<PushStream> stream;
  int client_fd = -1;
};
thread_local DetachSlot* t_detach = nullptr;

// True when the peer of `fd` has closed or reset its side: a FIN waiting in
// the socket (recv peeks 0), or an error.
bool PeerGone(int fd) {
  char byte;
  const ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return true;
  return n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

std::atomic<void (*)()> g_hand_back_hook{nullptr};  // SetHandBackHookForTesting

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 413:
      return "Content Too Large";
    case 415:
      return "Unsupported Media Type";
    case 417:
      return "Expectation Failed";
    case 422:
      return "Unprocessable Content";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 505:
      return "HTTP Version Not Supported";
    default:
      return "Error";
  }
}

// An answer the edge gives itself, before any handler: the JSON error shape
// and a fresh X-Request-Id, like every answer.
std::string ErrorResponse(int status, const std::string& code, const std::string& message,
                          int retry_after_seconds, const std::string& request_id) {
  const std::string body =
      nlohmann::json{{"code", code}, {"message", message}, {"request_id", request_id}}.dump();
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + Reason(status) +
                    "\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"
                    "Connection: close\r\nX-Request-Id: " +
                    request_id + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  if (retry_after_seconds > 0)
    out += "Retry-After: " + std::to_string(retry_after_seconds) + "\r\n";
  return out + "\r\n" + body;
}

// A reactor route's answer on the wire, appended to `out`: httplib's Response
// with its length, and Connection: close when the connection ends after it.
// Written in place: a string built per header line cost a take a dozen
// allocations, and the connection's buffer keeps its capacity between
// answers (sent bytes are erased), so a keep-alive client's later answers
// allocate nothing here.
void AppendResponseBytes(const httplib::Response& res, bool close, std::string* out) {
  out->append("HTTP/1.1 ").append(std::to_string(res.status)).append(" ");
  out->append(Reason(res.status)).append("\r\n");
  for (const auto& [name, value] : res.headers) {
    if (strcasecmp(name.c_str(), "Content-Length") == 0 ||
        strcasecmp(name.c_str(), "Connection") == 0) {
      continue;
    }
    out->append(name).append(": ").append(value).append("\r\n");
  }
  out->append("Content-Length: ").append(std::to_string(res.body.size())).append("\r\n");
  if (close) out->append("Connection: close\r\n");
  out->append("\r\n").append(res.body);
}

// The framer's normalised request (request_framer.h: the request line, the
// headers but framing ones, Content-Length, the body) as httplib's Request,
// for a reactor route; false if it is not one a route could take.
bool ParseFramed(const std::string& raw, const std::string& method, const std::string& target,
                 httplib::Request* req) {
  const size_t head_end = raw.find("\r\n\r\n");
  const size_t line_end = raw.find("\r\n");
  if (head_end == std::string::npos) return false;
  const size_t version = raw.rfind(' ', line_end);
  if (version == std::string::npos) return false;
  req->method = method;
  req->target = target;
  req->version = raw.substr(version + 1, line_end - version - 1);
  for (size_t at = line_end + 2; at < head_end + 2;) {
    const size_t end = raw.find("\r\n", at);
    const size_t colon = raw.find(':', at);
    if (colon == std::string::npos || colon > end) return false;
    size_t value = colon + 1;
    while (value < end && (raw[value] == ' ' || raw[value] == '\t')) ++value;
    size_t value_end = end;
    while (value_end > value && (raw[value_end - 1] == ' ' || raw[value_end - 1] == '\t')) {
      --value_end;
    }
    req->headers.emplace(raw.substr(at, colon - at), raw.substr(value, value_end - value));
    at = end + 2;
  }
  req->body = raw.substr(head_end + 4);
  const size_t query = target.find('?');
  req->path = httplib::detail::decode_url(target.substr(0, query), false);
  if (query != std::string::npos) {
    httplib::detail::parse_query_text(target.substr(query + 1), req->params);
  }
  return true;
}

// Counts what the edge turned away before any handler ran: refused
// connections (the reason), requests it answered itself (the error code), and
// requests whose client left before their handler (client_gone). Reasons come
// from fixed sets; the family's capacity bounds them anyway.
base::metrics::Family<base::metrics::Counter>& Refusals() {
  static base::metrics::Family<base::metrics::Counter>& refusals =
      base::metrics::DefaultRegistry().AddCounter(
          "paintlock_edge_refusals_total",
          "Connections and requests the HTTP edge refused before any handler, by reason.",
          {"reason"}, 64);
  return refusals;
}

void CountRefusal(std::string_view reason) { Refusals().With({reason}).Inc(); }

std::string Chunk(const std::string& bytes) {
  char size[20];
  std::snprintf(size, sizeof size, "%zx\r\n", bytes.size());
  return size + bytes + "\r\n";
}

void AddressOf(int fd, bool peer, std::string* ip, int* port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  const int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                      : getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  if (rc != 0) return;
  char text[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
    *port = ntohs(a->sin_port);
  } else if (addr.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
    *port = ntohs(a->sin6_port);
  }
  *ip = text;
}

// The path of a request target, without its query, for logs; licence keys
// in paths are secrets.
std::string LoggablePath(const std::string& target) {
  std::string path = target.substr(0, target.find('?'));
  if (path.rfind("/v1/licenses/", 0) == 0) return "/v1/licenses/(redacted)";
  return path.substr(0, 200);
}

// Serves one framed request to httplib: reads come from the request bytes,
// writes go to the (non-blocking) socket, waiting up to `write_timeout` for
// each bit of progress. httplib writes a response's head and body separately;
// they are gathered (up to kCoalesce bytes) and sent by Flush as one send, so
// the client is woken once per answer, not twice (two sends were most of
// httplib's write cost in the gateway's profile). The caller must Flush.
class EdgeStream : public httplib::Stream {
 public:
  EdgeStream(int fd, const std::string& request, const std::string& remote_ip, int remote_port,
             const std::string& local_ip, int local_port, std::chrono::milliseconds write_timeout)
      : fd_(fd),
        request_(request),
        remote_ip_(remote_ip),
        remote_port_(remote_port),
        local_ip_(local_ip),
        local_port_(local_port),
        write_timeout_(write_timeout) {}

  bool is_readable() const override { return read_ < request_.size(); }
  bool is_writable() const override { return !write_failed_; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, request_.size() - read_);
    std::memcpy(ptr, request_.data() + read_, n);
    read_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (write_failed_) return -1;
    if (pending_.size() + size <= kCoalesce) {
      pending_.append(ptr, size);
      return static_cast<ssize_t>(size);
    }
    if (!Flush()) return -1;
    return Send(ptr, size) ? static_cast<ssize_t>(size) : -1;
  }
  // Sends what write gathered; false when the client cannot be written to.
  bool Flush() {
    if (!pending_.empty() && !write_failed_) Send(pending_.data(), pending_.size());
    pending_.clear();
    return !write_failed_;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = remote_ip_;
    port = remote_port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = local_ip_;  // httplib asks on every request: read once per connection
    port = local_port_;
  }
  socket_t socket() const override { return fd_; }
  bool write_failed() const { return write_failed_; }

 private:
  static constexpr size_t kCoalesce = 16 * 1024;

  bool Send(const char* ptr, size_t size) {
    size_t done = 0;
    while (done < size && !write_failed_) {
      const ssize_t n = ::send(fd_, ptr + done, size - done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        done += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        pollfd p{fd_, POLLOUT, 0};
        if (poll(&p, 1, static_cast<int>(write_timeout_.count())) > 0 &&
            (p.revents & (POLLERR | POLLHUP)) == 0) {
          continue;
        }
      }
      write_failed_ = true;
    }
    return !write_failed_;
  }

  const int fd_;
  const std::string& request_;
  size_t read_ = 0;
  const std::string& remote_ip_;
  const int remote_port_;
  const std::string& local_ip_;
  const int local_port_;
  const std::chrono::milliseconds write_timeout_;
  bool write_failed_ = false;
  std::string pending_;
};

}  // namespace

bool CanDetachResponse() { return t_detach != nullptr; }

bool ClientStillThere() { return t_detach == nullptr || !PeerGone(t_detach->client_fd); }

void DetachResponse(std::shared_ptr<PushStream> stream) {
  if (t_detach != nullptr) t_detach->stream = std::move(stream);
}

// Invariants: a Conn is owned by `conns_` and touched by the reactor only,
// except while it is kInWorker, when exactly one worker uses its fd and its
// Job, and the reactor touches nothing of it but `state`, `hand_back` and
// `muted` (its own), and its fd in epoll.
// A worker ends its turn in one of two ways. Usually it posts a Message to
// the reactor (through the eventfd). A keep-alive connection with no
// pipelined bytes it hands back itself, sparing the reactor a wake-up and the
// eventfd a write per request: it readies the Conn for the next request, puts
// the fd back in epoll, swaps `hand_back` to kHandedBack (release), and then
// touches it no more. The reactor takes such a Conn back (kReading) when
// `hand_back` reads kHandedBack (acquire): at the connection's next event, or
// at the next sweep, so idle and request deadlines still hold.
// An event can come between the worker's epoll add and its swap (the client
// was quick with its next request). epoll is level-triggered, so ignoring it
// would make the reactor spin until the worker swaps. Instead the reactor
// mutes the connection: takes its fd out of epoll and swaps `hand_back` from
// kWorking to kMuted. The worker, finding kMuted in its swap, wakes the
// reactor, which takes the connection back and puts its fd in epoll again.
class EdgeServer::Core {
 public:
  Core(EdgeServer& server, EdgeOptions options) : server_(server), options_(std::move(options)) {
    Refusals();  // scrapes show the family before the first refusal
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &ev);
    reactor_ = std::thread([this] { RunReactor(); });
    for (int i = 0; i < std::max(1, options_.workers); ++i) {
      workers_.emplace_back([this] { RunWorker(); });
    }
  }

  ~Core() {
    Drain();
    close(epoll_);
    close(wake_);
  }

  // Admission, on the accept thread.
  void Admit(int fd) {
    std::string ip;
    int port = 0;
    AddressOf(fd, true, &ip, &port);
    const bool unlimited =
        std::any_of(options_.unlimited_addresses.begin(), options_.unlimited_addresses.end(),
                    [&](const base::Network& n) { return n.Contains(ip); });
    const char* refusal = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (draining_) {
        refusal = "draining";
      } else if (open_ >= options_.max_connections) {
        refusal = "max_connections";
      } else if (!unlimited && per_address_[ip] >= options_.max_connections_per_address) {
        refusal = "max_connections_per_address";
      } else {
        ++open_;
        ++per_address_[ip];
      }
    }
    if (refusal != nullptr) {
      const std::string answer = ErrorResponse(
          503, "too_many_connections", "Too many connections are open; close some and try again.",
          1, base::NewRequestId());
      (void)!::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::shutdown(fd, SHUT_RDWR);
      ::close(fd);
      LogRefusal(refusal);
      return;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto conn = std::make_unique<Conn>(options_);
    conn->fd = fd;
    conn->ip = ip;
    conn->port = port;
    AddressOf(fd, false, &conn->local_ip, &conn->local_port);
    conn->idle_since = Clock::now();
    Post({Message::kNew, conn.release(), nullptr});
  }

  void WakePush() {
    push_wake_ = true;
    Wake();
  }

  void SetRoutes(std::shared_ptr<ReactorRoutes> routes) {
    {
      std::lock_guard<std::mutex> lock(inbox_mu_);
      new_routes_ = std::move(routes);
    }
    Wake();
  }

  int Open() const {
    std::lock_guard<std::mutex> lock(mu_);
    return open_;
  }

  ReactorCounters Counters() const {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    return {events_in_worker_.load(std::memory_order_relaxed),
            turns_.load(std::memory_order_relaxed),
            lingered_.load(std::memory_order_relaxed),
            lingered_partial_.load(std::memory_order_relaxed),
            idle_workers_,
            served_on_reactor_.load(std::memory_order_relaxed),
            handed_to_workers_.load(std::memory_order_relaxed)};
  }

  // Stops accepting work and waits until every connection is closed; then
  // stops the threads. Idempotent.
  void Drain() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (drained_) return;
      drained_ = true;
      draining_ = true;
    }
    Wake();
    if (reactor_.joinable()) reactor_.join();
    {
      std::lock_guard<std::mutex> lock(jobs_mu_);
      workers_stop_ = true;
    }
    jobs_cv_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

 private:
  friend class RouteTicket;  // Answered, StillThere and HandToWorker

  // Conn::hand_back. The worker swaps kWorking or kMuted to kHandedBack; the
  // reactor swaps kWorking to kMuted, and kHandedBack to kWorking when it
  // takes the connection back.
  static constexpr int kWorking = 0;
  static constexpr int kHandedBack = 1;
  static constexpr int kMuted = 2;

  struct Conn {
    explicit Conn(const EdgeOptions& o)
        : framer(FramerLimits{o.max_header_bytes, o.max_body_bytes}) {}
    enum class State {
      kReading,
      kInWorker,
      kAtRoute,
      kPushing,
      kLingering
    } state = State::kReading;
    int fd = -1;
    std::string ip;  // the client's
    int port = 0;
    std::string local_ip;  // ours
    int local_port = 0;
    std::string in;
    RequestFramer framer;
    Clock::time_point idle_since, request_started, linger_until, out_since;
    bool continue_sent = false;
    bool peer_closed = false;
    std::string out;                       // bytes still to send (an error answer, push chunks)
    bool close_after_out = false;          // after `out`: linger (errors) or close (push end)
    std::shared_ptr<PushStream> push;      // kPushing
    std::uint32_t events = 0;              // what epoll watches now (0: not registered)
    std::atomic<int> hand_back{kWorking};  // kInWorker only (see the class comment)
    bool muted = false;                    // reactor only: out of epoll until taken back
    bool mid_request = false;              // a lingering worker framed part of the next request
    // kAtRoute: which request the routes have (their answer names it), since when,
    // and whether its answer is in `out`.
    std::uint64_t route_serial = 0;
    Clock::time_point routed_at;
    bool answered = false;
    // The reactor turn in which the client was last seen still there.
    std::uint64_t present_turn = 0;
    // The turn of the last epoll event for this connection, and whether it
    // said the client had hung up (FIN or reset): as fresh as a peek, that turn.
    std::uint64_t event_turn = 0;
    bool event_hung_up = false;
  };

  struct Job {
    Conn* conn = nullptr;
    std::string request;
    std::string method, target;
    bool wants_close = false;
  };

  struct Message {
    enum Kind { kNew, kKeepAlive, kClose, kPush } kind = kClose;
    Conn* conn = nullptr;
    std::shared_ptr<PushStream> push;
  };

  void Post(Message m) {
    {
      std::lock_guard<std::mutex> lock(inbox_mu_);
      inbox_.push_back(std::move(m));
    }
    Wake();
  }

  void Wake() {
    const std::uint64_t one = 1;
    (void)!::write(wake_, &one, sizeof one);
  }

  void LogRefusal(const char* reason) {
    CountRefusal(reason);
    // At most one line a second: a flood must not become a log flood.
    const auto now = Clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    ++refused_since_log_;
    if (now - last_refusal_log_ < std::chrono::seconds(1)) return;
    base::LogWarn(
        "connections_refused",
        {{"reason", reason}, {"refused", refused_since_log_}, {"open_connections", open_}});
    refused_since_log_ = 0;
    last_refusal_log_ = now;
  }

  void Watch(Conn* c, std::uint32_t events) {
    if (c->events == events) return;
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = c;
    if (events == 0) {
      epoll_ctl(epoll_, EPOLL_CTL_DEL, c->fd, nullptr);
    } else {
      epoll_ctl(epoll_, c->events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c->fd, &ev);
    }
    c->events = events;
  }

  void Close(Conn* c) {
    Watch(c, 0);
    ::close(c->fd);
    {
      std::lock_guard<std::mutex> lock(mu_);
      --open_;
      auto it = per_address_.find(c->ip);
      if (it != per_address_.end() && --it->second <= 0) per_address_.erase(it);
    }
    conns_.erase(c);  // destroys the push stream, if any: its slot is free now
  }

  // Answers an error and closes gracefully: send, half-close, then read and
  // discard what the client still sends for up to options_.linger, so the
  // client reads the answer instead of a reset.
  void Refuse(Conn* c, int status, const std::string& code, const std::string& message) {
    const std::string request_id = base::NewRequestId();
    CountRefusal(code);
    base::LogInfo("request_refused",
                  {{"status", status}, {"code", code}, {"request_id", request_id}});
    c->state = Conn::State::kLingering;
    c->out = ErrorResponse(status, code, message, 0, request_id);
    c->close_after_out = true;
    c->linger_until = Clock::now() + options_.linger;
    c->out_since = Clock::now();
    Flush(c);
  }

  // Sends what `out` holds without blocking; false when the connection was closed.
  bool Flush(Conn* c) {
    while (!c->out.empty()) {
      const ssize_t n = ::send(c->fd, c->out.data(), c->out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c->out.erase(0, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        Watch(c, EPOLLIN | EPOLLOUT | EPOLLRDHUP);
        return true;
      }
      Close(c);
      return false;
    }
    if (c->close_after_out) {
      if (c->state == Conn::State::kLingering) {
        ::shutdown(c->fd, SHUT_WR);
        Watch(c, EPOLLIN | EPOLLRDHUP);
        return true;
      }
      Close(c);
      return false;
    }
    Watch(c, EPOLLIN | EPOLLRDHUP);
    return true;
  }

  // Reads and frames until a request is complete, the socket is dry, or the
  // connection ends.
  void Advance(Conn* c) {
    char buf[16384];
    for (;;) {
      const bool was_started = c->framer.started();
      const auto result = c->framer.Feed(&c->in);
      if (!was_started && c->framer.started()) c->request_started = Clock::now();
      if (result == RequestFramer::Result::kError) {
        const auto& e = c->framer.error();
        return Refuse(c, e.status, e.code, e.message);
      }
      if (result == RequestFramer::Result::kComplete) return Dispatch(c);
      if (c->framer.awaiting_body_with_continue() && !c->continue_sent) {
        c->continue_sent = true;
        static const char kContinue[] = "HTTP/1.1 100 Continue\r\n\r\n";
        (void)!::send(c->fd, kContinue, sizeof kContinue - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      }
      if (c->peer_closed) return Close(c);  // an incomplete request, and the client left
      const ssize_t n = ::recv(c->fd, buf, sizeof buf, 0);
      if (n > 0) {
        c->in.append(buf, static_cast<size_t>(n));
      } else if (n == 0) {
        c->peer_closed = true;
      } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        return;
      } else {
        return Close(c);
      }
    }
  }

  void Dispatch(Conn* c) {
    if (routes_ && routes_->Wants(c->framer.method(), c->framer.target()) && ServeHere(c)) return;
    ToWorker(c);
  }

  // The request c's framer has just completed (or a route passed on: it is
  // still in the framer) goes to a worker.
  void ToWorker(Conn* c) {
    Watch(c, 0);
    c->state = Conn::State::kInWorker;
    Job job = FramedJob(c);
    {
      std::lock_guard<std::mutex> lock(jobs_mu_);
      jobs_.push_back(std::move(job));
    }
    jobs_cv_.notify_one();
  }

  // On the reactor: offers the request c's framer has just completed to the
  // routes; true when they took it (or the client had gone: closed).
  bool ServeHere(Conn* c) {
    auto req = std::make_shared<httplib::Request>();
    // What a route cannot take, a worker's httplib answers as it sees fit.
    if (!ParseFramed(c->framer.request(), c->framer.method(), c->framer.target(), req.get())) {
      return false;
    }
    req->remote_addr = c->ip;
    req->remote_port = c->port;
    req->local_addr = c->local_ip;
    req->local_port = c->local_port;
    // Read on epoll's word this turn: epoll's own report of a hang-up, no
    // peek (a syscall a request saved); otherwise a peek.
    const bool gone = c->event_turn == turns_.load(std::memory_order_relaxed)
                          ? c->peer_closed || c->event_hung_up
                          : ClientGone(c);
    if (gone) {
      LogClientGone(c->framer.method(), c->framer.target());
      Close(c);
      return true;
    }
    c->present_turn = turns_.load(std::memory_order_relaxed);
    const Conn::State before = c->state;
    c->state = Conn::State::kAtRoute;
    c->route_serial = ++route_serials_;
    c->routed_at = Clock::now();
    c->answered = false;
    const std::uint64_t serial = c->route_serial;
    const bool close = c->framer.wants_close();
    // Nothing more is read until it is answered; the socket stays in epoll
    // (two epoll_ctl calls a request saved) and leaves it only if the client
    // sends or closes meanwhile (OnEvent).
    const bool taken = routes_->Serve(std::move(req), RouteTicket(&server_, c, serial, close));
    if (!taken) {
      c->state = before;
      return false;
    }
    served_on_reactor_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  // Whether the client of request `serial` on `c` is still there; if it left,
  // its connection is closed and that is logged, as a worker does.
  bool StillThere(Conn* c, std::uint64_t serial) {
    if (conns_.count(c) == 0 || c->route_serial != serial || c->state != Conn::State::kAtRoute) {
      return false;
    }
    const std::uint64_t turn = turns_.load(std::memory_order_relaxed);
    // Seen there in this very turn (ServeHere, moments ago): no second look.
    if (c->present_turn == turn) return true;
    // Epoll's word, as fresh as this turn's wait: the socket has been watched
    // for bytes and hang-ups since the request was read (an event while at
    // the route takes it out of epoll: then a peek), and this turn's wait
    // reported nothing for it, or only bytes. A peek a request saved.
    if (!c->peer_closed && (c->events & EPOLLRDHUP) != 0 && !c->muted &&
        (c->event_turn == turn ? !c->event_hung_up : wait_was_complete_)) {
      c->present_turn = turn;
      return true;
    }
    if (!ClientGone(c)) return true;
    LogClientGone(c->framer.method(), c->framer.target());
    Close(c);
    return false;
  }

  // The routes pass request `serial` on `c` to a worker (ReactorRoutes::Serve).
  void HandToWorker(Conn* c, std::uint64_t serial) {
    if (conns_.count(c) == 0 || c->route_serial != serial || c->state != Conn::State::kAtRoute ||
        c->answered) {
      return;
    }
    handed_to_workers_.fetch_add(1, std::memory_order_relaxed);
    ToWorker(c);
  }

  // The routes' answer for request `serial` on `c` (which may be gone by now).
  // Written at the end of the reactor's turn, never from inside Serve.
  void Answered(Conn* c, std::uint64_t serial, bool close, const httplib::Response& res) {
    if (conns_.count(c) == 0 || c->route_serial != serial || c->state != Conn::State::kAtRoute ||
        c->answered) {
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      close = close || draining_;
    }
    AppendResponseBytes(res, close, &c->out);
    c->close_after_out = close;
    c->answered = true;
    c->out_since = Clock::now();
    answered_.push_back(c);
  }

  void WriteAnswers() {
    while (!answered_.empty()) {
      std::vector<Conn*> answered;
      answered.swap(answered_);
      for (Conn* c : answered) {
        if (conns_.count(c) != 0 && c->state == Conn::State::kAtRoute && c->answered) {
          WriteAnswer(c);
        }
      }
    }
  }

  // Sends a route's answer; then the connection reads its next request.
  void WriteAnswer(Conn* c) {
    // Still watched for input since its request was read: anything the client
    // has sent since is in the socket, and the next epoll_wait says so
    // (level-triggered), so no read now (a syscall a request saved).
    const bool watched_input = (c->events & EPOLLIN) != 0;
    if (!Flush(c)) return;  // closed: a write failed, or the answer was the last
    if (!c->out.empty()) return Watch(c, EPOLLOUT);  // the rest when the socket takes it
    c->state = Conn::State::kReading;
    ReadyForNextRequest(c);
    if (watched_input && c->in.empty()) return;
    Advance(c);  // pipelined bytes may hold the next request already
  }

  // The request c's framer has just completed, for a worker.
  static Job FramedJob(Conn* c) {
    return {c, c->framer.request(), c->framer.method(), c->framer.target(),
            c->framer.wants_close()};
  }

  // After an answer: the connection waits for its next request (or a push).
  static void ReadyForNextRequest(Conn* c) {
    c->framer.Reset();
    c->continue_sent = false;
    c->idle_since = Clock::now();
  }

  // A worker is done with `c`: the next request, a push stream, or the end.
  void Returned(Message& m) {
    Conn* c = m.conn;
    if (m.kind == Message::kClose) return Close(c);
    if (c->mid_request) {
      c->mid_request = false;  // framing goes on where the lingering worker stopped
    } else {
      ReadyForNextRequest(c);
    }
    if (m.kind == Message::kPush) {
      c->state = Conn::State::kPushing;
      c->push = std::move(m.push);
      c->in.clear();
      Watch(c, EPOLLIN | EPOLLRDHUP);
      return Pump(c, Clock::now());
    }
    c->state = Conn::State::kReading;
    Watch(c, EPOLLIN | EPOLLRDHUP);
    Advance(c);  // pipelined bytes may hold the next request already
  }

  // Asks a push stream for bytes when everything before has been sent, and
  // again while what it gave went out whole: a stream gives a large backlog
  // in slices (PushStream), so the connection never holds all of it.
  void Pump(Conn* c, Clock::time_point now) {
    if (!c->out.empty()) {
      if (now - c->out_since > options_.write_timeout) Close(c);  // a reader that stalled
      return;
    }
    for (;;) {
      bool end = false;
      std::string bytes = c->push->Next(now, &end);
      if (!bytes.empty()) c->out = Chunk(bytes);
      if (end) {
        c->out += "0\r\n\r\n";
        c->close_after_out = true;
      }
      if (c->out.empty()) return;
      c->out_since = now;
      if (!Flush(c) || !c->out.empty()) return;  // closed, or the rest waits for EPOLLOUT
    }
  }

  // `events` were noted on `c` (event_turn, event_hung_up) earlier in the turn.
  void OnEvent(Conn* c, std::uint32_t events) {
    TakeBack(c);
    if (c->state == Conn::State::kInWorker) {
      events_in_worker_.fetch_add(1, std::memory_order_relaxed);
      Mute(c);
    }
    switch (c->state) {
      case Conn::State::kInWorker:
        return;
      case Conn::State::kAtRoute:
        // Bytes (a pipelined request), a FIN or a reset before the answer:
        // out of epoll until it is written. StillThere and Flush see a
        // client that left; pipelined bytes are read after the answer.
        if (!c->answered) return Watch(c, 0);
        if (events & (EPOLLERR | EPOLLHUP)) return Close(c);
        if (events & EPOLLOUT) WriteAnswer(c);
        return;
      case Conn::State::kReading:
        if (events & EPOLLERR) return Close(c);
        return Advance(c);
      case Conn::State::kLingering: {
        if (events & EPOLLOUT) {
          if (!Flush(c)) return;
        }
        char buf[16384];
        for (;;) {
          const ssize_t n = ::recv(c->fd, buf, sizeof buf, 0);
          if (n > 0) continue;
          if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
          if (n < 0 && errno == EINTR) continue;
          return Close(c);  // the client read our answer and closed, or reset
        }
      }
      case Conn::State::kPushing: {
        if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) return Close(c);
        if (events & EPOLLIN) {
          char buf[4096];
          const ssize_t n = ::recv(c->fd, buf, sizeof buf, 0);  // nothing is expected: discard
          if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            return Close(c);
          }
        }
        if (events & EPOLLOUT) {
          if (!Flush(c)) return;
          if (c->out.empty()) Pump(c, Clock::now());
        }
        return;
      }
    }
  }

  // Deadlines, heartbeats, and the drain.
  void Sweep(Clock::time_point now, bool pump, bool draining) {
    std::vector<Conn*> all;
    all.reserve(conns_.size());
    for (auto& [ptr, owned] : conns_) all.push_back(ptr);
    for (Conn* c : all) {
      TakeBack(c);
      switch (c->state) {
        case Conn::State::kInWorker:
          break;
        case Conn::State::kAtRoute:
          if (c->answered ? now - c->out_since > options_.write_timeout
                          : now - c->routed_at > options_.route_deadline) {
            if (!c->answered) base::LogWarn("route_unanswered", {{"method", c->framer.method()}});
            Close(c);
          }
          break;
        case Conn::State::kReading:
          if (c->framer.started()) {
            if (now - c->request_started > options_.request_deadline) {
              Refuse(c, 408, "request_timeout", "The request did not arrive completely in time.");
            }
          } else if (draining || now - c->idle_since > options_.idle_timeout) {
            Close(c);
          }
          break;
        case Conn::State::kLingering:
          if (now > c->linger_until) Close(c);
          break;
        case Conn::State::kPushing:
          if (draining && c->out.empty() && !c->close_after_out) {
            c->out = "0\r\n\r\n";
            c->close_after_out = true;
            c->out_since = now;
            Flush(c);
          } else if (pump || draining) {
            Pump(c, now);
          }
          break;
      }
    }
  }

  void RunReactor() {
    constexpr int kEventsPerWait = 256;
    epoll_event events[kEventsPerWait];
    auto last_sweep = Clock::now();
    auto last_pump = last_sweep;
    auto routes_due = Clock::time_point::max();
    for (;;) {
      auto wait = std::chrono::milliseconds(100);
      if (routes_due != Clock::time_point::max()) {
        wait = std::clamp(std::chrono::ceil<std::chrono::milliseconds>(routes_due - Clock::now()),
                          std::chrono::milliseconds(0), wait);
      }
      const auto wait_began = Clock::now();
      const int n = epoll_wait(epoll_, events, kEventsPerWait, static_cast<int>(wait.count()));
      const std::uint64_t turn = turns_.fetch_add(1, std::memory_order_relaxed) + 1;
      // Every ready socket was reported (a full batch may have left some for
      // the next wait): a connection without an event this turn had nothing
      // to say when the wait returned (StillThere).
      wait_was_complete_ = n < kEventsPerWait;
      // What epoll said of each client, before any route's answer asks
      // StillThere below and before OnEvent (ServeHere reads it there).
      for (int i = 0; i < n; ++i) {
        if (events[i].data.ptr == nullptr || (events[i].data.u64 & kRoutesTag)) continue;
        Conn* c = static_cast<Conn*>(events[i].data.ptr);
        if (conns_.count(c) == 0) continue;
        c->event_turn = turn;
        c->event_hung_up = (events[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
      }
      // The routes' sockets first (RoutesLoop): a database connection that
      // closed is known before any request of this turn is sent on it.
      for (int i = 0; i < n; ++i) {
        const std::uint64_t tag = events[i].data.u64;
        if (events[i].data.ptr != nullptr && (tag & kRoutesTag) && routes_) {
          routes_->OnEvent(reinterpret_cast<void*>(tag & ~kRoutesTag), events[i].events);
        }
      }
      // A full batch may have left ready sockets for the next wait.
      if (routes_ && n < kEventsPerWait) routes_->EventsRead(wait_began);
      for (int i = 0; i < n; ++i) {
        if (events[i].data.ptr == nullptr) {
          std::uint64_t count;
          (void)!::read(wake_, &count, sizeof count);
          continue;
        }
        if (events[i].data.u64 & kRoutesTag) continue;
        Conn* c = static_cast<Conn*>(events[i].data.ptr);
        if (conns_.count(c) != 0) OnEvent(c, events[i].events);
      }
      std::deque<Message> inbox;
      std::shared_ptr<ReactorRoutes> new_routes;
      {
        std::lock_guard<std::mutex> lock(inbox_mu_);
        inbox.swap(inbox_);
        new_routes.swap(new_routes_);
      }
      if (new_routes) {
        if (routes_) routes_->Stop();
        routes_ = std::move(new_routes);
        routes_->Start(routes_loop_);
      }
      for (auto& m : inbox) {
        if (m.kind == Message::kNew) {
          conns_.emplace(m.conn, std::unique_ptr<Conn>(m.conn));
          Watch(m.conn, EPOLLIN | EPOLLRDHUP);
        } else if (conns_.count(m.conn) != 0) {
          Returned(m);
        }
      }
      // Muted connections whose workers have handed them back since (they
      // woke us): into epoll again.
      for (std::size_t i = muted_.size(); i-- > 0;) TakeBack(muted_[i]);
      bool draining;
      {
        std::lock_guard<std::mutex> lock(mu_);
        draining = draining_;
      }
      const auto now = Clock::now();
      const bool pump =
          push_wake_.exchange(false) || now - last_pump > std::chrono::milliseconds(250);
      if (pump) last_pump = now;
      if (pump || draining || now - last_sweep > std::chrono::milliseconds(100)) {
        Sweep(now, pump, draining);
        last_sweep = now;
      }
      if (routes_) routes_due = routes_->Tick(now);
      WriteAnswers();
      if (draining && conns_.empty()) {
        std::lock_guard<std::mutex> lock(inbox_mu_);
        if (inbox_.empty()) {
          if (routes_) routes_->Stop();
          return;
        }
      }
    }
  }

  void RunWorker() {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(jobs_mu_);
        ++idle_workers_;
        jobs_cv_.wait(lock, [&] { return workers_stop_ || !jobs_.empty(); });
        --idle_workers_;
        if (jobs_.empty()) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      Message m = Serve(job);
      while (m.kind == Message::kKeepAlive && NextOnSameConnection(m.conn, &job)) m = Serve(job);
      if (!HandBack(m)) Post(std::move(m));
    }
  }

  // After a keep-alive answer, while another worker is idle: up to
  // keepalive_linger for the same client's next request, read and framed
  // here. True with `*job` set when a whole request came. Otherwise the
  // connection goes to the reactor as usual: no bytes in time, a hang-up, or
  // (mid_request) part of a request, which the reactor goes on framing under
  // the same deadline and limits. A new request finds the idle worker; only a
  // burst larger than the idle workers can wait for this one, at most the
  // linger.
  bool NextOnSameConnection(Conn* c, Job* job) {
    if (options_.keepalive_linger.count() <= 0 || !c->in.empty() || c->peer_closed) return false;
    {
      std::lock_guard<std::mutex> lock(jobs_mu_);
      if (idle_workers_ == 0 || workers_stop_) return false;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (draining_) return false;
    }
    ReadyForNextRequest(c);
    pollfd ready{c->fd, POLLIN | POLLRDHUP, 0};
    if (::poll(&ready, 1, static_cast<int>(options_.keepalive_linger.count())) <= 0) return false;
    char buf[16384];
    const ssize_t n = ::recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n == 0) c->peer_closed = true;
    if (n <= 0) return false;
    c->in.append(buf, static_cast<size_t>(n));
    c->request_started = Clock::now();
    if (c->framer.Feed(&c->in) != RequestFramer::Result::kComplete) {
      c->mid_request = true;  // an error stays in the framer: the reactor answers it
      lingered_partial_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    *job = FramedJob(c);
    lingered_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }

  // The worker's own hand-back of a keep-alive connection (see the class
  // comment); false when the reactor must take the Message instead.
  bool HandBack(const Message& m) {
    Conn* c = m.conn;
    if (m.kind != Message::kKeepAlive || !c->in.empty() || c->peer_closed || c->mid_request) {
      return false;
    }
    ReadyForNextRequest(c);
    c->events = EPOLLIN | EPOLLRDHUP;
    // Into epoll first, then the swap: once it is done the reactor may close
    // and free `c`, so nothing may touch it after. An event before the swap
    // mutes the connection (see the class comment); the reactor then waits
    // for our wake-up. Should the add fail, the sweep still takes the
    // connection back and its idle deadline closes it.
    AddToEpoll(c);
    if (auto hook = g_hand_back_hook.load(std::memory_order_acquire)) hook();
    if (c->hand_back.exchange(kHandedBack, std::memory_order_acq_rel) == kMuted) Wake();
    return true;
  }

  // On the reactor: a kInWorker connection its worker handed back becomes
  // kReading, and goes back into epoll if it was muted.
  void TakeBack(Conn* c) {
    if (c->state != Conn::State::kInWorker ||
        c->hand_back.load(std::memory_order_acquire) != kHandedBack) {
      return;
    }
    c->hand_back.store(kWorking, std::memory_order_relaxed);
    c->state = Conn::State::kReading;
    if (!c->muted) return;
    c->muted = false;
    muted_.erase(std::find(muted_.begin(), muted_.end(), c));
    AddToEpoll(c);
  }

  // Puts `c`'s fd back in epoll with the events it had (the hand-back's add,
  // and the re-add after a mute).
  void AddToEpoll(Conn* c) {
    epoll_event ev{};
    ev.events = c->events;
    ev.data.ptr = c;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, c->fd, &ev);
  }

  // On the reactor: an event for a connection its worker is still handing
  // back (see the class comment). Out of epoll, then kMuted; if the worker
  // swapped first, the connection is taken back at once.
  void Mute(Conn* c) {
    if (c->muted) return;
    epoll_ctl(epoll_, EPOLL_CTL_DEL, c->fd, nullptr);
    c->muted = true;
    muted_.push_back(c);
    int expected = kWorking;
    if (!c->hand_back.compare_exchange_strong(expected, kMuted, std::memory_order_acq_rel)) {
      TakeBack(c);
    }
  }

  Message Serve(Job& job) {
    Conn* c = job.conn;
    if (ClientGone(c)) {
      LogClientGone(job.method, job.target);
      return {Message::kClose, c, nullptr};
    }
    bool draining;
    {
      std::lock_guard<std::mutex> lock(mu_);
      draining = draining_;
    }
    EdgeStream stream(c->fd, job.request, c->ip, c->port, c->local_ip, c->local_port,
                      options_.write_timeout);
    DetachSlot detach;
    detach.client_fd = c->fd;
    t_detach = &detach;
    bool connection_closed = false;
    const bool close_connection = job.wants_close || draining;
    bool ok = false;
    try {
      ok = server_.ServeOne(stream, close_connection, &connection_closed);
    } catch (...) {
      ok = false;  // httplib's own failures (handler exceptions are caught inside it)
    }
    t_detach = nullptr;
    stream.Flush();
    if (detach.stream && !stream.write_failed()) {
      return {Message::kPush, c, std::move(detach.stream)};
    }
    if (!ok || connection_closed || close_connection || stream.write_failed()) {
      return {Message::kClose, c, nullptr};
    }
    return {Message::kKeepAlive, c, nullptr};
  }

  static void LogClientGone(const std::string& method, const std::string& target) {
    CountRefusal("client_gone");
    base::LogInfo("client_gone_before_handler",
                  {{"method", method}, {"path", LoggablePath(target)}});
  }

  // True when the client has closed or reset its side: a FIN already read
  // by the reactor, or one waiting in the socket, or an error.
  static bool ClientGone(const Conn* c) { return c->peer_closed || PeerGone(c->fd); }

  EdgeServer& server_;
  const EdgeOptions options_;
  int epoll_ = -1;
  int wake_ = -1;
  std::thread reactor_;
  std::vector<std::thread> workers_;
  std::atomic<bool> push_wake_{false};

  // The routes' sockets in the reactor's epoll: their tags with the low bit
  // set (a Conn* and the routes' own tags are aligned, the wake-up is null).
  static constexpr std::uint64_t kRoutesTag = 1;
  class RoutesLoop : public locks::AsyncLoop {
   public:
    explicit RoutesLoop(const int& epoll) : epoll_(epoll) {}
    void Watch(int fd, std::uint32_t events, void* tag) override {
      locks::WatchInEpoll(epoll_, fd, events, reinterpret_cast<std::uintptr_t>(tag) | kRoutesTag);
    }

   private:
    const int& epoll_;
  };

  // Reactor thread only.
  std::unordered_map<Conn*, std::unique_ptr<Conn>> conns_;
  std::vector<Conn*> muted_;  // kInWorker connections taken out of epoll (Mute)
  std::shared_ptr<ReactorRoutes> routes_;
  RoutesLoop routes_loop_{epoll_};
  std::uint64_t route_serials_ = 0;
  std::vector<Conn*> answered_;  // kAtRoute connections whose answer waits to be written

  // Written by the reactor, read by tests (ReactorCounters).
  std::atomic<std::uint64_t> events_in_worker_{0};
  std::atomic<std::uint64_t> turns_{0};             // epoll waits so far, the current one included
  bool wait_was_complete_ = false;                  // reactor only: see RunReactor
  std::atomic<std::uint64_t> lingered_{0};          // written by workers
  std::atomic<std::uint64_t> lingered_partial_{0};  // written by workers
  std::atomic<std::uint64_t> served_on_reactor_{0};
  std::atomic<std::uint64_t> handed_to_workers_{0};

  mutable std::mutex mu_;
  int open_ = 0;                                      // guarded by mu_
  std::unordered_map<std::string, int> per_address_;  // guarded by mu_
  bool draining_ = false;                             // guarded by mu_
  bool drained_ = false;                              // guarded by mu_
  int refused_since_log_ = 0;                         // guarded by mu_
  Clock::time_point last_refusal_log_;                // guarded by mu_

  std::mutex inbox_mu_;
  std::deque<Message> inbox_;                  // guarded by inbox_mu_
  std::shared_ptr<ReactorRoutes> new_routes_;  // guarded by inbox_mu_: SetRoutes

  mutable std::mutex jobs_mu_;
  std::condition_variable jobs_cv_;
  std::deque<Job> jobs_;       // guarded by jobs_mu_
  bool workers_stop_ = false;  // guarded by jobs_mu_
  int idle_workers_ = 0;       // guarded by jobs_mu_: waiting for a job
};

namespace {

// httplib's accept loop hands each socket to its task queue; this one runs
// the task at once on the accept thread (admission only), and its shutdown,
// called when the loop ends, drains the edge.
class InlineQueue : public httplib::TaskQueue {
 public:
  explicit InlineQueue(std::function<void()> drain) : drain_(std::move(drain)) {}
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override { drain_(); }

 private:
  std::function<void()> drain_;
};

}  // namespace

EdgeServer::EdgeServer(EdgeOptions options)
    : core_(std::make_unique<Core>(*this, std::move(options))) {
  new_task_queue = [this] { return new InlineQueue([this] { core_->Drain(); }); };
}

EdgeServer::~EdgeServer() { core_->Drain(); }

bool EdgeServer::process_and_close_socket(socket_t sock) {
  core_->Admit(sock);
  return true;
}

bool EdgeServer::ServeOne(httplib::Stream& stream, bool close_connection, bool* connection_closed) {
  return process_request(stream, close_connection, *connection_closed, nullptr);
}

void EdgeServer::WakePushStreams() { core_->WakePush(); }

void EdgeServer::SetReactorRoutes(std::shared_ptr<ReactorRoutes> routes) {
  core_->SetRoutes(std::move(routes));
}

int EdgeServer::OpenConnections() const { return core_->Open(); }

ReactorCounters EdgeServer::Counters() const { return core_->Counters(); }

void RouteTicket::Answer(const httplib::Response& res) const {
  edge_->core_->Answered(static_cast<EdgeServer::Core::Conn*>(conn_), serial_, close_, res);
}

bool RouteTicket::Present() const {
  return edge_->core_->StillThere(static_cast<EdgeServer::Core::Conn*>(conn_), serial_);
}

void RouteTicket::ToWorkers() const {
  edge_->core_->HandToWorker(static_cast<EdgeServer::Core::Conn*>(conn_), serial_);
}

void SetHandBackHookForTesting(void (*hook)()) {
  g_hand_back_hook.store(hook, std::memory_order_release);
}

}  // namespace paintlock::gateway::edge
