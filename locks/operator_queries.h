// What paintlockctl asks of the database besides the gateway's stores: the
// operator's listings (holds, the story of a painting, reservation or
// session, the Stripe events, the sessions to reconcile) and its hand-made
// writes (the catalogue's sold flag, the sweep). These are the statements of
// sql/queries/admin_*.sql. The fenced release and the reservation it reads
// first serve checkout::ReleaseService, the gateway's as well as
// paintlockctl's.
//
// Listings come back as JSON rows keyed by column name (locks/row_json.h),
// which paintlockctl prints as they are with --json; what the caller decides
// on comes back typed. Thread-safe: every call runs on its own pooled
// connection.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "locks/database.h"
#include "locks/row_json.h"

namespace paintlock::locks {

struct HoldsListing {
  bool painting_known = true;  // false when a painting was asked for and is not in the catalogue
  nlohmann::json holds = nlohmann::json::array();  // admin_holds rows; "paintings" a JSON array
};

// The rows of one painting's, reservation's or session's story.
struct StoryRows {
  nlohmann::json painting;  // the admin_painting row; null unless a painting was asked for
  nlohmann::json reservations = nlohmann::json::array();  // "items" a JSON array
  nlohmann::json events = nlohmann::json::array();
  nlohmann::json audit = nlohmann::json::array();  // "details" a JSON object
};

// What setting or clearing the catalogue's sold flag did (sql/migrations/0003:
// paintlock_admin_mark_sold, paintlock_admin_mark_unsold).
// Setting, when held: who holds it (HeldBy).
struct SoldFlagChange : HeldBy {
  // Setting: sold | already_sold | held | unknown. Clearing: unsold | not_sold | unknown.
  std::string outcome;
  // Clearing: the paintlock sale recorded as refunded outside paintlock, if any.
  std::optional<std::string> sale;
};

// Reservations the sweep deletes (or would), by state, with their items and
// the lock rows it clears; kept_stripe_unknown only from SweepPreview().
struct SweepCounts {
  long long reservations = 0, released = 0, refunded = 0, lapsed = 0, items = 0, holders = 0,
            kept_stripe_unknown = 0;
};

// A reservation as the fenced release reads it before deciding: its state and
// the fence of each of its items.
struct FencedReservation {
  std::string reservation_id;
  std::string state;  // held | awaiting_payment | sold | released | refund_pending | refunded
  std::string released_reason;
  std::string session_id;              // empty: none
  std::string stripe_status;           // what Stripe last told us; empty: nothing
  std::vector<std::string> paintings;  // in id order
  std::vector<std::int64_t> fences;    // the item fences, same order
};

// What the fenced release did (sql/migrations/0003: paintlock_admin_release).
struct FencedReleaseAnswer {
  std::string outcome;    // released | not_found | anything else: nothing released
  std::string state_now;  // the reservation's state afterwards; empty when it has none
};

class OperatorQueries {
 public:
  explicit OperatorQueries(Database& db) : db_(db) {}

  // The newest `limit` Stripe events received, oldest first; each filter
  // applies when set.
  DbResult<nlohmann::json> Events(const std::optional<std::string>& session,
                                  const std::optional<std::string>& since_instant,
                                  const std::optional<long long>& since_seconds, long long limit);

  // Live holds and those that lapsed less than `recent_seconds` ago, the
  // stuck ones first; each filter applies when set.
  DbResult<HoldsListing> Holds(const std::optional<std::string>& painting,
                               const std::optional<std::string>& condition,
                               const std::optional<long long>& older_than_seconds,
                               long long recent_seconds);

  // Exactly one key set. With a painting that is not in the catalogue,
  // everything is empty.
  DbResult<StoryRows> Story(const std::optional<std::string>& painting,
                            const std::optional<std::string>& reservation,
                            const std::optional<std::string>& session);

  // The reservations whose Stripe outcome the database does not know
  // ("paintings" a JSON array).
  DbResult<nlohmann::json> ReconcileCandidates();

  // The reservation with its item fences; nullopt when there is none.
  DbResult<std::optional<FencedReservation>> Fenced(const std::string& reservation_id);

  // Releases `seen`'s reservation in one statement, only if its state and
  // item fences are still those of `seen`, audited with `reason`, `actor`,
  // `forced` (Stripe was not asked) and what Stripe said of the session
  // (nullopt: not asked). Availability listeners hear of it after a release.
  DbResult<FencedReleaseAnswer> ReleaseFenced(const FencedReservation& seen,
                                              const std::string& reason, const std::string& actor,
                                              bool forced,
                                              const std::optional<std::string>& stripe_status);

  // A reservation's state now; nullopt when it no longer exists.
  DbResult<std::optional<std::string>> ReservationState(const std::string& reservation_id);

  // Sets (`sold`) or clears the catalogue's sold flag under the painting's
  // lock row, audited with `reason` and `actor`; availability listeners hear
  // of the painting afterwards.
  DbResult<SoldFlagChange> SetSoldFlag(const std::string& painting, bool sold,
                                       const std::string& reason, const std::string& actor);

  // What the sweep would delete now for holds that ended more than
  // `older_than_seconds` ago.
  DbResult<SweepCounts> SweepPreview(long long older_than_seconds);
  // Deletes one batch of at most `batch` reservations, in its own statement.
  DbResult<SweepCounts> SweepBatch(long long older_than_seconds, int batch);

 private:
  Database& db_;
};

}  // namespace paintlock::locks
