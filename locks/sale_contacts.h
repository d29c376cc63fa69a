// The buyer details of completed Checkout Sessions (sql/migrations/0016:
// sale_contacts): who paid and where the painting goes. Personal data: this
// store never logs a field, and callers must not either. Thread-safe: every
// call runs on its own pooled connection.
#pragma once

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

class SaleContactStore {
 public:
  explicit SaleContactStore(Database& db) : db_(db) {}

  // Keeps `contact` for `session_id` (cs_…), filling what an earlier call
  // left empty and never blanking a field. Idempotent.
  DbResult<bool> Keep(const std::string& session_id, const SaleContact& contact);

 private:
  Database& db_;
};

}  // namespace paintlock::locks
