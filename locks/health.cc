#include "locks/health.h"

namespace paintlock::locks {

DbResult<bool> Health::Ping() {
  return db_.Run("ping", [](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    n.exec_prepared("ping");
    return true;
  });
}

}  // namespace paintlock::locks
