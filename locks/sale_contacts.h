// The buyer details of completed Checkout Sessions (sql/migrations/0016:
// sale_contacts): who paid and where the painting goes. Personal data: this
// store never logs a field, and callers must not either. Thread-safe: every
// call runs on its own pooled connection.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "locks/database.h"

namespace paintlock::locks {

// One session's buyer details; empty fields: not given. Each at most 500
// bytes of UTF-8 (stripe::kMaxBuyerFieldBytes bounds them when read).
struct SaleContact {
  std::string name, email, phone;
  std::string shipping_name, line1, line2, city, postal_code, state, country;
  bool empty() const {
    return name.empty() && email.empty() && phone.empty() && shipping_name.empty() &&
           line1.empty() && line2.empty() && city.empty() && postal_code.empty() && state.empty() &&
           country.empty();
  }
};

// Which sales' buyer details to forget: exactly one of the three.
struct ContactSelector {
  std::optional<std::string> session_id;  // cs_…: that sale (a tombstone if none is kept yet)
  std::optional<std::string> email;       // every sale with this email, any case
  std::optional<std::int64_t> older_than_seconds;  // every sale recorded longer ago
  const char* name() const { return session_id ? "session" : email ? "email" : "older_than"; }
};

struct ForgetCount {
  long long forgotten = 0;   // sales whose details were blanked
  long long tombstones = 0;  // sessions marked forgotten before any details were kept
  bool known = true;         // false: a session id paintlock never saw; nothing changed
};

class SaleContactStore {
 public:
  explicit SaleContactStore(Database& db) : db_(db) {}

  // Keeps `contact` for `session_id` (cs_…), filling what an earlier call
  // left empty and never blanking a field. Idempotent.
  DbResult<bool> Keep(const std::string& session_id, const SaleContact& contact);

  // Blanks the details `which` selects and marks them forgotten for good:
  // Keep never fills a forgotten row again (sql/queries/sale_contacts_forget.sql).
  // Audited with `actor` and `reason`, never with the details or the email.
  // `dry_run`: the same statement, rolled back: the count of what it would do.
  DbResult<ForgetCount> Forget(const ContactSelector& which, const std::string& actor,
                               const std::string& reason, bool dry_run);

 private:
  Database& db_;
};

}  // namespace paintlock::locks
