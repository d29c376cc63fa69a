// The loopback address our tools and tests dial or bind (the chaos campaign's
// hanging-up buyer, the test clients, a free port's probe).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>

namespace paintlock::base {

// 127.0.0.1:port (port 0: any free port, when bound).
inline sockaddr_in LoopbackAddress(int port = 0) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return addr;
}

}  // namespace paintlock::base
