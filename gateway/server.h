// The gateway's HTTP server: the routes of gateway/routes.h, the middleware
// around them, and the server's own limits (threads, body size, timeouts).
// Thread-safe once installed.
#pragma once

#include <httplib.h>

#include "gateway/routes.h"

namespace paintlock::gateway {

class HttpApi {
 public:
  HttpApi(const Config& config, Services services) : api_{config, services} {}

  // Installs limits, middleware and every route. The HttpApi, the config and
  // the services must outlive the server.
  void Install(httplib::Server& server);

 private:
  const Api api_;
};

}  // namespace paintlock::gateway
