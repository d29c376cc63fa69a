// TTL leases with fencing tokens (locks/CREDITS.md).
//
// A lease names one holder for a while. It is granted by one statement, the
// userver pattern:
//     INSERT … ON CONFLICT (name) DO UPDATE …
//       WHERE holder IS NULL OR holder = $holder OR expires_at <= now()
// so a crashed holder's lease lapses by itself at its expiry, on the database
// clock, with nothing running to reclaim it. Every grant gets a fencing token
// one above the previous grant's (the row is never deleted, so tokens never
// go back): a resource that remembers the highest token it has seen can
// refuse a stale holder that woke up after its lease passed on.
//
// Renew and release need the holder and the current token: a holder whose
// lease was granted to someone else since cannot extend or free it.
//
// Thread-safe: every call runs on its own pooled connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "locks/database.h"

namespace paintlock::locks {

constexpr std::chrono::seconds kMaxLeaseTtl{86400};

// [A-Za-z0-9][A-Za-z0-9_.:-]{0,127}
bool IsValidLeaseName(const std::string& name);
// 1..200 printable ASCII characters (no spaces or controls): "worker-3@host-a".
bool IsValidLeaseHolder(const std::string& holder);

struct LeaseGranted {
  std::string name;
  std::string holder;
  std::int64_t token = 0;  // the fencing token: larger than every earlier grant's
  std::string expires_at;  // RFC 3339 (ms, UTC)
};
// Someone else holds it, live.
struct LeaseHeld {
  std::string name;
  std::string holder;
  std::string expires_at;
  int retry_after_seconds = 1;  // whole seconds until it lapses unless renewed
};
using AcquireOutcome = std::variant<LeaseGranted, LeaseHeld, DbFailure>;

// The caller's grant is no longer current: it lapsed, or was released, or the
// lease was granted again since. `holder` names a live holder, if any.
struct LeaseLost {
  std::string name;
  std::optional<std::string> holder;
  std::string expires_at;  // the live holder's expiry, else empty
};
struct LeaseNotFound {
  std::string name;
};
using RenewOutcome = std::variant<LeaseGranted, LeaseLost, LeaseNotFound, DbFailure>;

struct LeaseReleased {
  std::string name;
  std::int64_t token = 0;
  bool replayed = false;  // this grant had been released before
};
using LeaseReleaseOutcome = std::variant<LeaseReleased, LeaseLost, LeaseNotFound, DbFailure>;

struct LeaseView {
  std::string name;
  std::optional<std::string> holder;  // nullopt when released
  std::int64_t token = 0;             // of the latest grant
  std::string expires_at;             // empty when released
  bool live = false;                  // held right now
  int seconds_left = 0;
  std::string granted_at;
  std::optional<std::int64_t> expires_in_seconds;  // negative once lapsed; nullopt when released
};

class LeaseStore {
 public:
  explicit LeaseStore(Database& db) : db_(db) {}

  // Grants `name` to `holder` for `ttl` (1 s..kMaxLeaseTtl) if it is free,
  // lapsed, or already `holder`'s (a new token either way).
  AcquireOutcome Acquire(const std::string& name, const std::string& holder,
                         std::chrono::seconds ttl);
  // Extends a live lease whose current grant is (`holder`, `token`) to ttl from now.
  RenewOutcome Renew(const std::string& name, const std::string& holder, std::int64_t token,
                     std::chrono::seconds ttl);
  // Frees the lease if (`holder`, `token`) is its current grant, live or lapsed.
  LeaseReleaseOutcome Release(const std::string& name, const std::string& holder,
                              std::int64_t token);

  // nullopt for a name never granted.
  DbResult<std::optional<LeaseView>> Get(const std::string& name);
  // Every lease, live ones first; at most 10000.
  DbResult<std::vector<LeaseView>> List();

 private:
  Database& db_;
};

}  // namespace paintlock::locks
