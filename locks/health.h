// Whether the database answers: what /readyz reports.
// Thread-safe.
#pragma once

#include "locks/database.h"

namespace paintlock::locks {

class Health {
 public:
  explicit Health(Database& db) : db_(db) {}

  // One round trip (sql/queries/ping.sql) on a pooled connection; a
  // DbFailure when the database cannot be reached or did not answer in time.
  DbResult<bool> Ping();

 private:
  Database& db_;
};

}  // namespace paintlock::locks
