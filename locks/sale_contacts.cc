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

DbResult<ForgetCount> SaleContactStore::Forget(const ContactSelector& which,
                                               const std::string& actor, const std::string& reason,
                                               bool dry_run) {
  return db_.Run("sale_contacts_forget", [&](pqxx::connection& conn) {
    pqxx::work w(conn);
    const pqxx::row row = Exec1(w, "sale_contacts_forget", which.session_id, which.email,
                                which.older_than_seconds, actor, reason, which.name());
    ForgetCount count{row["forgotten"].as<long long>(), row["tombstones"].as<long long>(),
                      row["known"].as<bool>()};
    if (dry_run) {
      w.abort();
    } else {
      w.commit();
    }
    return count;
  });
}

}  // namespace paintlock::locks
