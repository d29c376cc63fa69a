// All-or-nothing reservations of paintings (DESIGN.md, "Checkout").
//
// Reserve() takes every painting of a cart for a new reservation, or none, in
// one short statement (sql/migrations/0001: paintlock_reserve): it locks the
// lock rows in sorted id order under lock_timeout, decides from the database
// clock, and bumps each lock's fence on a grant. No row lock outlives the call,
// so nothing is ever held while the caller talks to Stripe.
//
// Outcomes are types; the HTTP layer maps them to status codes in one table
// (gateway/http_errors.h). Thread-safe: every call runs on its own pooled
// connection.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "locks/async_pool.h"
#include "locks/database.h"

namespace paintlock::locks {

struct Granted {
  std::string reservation_id;
  std::string held_until;  // RFC 3339, UTC
};
struct Busy {  // held by a live reservation, or its line's claim window runs
  std::string painting;
  std::string free_at;  // RFC 3339, UTC, rounded up to the second
  int retry_after_seconds = 1;
  // The caller's place in the painting's line (1: next), when the caller
  // gave a line token that waits in it (locks/lines.h).
  std::optional<std::int64_t> line_position = std::nullopt;
};
struct Sold {
  std::string painting;
};
// Taken off sale by the seller (paintlockctl catalog withdraw). Refused like a
// sold painting and ranked with it.
struct Withdrawn {
  std::string painting;
};
struct Unknown {
  std::string painting;
};
// The painting's hold lapsed, but the holder's Stripe session may still be
// open: it must be expired at Stripe before the painting passes on.
struct LapsedSession {
  std::string painting;
  std::string reservation_id;
  std::string session_id;
};
struct TakeOverNeeded {
  std::vector<LapsedSession> sessions;
};

using ReserveOutcome =
    std::variant<Granted, Busy, Sold, Withdrawn, Unknown, TakeOverNeeded, DbFailure>;

struct ReservationView {
  std::string id;
  std::string state;  // held | awaiting_payment | sold | released | refund_pending | refunded
  std::string released_reason;
  std::string held_until;
  bool hold_live = false;  // held_until is still ahead
  bool holds = false;      // still the holder of every one of its paintings
  std::int64_t amount_minor = 0;
  std::string currency;
  std::string stripe_session_id;
  std::string stripe_status;
  std::string created_at;
  std::vector<std::string> paintings;
};

enum class ReleaseResult { kReleased, kNotHeld, kNotFound };
struct ReleaseOutcome {
  ReleaseResult result = ReleaseResult::kNotFound;
  std::string state;  // the reservation's state afterwards
};

class ReservationStore {
 public:
  ReservationStore(Database& db, std::chrono::seconds hold_ttl) : db_(db), hold_ttl_(hold_ttl) {}

  // `paintings` must be non-empty, without duplicates (the caller validates).
  // `buyer_ref` is optional and stored as given. The reservation's id is
  // chosen here before the write, so when the connection breaks mid-call the
  // answer is looked up by it: Granted if the hold committed, a DbFailure
  // with may_have_committed only if the database cannot be asked.
  // `line_token` (locks/lines.h), when given, is the buyer's place in a
  // painting's waiting line: during that entry's claim window only it is
  // granted the painting, and a Busy answer carries its position.
  ReserveOutcome Reserve(const std::vector<std::string>& paintings,
                         const std::optional<std::string>& buyer_ref,
                         const std::optional<std::string>& line_token = std::nullopt);

  // Reserve() with asynchronous libpq (locks/async_pool.h), on `pool`'s
  // thread: `done` gets the same outcome from the same statement. An outcome
  // lost with the connection is looked up by its id (`reservation_get`) as
  // patiently as LookUp(). `wanted`: as AsyncPool::Submit's.
  struct ReserveStatements {
    int reserve = 0;          // sql/queries/reserve.sql, in the pool's list
    int reservation_get = 0;  // sql/queries/reservation_get.sql
  };
  void ReserveAsync(AsyncPool& pool, ReserveStatements statements,
                    const std::vector<std::string>& paintings,
                    const std::optional<std::string>& buyer_ref,
                    const std::optional<std::string>& line_token,
                    std::function<void(ReserveOutcome)> done, std::function<bool()> wanted);

  // Records the Stripe session on a reservation that still holds all of its
  // paintings; false if it lost them (the caller must expire the session).
  // Idempotent, so a connection that breaks under it is retried once.
  DbResult<bool> AttachSession(const std::string& reservation_id, const std::string& session_id,
                               std::int64_t expires_at_unix);

  // Releases a 'held' reservation. Idempotent; a sold or awaiting-payment
  // reservation is not released (kNotHeld, with its state).
  DbResult<ReleaseOutcome> Release(const std::string& reservation_id, const std::string& reason,
                                   const std::string& actor);

  // Release() with asynchronous libpq (`statement`: sql/queries/release.sql in
  // `pool`'s list), on the pool's thread.
  void ReleaseAsync(AsyncPool& pool, int statement, const std::string& reservation_id,
                    const std::string& reason, const std::string& actor,
                    std::function<void(DbResult<ReleaseOutcome>)> done);

  // nullopt for an unknown id (or one that is not a UUID).
  DbResult<std::optional<ReservationView>> Get(const std::string& reservation_id);
  // Get() for settling a write whose outcome was lost with its connection: while the
  // database is unreachable (a failover) it asks again, for up to the pool's
  // outcome_lookup_patience (Database::LookUpPatiently), before it gives up.
  DbResult<std::optional<ReservationView>> LookUp(const std::string& reservation_id);

  std::chrono::seconds hold_ttl() const { return hold_ttl_; }

 private:
  // The connection broke while reserving under `id`: what the database says
  // of it now (LookUp). Granted if it committed and still holds; `lost` if the
  // database cannot be asked.
  ReserveOutcome Recover(const std::string& id, const DbFailure& lost);
  // What `found` (the look-up of `id`) makes of the outcome `lost`.
  ReserveOutcome Recovered(const std::string& id, const DbFailure& lost,
                           const DbResult<std::optional<ReservationView>>& found);
  static DbResult<std::optional<ReservationView>> ViewFrom(const AsyncReply& reply);
  // An outcome, after telling the availability publisher what it changed:
  // a grant's paintings, a release's reservation.
  ReserveOutcome Announced(const std::vector<std::string>& paintings, ReserveOutcome outcome);
  DbResult<ReleaseOutcome> Announced(const std::string& reservation_id,
                                     DbResult<ReleaseOutcome> released);
  // Recover() on `pool`, with `statement` (reservation_get) until `deadline`.
  void RecoverAsync(AsyncPool& pool, int statement, const std::string& id, const DbFailure& lost,
                    std::chrono::steady_clock::time_point deadline,
                    std::function<void(ReserveOutcome)> done);

  Database& db_;
  const std::chrono::seconds hold_ttl_;
};

// PostgreSQL array literal for a text[] parameter: {"a","b"} with quoting.
std::string TextArrayLiteral(const std::vector<std::string>& items);

// A random version-4 UUID for a new reservation; nullopt when no random bytes
// could be had (the database then picks the id).
std::optional<std::string> NewReservationId();

// `text` as a statement parameter: NULL when it is empty.
std::optional<std::string> NullIfEmpty(const std::string& text);

// True for the canonical textual form of a UUID (what reservation ids are).
bool LooksLikeUuid(const std::string& text);

}  // namespace paintlock::locks
