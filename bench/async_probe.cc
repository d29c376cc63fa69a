// async-probe: a measuring probe, not a gateway. It answers the routes
// bench/run.sh's ratelimit-take and credit-hold-commit phases drive, with the
// gateway's statements, from event-loop threads that drive PostgreSQL with
// asynchronous libpq — the design issue 10's remaining targets point to — so
// that `make bench` can measure that design's cost beside pgbench on the same
// SQL, before anyone rewrites the gateway for it (one command, on one line):
//
//   BENCH_GATEWAY=build/async-probe
//     BENCH_WORKLOADS="ratelimit-take credit-hold-commit" make bench
//
// What it shares with the gateway: the statements (sql/queries/ratelimit_take.sql,
// credit_hold.sql, credit_commit.sql, prepared once per connection, one in
// flight per connection, as pgbench -M prepared and the gateway's pool run
// them), the Bearer key check, the gateway's own parsers and validators, the
// answers' status codes and essential JSON fields, one access-log line a
// request, keep-alive. What it leaves out, and must not be mistaken for:
// everything else of the edge (deadlines, size limits past a 64 KiB request,
// chunked bodies, idempotency keys, metrics, every other route), and every
// database failure path but "answer 503" (a broken connection ends the
// probe). Each of PROBE_THREADS
// threads owns a SO_REUSEPORT listener, the client connections the kernel gives
// it and its share of the PostgreSQL connections: nothing crosses threads, so
// a request costs no hand-off and no lock.
//
// Hand-written HTTP and raw libpq on purpose: libpqxx 6 has no asynchronous
// statement API, and the probe's fixed request shapes need no HTTP parser.
#include <arpa/inet.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "gateway/limit_requests.h"
#include "locks/credits.h"
#include "locks/rate_limits_config.h"
#include "locks/reservations.h"

namespace paintlock::bench {
namespace {

constexpr const char* kUsage =
    "Usage: async-probe [--help]\n"
    "A measuring probe for `make bench` (see the top of bench/async_probe.cc):\n"
    "answers POST /v1/ratelimits/BUCKET:SUBJECT/take, POST /v1/accounts/ID/holds,\n"
    "POST /v1/holds/ID/commit and GET /readyz from event-loop threads with\n"
    "asynchronous libpq. Not a gateway.\n"
    "Environment (the gateway's names where they mean the same):\n"
    "  DATABASE_URL           the shop's database (required)\n"
    "  PAINTLOCK_LISTEN       host:port (default 127.0.0.1:8080)\n"
    "  PAINTLOCK_API_KEY      the Bearer key (required)\n"
    "  PAINTLOCK_DB_POOL      PostgreSQL connections in all (default 32)\n"
    "  PAINTLOCK_RATE_LIMITS  one bucket, NAME:CAPACITY:REFILL (default api:100:10)\n"
    "  PROBE_THREADS          event-loop threads (default 2)\n"
    "  PROBE_SQL_DIR          the statements (default sql/queries)\n";

constexpr size_t kMaxRequestBytes = 64 * 1024;

// The statements, by the names the probe prepares them under.
constexpr const char* kStatements[] = {"ratelimit_take", "credit_hold", "credit_commit"};

struct Settings {
  std::string database_url, host, api_key, bucket, capacity, refill;
  std::vector<std::string> sql;  // kStatements' texts, in order
  int port = 0, pool = 0, threads = 0;
};

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "async-probe: %s\n", why.c_str());
  std::exit(1);
}

std::string Env(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

int PositiveEnv(const char* name, const char* fallback) {
  const int v = std::atoi(Env(name, fallback).c_str());
  if (v <= 0) Die(std::string(name) + " must be a positive number");
  return v;
}

Settings Load() {
  Settings s;
  s.database_url = Env("DATABASE_URL", "");
  s.api_key = Env("PAINTLOCK_API_KEY", "");
  if (s.database_url.empty() || s.api_key.empty()) {
    Die("DATABASE_URL and PAINTLOCK_API_KEY are required (--help)");
  }
  const std::string listen = Env("PAINTLOCK_LISTEN", "127.0.0.1:8080");
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) Die("PAINTLOCK_LISTEN must be host:port");
  s.host = listen.substr(0, colon);
  s.port = std::atoi(listen.c_str() + colon + 1);
  s.pool = PositiveEnv("PAINTLOCK_DB_POOL", "32");
  s.threads = PositiveEnv("PROBE_THREADS", "2");
  if (s.pool < s.threads) Die("PAINTLOCK_DB_POOL must be at least PROBE_THREADS");
  std::istringstream limit(Env("PAINTLOCK_RATE_LIMITS", "api:100:10"));
  if (!std::getline(limit, s.bucket, ':') || !std::getline(limit, s.capacity, ':') ||
      !std::getline(limit, s.refill) || limit.peek() != EOF) {
    Die("PAINTLOCK_RATE_LIMITS must be one bucket, NAME:CAPACITY:REFILL");
  }
  const std::string dir = Env("PROBE_SQL_DIR", "sql/queries");
  for (const char* name : kStatements) {
    std::ifstream sql(dir + "/" + name + ".sql");
    std::ostringstream text;
    text << sql.rdbuf();
    if (text.str().empty()) Die("cannot read " + dir + "/" + name + ".sql (PROBE_SQL_DIR)");
    s.sql.push_back(text.str());
  }
  return s;
}

struct Client {
  int fd = -1;
  std::string in, out;
  size_t out_sent = 0;
  bool at_database = false;  // its request's statement is in flight: read no further
  bool gone = false;         // it hung up meanwhile: close once the statement answers
  bool watching_out = false;
};

// One request's statement: which, its parameters, and whose answer it is.
struct Job {
  int client = -1;
  int statement = 0;  // index into kStatements
  std::vector<std::string> params;
};

struct Connection {
  PGconn* pg = nullptr;
  Job job;  // in flight
};

// epoll tags: a client's fd, or this bit and a connection's index.
constexpr uint64_t kConnectionTag = uint64_t{1} << 32;

class EventLoop {
 public:
  EventLoop(const Settings& s, int listener, int connections) : s_(s), listener_(listener) {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_ < 0) Die(std::string("epoll_create1: ") + std::strerror(errno));
    Control(EPOLL_CTL_ADD, listener_, EPOLLIN, static_cast<uint64_t>(listener_));
    for (int i = 0; i < connections; ++i) {
      Connection c;
      c.pg = PQconnectdb(s_.database_url.c_str());
      if (PQstatus(c.pg) != CONNECTION_OK) Die(PQerrorMessage(c.pg));
      for (size_t k = 0; k < s_.sql.size(); ++k) {
        PGresult* prepared = PQprepare(c.pg, kStatements[k], s_.sql[k].c_str(), 0, nullptr);
        const bool ok = PQresultStatus(prepared) == PGRES_COMMAND_OK;
        PQclear(prepared);
        if (!ok) Die(PQerrorMessage(c.pg));
      }
      PQsetnonblocking(c.pg, 1);
      Control(EPOLL_CTL_ADD, PQsocket(c.pg), EPOLLIN, kConnectionTag | i);
      connections_.push_back(c);
      idle_.push_back(i);
    }
  }

  [[noreturn]] void Run() {
    epoll_event events[256];
    for (;;) {
      const int n = epoll_wait(epoll_, events, 256, -1);
      for (int i = 0; i < n; ++i) {
        const uint64_t tag = events[i].data.u64;
        if (tag & kConnectionTag) {
          OnDatabase(static_cast<int>(tag & 0xffffffff), events[i].events);
        } else if (static_cast<int>(tag) == listener_) {
          Accept();
        } else {
          OnClient(static_cast<int>(tag), events[i].events);
        }
      }
      // One write a wake-up for every access-log line it produced.
      if (!log_.empty()) {
        const ssize_t written = write(STDOUT_FILENO, log_.data(), log_.size());
        (void)written;  // a log that cannot be written is lost, never a request
        log_.clear();
      }
    }
  }

 private:
  void Control(int op, int fd, uint32_t events, uint64_t tag) {
    epoll_event e{};
    e.events = events;
    e.data.u64 = tag;
    if (epoll_ctl(epoll_, op, fd, &e) != 0) Die(std::string("epoll_ctl: ") + std::strerror(errno));
  }

  void Accept() {
    for (;;) {
      const int fd = accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      clients_[fd].fd = fd;
      Control(EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLRDHUP, static_cast<uint64_t>(fd));
    }
  }

  void Close(int fd) {
    epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    clients_.erase(fd);
  }

  void OnClient(int fd, uint32_t events) {
    const auto it = clients_.find(fd);
    if (it == clients_.end()) return;
    Client& c = it->second;
    if (events & EPOLLOUT) Send(c);
    if (!(events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) return;
    char buf[16384];
    for (;;) {
      const ssize_t got = read(fd, buf, sizeof buf);
      if (got > 0 && c.in.size() + static_cast<size_t>(got) <= kMaxRequestBytes) {
        c.in.append(buf, static_cast<size_t>(got));
        continue;
      }
      if (got < 0 && errno == EAGAIN) break;
      if (!c.at_database) return Close(fd);  // closed, failed, or over the limit
      c.gone = true;  // no more events from it (a hang-up would be reported level-triggered)
      epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
      return;
    }
    Serve(c);
  }

  // The gateway's error body (gateway/http_errors.cc), without a request id.
  static std::string Error(const char* code, const char* message) {
    return std::string("{\"code\":\"") + code + "\",\"message\":\"" + message + "\"}";
  }

  static std::string Header(const std::string& head, const char* name) {
    const size_t len = std::strlen(name);
    for (size_t at = head.find("\r\n"); at != std::string::npos; at = head.find("\r\n", at + 2)) {
      const size_t start = at + 2;
      if (head.size() > start + len && head[start + len] == ':' &&
          strncasecmp(head.data() + start, name, len) == 0) {
        size_t v = start + len + 1;
        while (v < head.size() && head[v] == ' ') ++v;
        return head.substr(v, head.find("\r\n", v) - v);
      }
    }
    return "";
  }

  // "/v1/ratelimits/K/take" with prefix "/v1/ratelimits/" and suffix "/take" → K, or "".
  static std::string Between(const std::string& path, const char* prefix, const char* suffix) {
    const size_t p = std::strlen(prefix), q = std::strlen(suffix);
    if (path.size() <= p + q || path.compare(0, p, prefix) != 0 ||
        path.compare(path.size() - q, q, suffix) != 0) {
      return "";
    }
    return path.substr(p, path.size() - p - q);
  }

  // Serves every whole request in c.in, up to the first that needs the database.
  void Serve(Client& c) {
    while (!c.at_database && ServeOne(c)) {
    }
  }

  // Serves the first whole request in c.in; false when there is none.
  bool ServeOne(Client& c) {
    const size_t end = c.in.find("\r\n\r\n");
    if (end == std::string::npos) return false;
    const std::string head = c.in.substr(0, end);
    const size_t length = std::strtoul(Header(head, "Content-Length").c_str(), nullptr, 10);
    if (length > kMaxRequestBytes || c.in.size() < end + 4 + length) return false;
    const std::string body = c.in.substr(end + 4, length);
    c.in.erase(0, end + 4 + length);
    const size_t sp1 = head.find(' '), sp2 = head.find(' ', sp1 + 1);
    const std::string method = head.substr(0, sp1), path = head.substr(sp1 + 1, sp2 - sp1 - 1);
    if (method == "GET" && path == "/readyz") {
      Answer(c, 200, "{\"status\":\"ok\"}");
      return true;
    }
    const std::string key = Between(path, "/v1/ratelimits/", "/take");
    const std::string account = Between(path, "/v1/accounts/", "/holds");
    const std::string hold = Between(path, "/v1/holds/", "/commit");
    if (method != "POST" || (key.empty() && account.empty() && hold.empty())) {
      Answer(c, 404, Error("not_found", "No such route."));
      return true;
    }
    if (Header(head, "Authorization") != "Bearer " + s_.api_key) {
      Answer(c, 401, Error("unauthorized", "A valid API key is required."));
      return true;
    }
    // Every id goes into JSON and the log as it is: the gateway's own checks first.
    Job job{c.fd, 0, {}};
    if (!key.empty()) {
      if (!locks::IsValidRateKey(key)) {
        Answer(c, 400, Error("invalid_request", "Not a rate-limit key."));
        return true;
      }
      if (key.compare(0, s_.bucket.size() + 1, s_.bucket + ":") != 0) {
        Answer(c, 404, Error("unknown_bucket", "No such bucket."));
        return true;
      }
      job = {c.fd, 0, {key, "1", s_.capacity, s_.refill}};
    } else if (!account.empty()) {
      if (!locks::IsValidAccountId(account)) {
        Answer(c, 400, Error("invalid_request", "Not an account id."));
        return true;
      }
      auto parsed = gateway::ParseHoldRequest(body);
      if (std::holds_alternative<gateway::FieldError>(parsed)) {
        Answer(c, 400, Error("invalid_request", "Not a hold request."));
        return true;
      }
      const auto& request = std::get<gateway::HoldRequest>(parsed);
      job = {
          c.fd, 1, {account, std::to_string(request.amount), std::to_string(request.ttl.count())}};
    } else {
      if (!locks::LooksLikeUuid(hold)) {
        Answer(c, 404, Error("hold_not_found", "No such hold."));
        return true;
      }
      job = {c.fd, 2, {hold}};
    }
    c.at_database = true;
    waiting_.push_back(std::move(job));
    Dispatch();
    return true;
  }

  void Dispatch() {
    while (!waiting_.empty() && !idle_.empty()) {
      const int i = idle_.back();
      idle_.pop_back();
      Connection& conn = connections_[i];
      conn.job = std::move(waiting_.front());
      waiting_.pop_front();
      std::vector<const char*> params;
      for (const std::string& p : conn.job.params) params.push_back(p.c_str());
      if (!PQsendQueryPrepared(conn.pg, kStatements[conn.job.statement],
                               static_cast<int>(params.size()), params.data(), nullptr, nullptr,
                               0)) {
        Die(PQerrorMessage(conn.pg));
      }
      if (PQflush(conn.pg) == 1) {
        Control(EPOLL_CTL_MOD, PQsocket(conn.pg), EPOLLIN | EPOLLOUT, kConnectionTag | i);
      }
    }
  }

  void OnDatabase(int i, uint32_t events) {
    Connection& conn = connections_[i];
    if ((events & EPOLLOUT) && PQflush(conn.pg) == 0) {
      Control(EPOLL_CTL_MOD, PQsocket(conn.pg), EPOLLIN, kConnectionTag | i);
    }
    if (!PQconsumeInput(conn.pg)) Die(PQerrorMessage(conn.pg));
    while (!PQisBusy(conn.pg)) {
      PGresult* r = PQgetResult(conn.pg);
      if (!r) {  // the statement is over: the connection takes the next one
        idle_.push_back(i);
        Dispatch();
        return;
      }
      Decided(conn.job, r);
      PQclear(r);
    }
  }

  // A column of the one row, by name.
  static std::string Column(const PGresult* r, const char* name) {
    const int n = PQfnumber(r, name);
    return n < 0 ? "" : PQgetvalue(r, 0, n);
  }

  void Decided(const Job& job, const PGresult* r) {
    const auto it = clients_.find(job.client);
    if (it == clients_.end()) return;
    Client& c = it->second;
    c.at_database = false;
    const int status = PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1 ? 503
                       : job.statement == 0                                      ? Took(c, job, r)
                       : job.statement == 1                                      ? Held(c, job, r)
                                            : Committed(c, job, r);
    if (status == 503) Answer(c, 503, Error("unavailable", "The database did not decide; retry."));
    log_ += "{\"event\":\"request\",\"method\":\"POST\",\"statement\":\"" +
            std::string(kStatements[job.statement]) + "\",\"id\":\"" + job.params[0] +
            "\",\"status\":" + std::to_string(status) + "}\n";
    if (c.gone) return Close(c.fd);
    Serve(c);  // a request that arrived meanwhile
  }

  // Each answers one decision as the gateway's route does (its essential fields) and
  // returns the status.
  int Took(Client& c, const Job& job, const PGresult* r) {
    const std::string& key = job.params[0];
    const std::string remaining = Column(r, "remaining");
    if (Column(r, "allowed") == "t") {
      Answer(c, 200, "{\"allowed\":true,\"key\":\"" + key + "\",\"remaining\":" + remaining + "}");
      return 200;
    }
    const std::string retry = Column(r, "retry_after");
    Answer(c, 429,
           "{\"allowed\":false,\"key\":\"" + key + "\",\"remaining\":" + remaining +
               ",\"retry_after_seconds\":" + retry +
               ",\"code\":\"rate_limited\",\"message\":\"Rate limit reached.\"}",
           "Retry-After: " + retry + "\r\n");
    return 429;
  }

  int Held(Client& c, const Job& job, const PGresult* r) {
    const std::string outcome = Column(r, "outcome");
    if (outcome == "held") {
      const std::string id = Column(r, "hold_id");
      Answer(c, 201,
             "{\"hold_id\":\"" + id + "\",\"account_id\":\"" + job.params[0] +
                 "\",\"amount\":" + job.params[1] + ",\"expires_at\":\"" + Column(r, "expires_at") +
                 "\",\"available\":" + Column(r, "available") + "}",
             "Location: /v1/holds/" + id + "\r\n");
      return 201;
    }
    if (outcome == "insufficient") {
      Answer(c, 409, Error("insufficient_credits", "Not enough credits."));
      return 409;
    }
    if (outcome == "unknown_account") {
      Answer(c, 404, Error("account_not_found", "No such account."));
      return 404;
    }
    return 503;
  }

  int Committed(Client& c, const Job& job, const PGresult* r) {
    const std::string outcome = Column(r, "outcome");
    if (outcome == "committed" || outcome == "already_committed") {
      Answer(c, 200,
             "{\"hold_id\":\"" + job.params[0] + "\",\"account_id\":\"" + Column(r, "account_id") +
                 "\",\"amount\":" + Column(r, "amount") +
                 ",\"state\":\"committed\",\"balance_after\":" + Column(r, "balance_after") + "}");
      return 200;
    }
    if (outcome == "unknown_hold") {
      Answer(c, 404, Error("hold_not_found", "No such hold."));
      return 404;
    }
    if (outcome == "released" || outcome == "expired") {
      Answer(c, 409,
             Error(outcome == "released" ? "hold_released" : "hold_expired", "The hold is over."));
      return 409;
    }
    return 503;
  }

  void Answer(Client& c, int status, const std::string& body, const std::string& headers = "") {
    const char* reason = status == 200   ? "OK"
                         : status == 201 ? "Created"
                         : status == 400 ? "Bad Request"
                         : status == 401 ? "Unauthorized"
                         : status == 404 ? "Not Found"
                         : status == 409 ? "Conflict"
                         : status == 429 ? "Too Many Requests"
                                         : "Service Unavailable";
    c.out += "HTTP/1.1 " + std::to_string(status) + " " + reason +
             "\r\nContent-Type: application/json\r\n" + headers +
             "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    Send(c);
  }

  void Send(Client& c) {
    while (c.out_sent < c.out.size()) {
      const ssize_t sent = write(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent);
      if (sent < 0) {
        if (errno == EAGAIN && !c.watching_out) {
          c.watching_out = true;
          Control(EPOLL_CTL_MOD, c.fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP,
                  static_cast<uint64_t>(c.fd));
        }
        return;  // the rest when the socket can take it (or never, if it failed)
      }
      c.out_sent += static_cast<size_t>(sent);
    }
    c.out.clear();
    c.out_sent = 0;
    if (c.watching_out) {
      c.watching_out = false;
      Control(EPOLL_CTL_MOD, c.fd, EPOLLIN | EPOLLRDHUP, static_cast<uint64_t>(c.fd));
    }
  }

  const Settings& s_;
  int epoll_ = -1;
  const int listener_;
  std::unordered_map<int, Client> clients_;
  std::vector<Connection> connections_;
  std::vector<int> idle_;
  std::deque<Job> waiting_;  // for a free connection
  std::string log_;
};

int Listen(const Settings& s) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(s.port));
  if (inet_pton(AF_INET, s.host.c_str(), &a.sin_addr) != 1) Die("PAINTLOCK_LISTEN: bad IPv4 host");
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(fd, 1024) != 0) {
    Die("cannot listen on " + s.host + ":" + std::to_string(s.port) + ": " + std::strerror(errno));
  }
  return fd;
}

}  // namespace
}  // namespace paintlock::bench

int main(int argc, char** argv) {
  using namespace paintlock::bench;
  if (argc > 1) {
    const bool help = std::strcmp(argv[1], "--help") == 0;
    std::fputs(kUsage, help ? stdout : stderr);
    return help ? 0 : 2;
  }
  const Settings s = Load();
  // Every loop has its PostgreSQL connections before "listening" is printed and any
  // loop serves: the line means ready.
  std::vector<std::unique_ptr<EventLoop>> loops;
  for (int t = 0; t < s.threads; ++t) {
    const int connections = s.pool / s.threads + (t < s.pool % s.threads ? 1 : 0);
    loops.push_back(std::make_unique<EventLoop>(s, Listen(s), connections));
  }
  std::printf("{\"event\":\"listening\",\"port\":%d,\"threads\":%d,\"connections\":%d}\n", s.port,
              s.threads, s.pool);
  std::fflush(stdout);
  std::vector<std::thread> threads;
  for (auto& loop : loops) threads.emplace_back([&loop] { loop->Run(); });
  for (auto& t : threads) t.join();
}
