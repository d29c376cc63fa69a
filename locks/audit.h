// The audit log: every admin action and every automatic decision that moved
// money or a painting, or refused to (DESIGN.md, Data). Thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "locks/database.h"

namespace paintlock::locks {

struct AuditEntry {
  std::string actor;           // gateway, webhook, success_page, take_over, paintlockctl
  std::string action;          // take_over_refused, release, refund, ...
  std::string reservation_id;  // empty: none
  std::string painting_id;
  std::string session_id;
  std::string reason;
  nlohmann::json details = nlohmann::json::object();
};

class AuditLog {
 public:
  explicit AuditLog(Database& db) : db_(db) {}
  // Best effort for callers that are already failing: the result says
  // whether the entry was written.
  DbResult<bool> Record(const AuditEntry& e);

 private:
  Database& db_;
};

}  // namespace paintlock::locks
