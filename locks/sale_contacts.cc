#include "locks/sale_contacts.h"

#include "locks/reservations.h"
#include "locks/statements.h"

namespace paintlock::locks {

DbResult<bool> SaleContactStore::Keep(const std::string& session_id, const SaleContact& c) {
  return db_.Run("sale_contact_keep", [&](pqxx::connection& conn) {
    pqxx::nontransaction n(conn);
    Exec(n, "sale_contact_keep", session_id, NullIfEmpty(c.name), NullIfEmpty(c.email),
         NullIfEmpty(c.phone), NullIfEmpty(c.shipping_name), NullIfEmpty(c.line1),
         NullIfEmpty(c.line2), NullIfEmpty(c.city), NullIfEmpty(c.postal_code),
         NullIfEmpty(c.state), NullIfEmpty(c.country));
    return true;
  });
}

}  // namespace paintlock::locks
