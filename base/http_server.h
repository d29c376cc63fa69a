// httplib::Server as paintlock's servers listen: on a port of their own, with
// a backlog wider than httplib's.
//
// A port of its own: httplib 0.11's default socket options set SO_REUSEPORT
// and nothing else, so a second server of the same user binding the same
// address succeeds, and the kernel splits new connections between the two.
// A gateway started on a port a fake Stripe (or another gateway) already
// listens on would answer half its buyers with the other's replies, and a
// bind(0) may even be handed a port another such socket holds. This server
// sets SO_REUSEADDR only: a restart may reuse a port whose old connections
// linger in TIME_WAIT, and a port someone listens on fails to bind, so the
// start-up error says so.
//
// The backlog: httplib 0.11, as Debian compiles it, listens with a backlog of
// 5: a burst of new connections beyond it waits out SYN retransmits (1 s,
// 3 s, …). Calling listen() again on the bound socket raises the backlog
// (Linux); call WidenBacklog after binding.
#pragma once

#include <httplib.h>
#include <sys/socket.h>

namespace paintlock::base {

class HttpServer : public httplib::Server {
 public:
  HttpServer() {
    set_socket_options([](socket_t sock) {
      int yes = 1;
      setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
  }
  bool WidenBacklog(int backlog) { return ::listen(svr_sock_, backlog) == 0; }
};

}  // namespace paintlock::base
