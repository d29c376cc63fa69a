#include "locks/audit.h"

#include <optional>

#include "locks/reservations.h"
#include "locks/statements.h"

namespace paintlock::locks {

DbResult<bool> AuditLog::Record(const AuditEntry& e) {
  const std::optional<std::string> reservation =
      LooksLikeUuid(e.reservation_id) ? NullIfEmpty(e.reservation_id) : std::nullopt;
  return db_.Run("audit", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    Exec(n, "audit", e.actor, e.action, reservation, NullIfEmpty(e.painting_id),
         NullIfEmpty(e.session_id), NullIfEmpty(e.reason), e.details.dump());
    return true;
  });
}

}  // namespace paintlock::locks
