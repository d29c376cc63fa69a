// httplib 0.11, as Debian compiles it, listens with a backlog of 5: a burst of
// new connections beyond it waits out SYN retransmits (1 s, 3 s, …). Calling
// listen() again on the bound socket raises the backlog (Linux). Used by the
// gateway and the fake Stripe alike; call WidenBacklog after binding.
#pragma once

#include <httplib.h>
#include <sys/socket.h>

namespace paintlock::base {

class WideBacklogServer : public httplib::Server {
 public:
  bool WidenBacklog(int backlog) { return ::listen(svr_sock_, backlog) == 0; }
};

}  // namespace paintlock::base
