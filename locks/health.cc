#include "locks/health.h"

#include "locks/statements.h"

namespace paintlock::locks {

DbResult<bool> Health::Ping() {
  return db_.Run("ping", [](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    Exec(n, "ping");
    return true;
  });
}

}  // namespace paintlock::locks
