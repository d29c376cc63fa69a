// The gateway's HTTP edge: cpp-httplib keeps routing, handlers, Request and
// Response; this class owns every connection's life instead of httplib's
// thread-per-connection loop.
//
//   accept thread (httplib's listen loop)
//     └─ process_and_close_socket(sock): admission only — the global and
//        per-address connection caps (over them: 503 too_many_connections at
//        once); the socket goes non-blocking to the reactor, and returns.
//   reactor (one thread, epoll)
//     ├─ reads into a per-connection buffer and runs RequestFramer
//        (request_framer.h): 431/413/400/… answered from here, then a
//        lingering close; a whole-request deadline from the first byte
//        (408 request_timeout); an idle keep-alive connection costs no
//        thread and is closed after the idle timeout;
//     ├─ hands each complete request to the worker pool;
//     └─ owns detached responses (PushStream: the SSE availability stream),
//        written non-blocking; a client that closes is noticed at once
//        (EPOLLRDHUP/EPOLLHUP/EPIPE) and its PushStream destroyed.
//     ├─ answers the requests its ReactorRoutes take (SetReactorRoutes):
//        routes that need only statements driven with asynchronous libpq
//        (locks/async_pool.h), whose sockets join the reactor's epoll, so
//        such a request costs no hand-off and no thread sleeps on PostgreSQL;
//   workers (a fixed pool)
//     └─ first check that the client is still there (no FIN or RST seen):
//        if it left, the request is dropped unrun and logged
//        (client_gone_before_handler); then httplib's process_request runs
//        on a Stream that reads the framed request and writes the socket
//        (blocking, with a write timeout per write). Keep-alive: while
//        another worker is idle, the worker waits up to keepalive_linger
//        for the same client's next request and frames it itself (a busy
//        keep-alive client then costs no reactor turn and no hand-off);
//        otherwise — or with no whole request in time — the connection goes
//        back to the reactor with whatever bytes it has.
//
// A request whose client vanishes after this check runs to completion unless
// its handler asks ClientStillThere (a checkout does, before Stripe); which
// routes are then safe to repeat is in README.md ("The HTTP edge").
//
// Shutdown: httplib's stop() ends the accept loop, whose task queue shutdown
// drains: idle connections close, partly received requests get until their
// deadline, requests in workers finish (answered with Connection: close),
// push streams end; then the reactor and the workers stop.
//
// Thread-safe: the public functions may be called from any thread.
#pragma once

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/http_server.h"
#include "base/visitor.h"
#include "locks/async_pool.h"

namespace paintlock::gateway::edge {

struct EdgeOptions {
  std::chrono::milliseconds request_deadline{10000};  // first byte → complete request
  std::chrono::milliseconds idle_timeout{5000};       // keep-alive with no request started
  std::chrono::milliseconds write_timeout{10000};     // no progress writing → close
  std::chrono::milliseconds linger{2000};  // reading (and discarding) after an error answer
  std::size_t max_header_bytes = 16 * 1024;
  std::size_t max_body_bytes = 64 * 1024;
  int max_connections = 4096;
  int max_connections_per_address = 64;
  std::vector<base::Network> unlimited_addresses;  // trusted proxies: no per-address cap
  int workers = 64;
  // After a keep-alive answer, how long a worker waits for the same client's
  // next request, only while another worker is idle (0: never).
  std::chrono::milliseconds keepalive_linger{2};
  // A request a ReactorRoutes took and has not answered in this long: its
  // connection is closed (the routes' own deadlines come first).
  std::chrono::milliseconds route_deadline{30000};
};

class EdgeServer;

// The edge's handle on one request a ReactorRoutes took (Serve): a plain value
// of four words, so that a request costs no allocation for it. Use it on the
// reactor thread only. Each call first checks that the request is still its
// connection's current one: a ticket that outlives its request (the client
// left, the connection closed) answers nothing, and Present() is false.
class RouteTicket {
 public:
  // Called exactly once, now or later, with the whole response (the edge adds
  // Content-Length, and Connection: close when the connection ends after it).
  void Answer(const httplib::Response& res) const;
  // Asked before work that waited starts: true while the client is still
  // there. Once false, the edge has closed the connection and logged
  // client_gone_before_handler, and the work should not start (its answer is
  // then optional, and dropped).
  bool Present() const;
  // Instead of Answer and only before it: the request goes to a worker after
  // all, which serves it from the start as if Serve had returned false (for
  // an outcome the routes cannot finish without blocking). Whatever the
  // routes did meanwhile must be safe to do again. No effect once the client
  // has gone.
  void ToWorkers() const;

 private:
  friend class EdgeServer;  // its reactor (Core) makes them
  RouteTicket(EdgeServer* edge, void* conn, std::uint64_t serial, bool close)
      : edge_(edge), conn_(conn), serial_(serial), close_(close) {}
  EdgeServer* edge_;
  void* conn_;  // its Conn, as an identity until the edge has checked it is open
  std::uint64_t serial_;
  bool close_;  // the connection ends after the answer
};

// Requests the reactor answers itself, without a worker (the class comment).
// Every call is on the reactor thread; none may block.
class ReactorRoutes {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~ReactorRoutes() = default;
  // When the reactor takes the routes: the loop their sockets join.
  virtual void Start(locks::AsyncLoop& loop) = 0;
  // When the reactor stops, after its last connection closed: let go of
  // everything Start made (nothing is waiting for an answer then).
  virtual void Stop() = 0;
  // From the request line alone, cheaply: whether Serve may take the request.
  virtual bool Wants(const std::string& method, const std::string& target) const = 0;
  // A whole request Wants() chose, parsed (remote_addr included). False: not
  // taken after all, nothing done; a worker serves it. True: the routes
  // answer it through `ticket` (RouteTicket: Answer, Present, ToWorkers).
  virtual bool Serve(std::shared_ptr<httplib::Request> req, RouteTicket ticket) = 0;
  // An event for a tag the routes passed to AsyncLoop::Watch.
  virtual void OnEvent(void* tag, std::uint32_t events) = 0;
  // Every event for the routes' sockets reported by an epoll_wait begun at
  // `wait_began` has been passed to OnEvent, before any request of that turn
  // (locks::AsyncPool::EventsRead).
  virtual void EventsRead(Clock::time_point wait_began) = 0;
  // Timers; returns when the routes next need a call.
  virtual Clock::time_point Tick(Clock::time_point now) = 0;
};

// A response body produced after the response head, pushed by the reactor
// (the SSE availability stream). Called on the reactor thread only, and only
// when everything it returned before has been written.
class PushStream {
 public:
  virtual ~PushStream() = default;
  // The next bytes to send (empty: nothing now). Set *end to finish the
  // response; the connection is then closed. Asked again at once whenever
  // its bytes were all written without waiting, so a large backlog can be
  // given in slices.
  virtual std::string Next(std::chrono::steady_clock::time_point now, bool* end) = 0;
};

// True inside a handler run by an EdgeServer worker: DetachResponse works.
bool CanDetachResponse();
// Inside a handler run by an EdgeServer worker: false once its client has
// closed or reset its side (the check a worker makes before the handler,
// client_gone_before_handler), for work worth skipping when nobody will read
// the answer. A client that half-closes after its request counts as gone.
// True anywhere else.
bool ClientStillThere();
// Inside a chunked content provider, after it has written its first bytes:
// once httplib returns, the connection belongs to the reactor, which sends
// what `stream` produces as further chunks. The provider must then return
// false (httplib stops writing). Outside an EdgeServer worker: no effect.
void DetachResponse(std::shared_ptr<PushStream> stream);

struct ReactorCounters {
  std::uint64_t events_in_worker = 0;   // events for a connection its worker still held
  std::uint64_t turns = 0;              // passes of the reactor's loop
  std::uint64_t lingered = 0;           // whole requests a lingering worker read (EdgeOptions)
  std::uint64_t lingered_partial = 0;   // parts of one it handed to the reactor to finish
  int idle_workers = 0;                 // workers waiting for a request now
  std::uint64_t served_on_reactor = 0;  // requests ReactorRoutes took
  std::uint64_t handed_to_workers = 0;  // of those, requests they passed on (ToWorkers)
};

// Tests only: a worker calls `hook` between putting a keep-alive connection
// back in epoll and handing it to the reactor. Set it before any server runs.
void SetHandBackHookForTesting(void (*hook)());

class EdgeServer : public base::HttpServer {
 public:
  explicit EdgeServer(EdgeOptions options);
  ~EdgeServer() override;
  EdgeServer(const EdgeServer&) = delete;
  EdgeServer& operator=(const EdgeServer&) = delete;

  // Asks every push stream for new bytes soon (call after a change).
  void WakePushStreams();

  // Hands the reactor the routes it answers itself (once, before or after
  // listening; requests framed before it takes them go to the workers). The
  // edge owns them from now on.
  void SetReactorRoutes(std::shared_ptr<ReactorRoutes> routes);

  // Connections open now (all states).
  int OpenConnections() const;

  // How the reactor has run, for tests.
  ReactorCounters Counters() const;

  class Core;  // the reactor and the workers (edge_server.cc)

 private:
  friend class RouteTicket;  // calls into core_

  bool process_and_close_socket(socket_t sock) override;
  bool ServeOne(httplib::Stream& stream, bool close_connection, bool* connection_closed);

  std::unique_ptr<Core> core_;
};

}  // namespace paintlock::gateway::edge
