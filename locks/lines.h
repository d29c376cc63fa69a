// The waiting line of a painting (sql/migrations/0009_waiting_line.sql).
//
// A buyer who finds a painting held joins its line and gets a line token, a
// random secret of which only the SHA-256 is stored. When the hold ends
// without a sale, the painting passes down the line one claim window at a
// time: during an entry's window only a reservation carrying its token is
// granted (locks::ReservationStore::Reserve). Who may claim is computed from
// the rows and the database clock in every statement, so no job needs to
// run for a turn to pass; the statements that write settle what the clock
// already decided. A sale closes the line.
//
// Outcomes are types; the HTTP layer maps them in gateway/http_errors.cc.
// Thread-safe: every call runs on its own pooled connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "locks/database.h"
#include "locks/reservations.h"

namespace paintlock::locks {

struct LineSettings {
  int max_length = 100;                    // entries waiting per painting
  int per_visitor = 1;                     // entries one visitor may have waiting per painting
  std::chrono::seconds claim_window{120};  // how long each turn lasts
};

// "plt_" and 64 lowercase hex digits (32 random bytes).
bool LooksLikeLineToken(const std::string& token);
// The SHA-256 of a token, as 64 lowercase hex digits: what the database keeps.
std::string LineTokenDigest(const std::string& token);

// Where an entry stands now. `state` is one of waiting | your_turn |
// claimed | passed | left | closed; position, window and the millisecond
// counts (by the database clock) are set while waiting or your_turn.
struct LineEntryView {
  std::string painting;
  std::string state;
  std::optional<std::int64_t> position;  // 1: the current (or next) claimant
  std::int64_t line_length = 0;          // entries still waiting
  std::string window_from;               // RFC 3339, UTC
  std::string window_until;
  std::optional<std::int64_t> starts_in_ms;
  std::optional<std::int64_t> ends_in_ms;
  std::string reservation_id;  // claimed: the reservation the turn was used for
};

struct LineJoined {
  std::string token;  // the secret: returned once, never stored or logged
  LineEntryView entry;
};
// Nobody holds the painting and no line runs: buy it now.
struct PaintingFree {
  std::string painting;
};
struct AlreadyInLine {
  std::string painting;
  int per_visitor = 1;
};
struct LineFull {
  std::string painting;
  int max_length = 0;
};
// No entry of this painting has the token (forged, mistyped, or another
// painting's); or (not_waiting) the entry is no longer waiting: `state` says
// what became of it.
struct LineTokenInvalid {
  std::string painting;
  std::string state;  // empty: unknown token
};
struct LineLeft {
  std::string painting;
  std::string state_before;  // waiting | your_turn
};
struct LineCleared {
  std::string painting;
  std::int64_t closed = 0;
};
struct LineListEntry {
  std::int64_t id = 0;
  std::string state;
  std::optional<std::int64_t> position;
  std::string visitor;  // a prefix of the visitor hash
  std::string joined_at;
  std::string window_from;
  std::string window_until;
  std::string ended_reason;
  std::string reservation_id;
};

using LineJoinOutcome =
    std::variant<LineJoined, PaintingFree, AlreadyInLine, LineFull, Sold, Unknown, DbFailure>;
using LineEntryOutcome = std::variant<LineEntryView, LineTokenInvalid, DbFailure>;
using LineLeaveOutcome = std::variant<LineLeft, LineTokenInvalid, DbFailure>;

class LineStore {
 public:
  LineStore(Database& db, LineSettings settings) : db_(db), settings_(settings) {}

  // Joins `painting`'s line for `visitor` (the gateway's visitor hash) with
  // a fresh token. Writes nothing unless LineJoined. A DbFailure with
  // may_have_committed means the entry may exist, but its token is lost to
  // the caller, who must join again (it then counts against per_visitor
  // until its window passes).
  LineJoinOutcome Join(const std::string& painting, const std::string& visitor);

  // The entry of `painting` whose token is `token` (any string: one that is
  // not a token is simply unknown).
  LineEntryOutcome Entry(const std::string& painting, const std::string& token);

  // Leaves the line; if it was the entry's turn, the next one's starts now.
  LineLeaveOutcome Leave(const std::string& painting, const std::string& token);

  // How many wait in `painting`'s line now; nullopt for an unknown painting.
  DbResult<std::optional<std::int64_t>> Length(const std::string& painting);

  // Operator tools. Clear closes every waiting entry, audited with `reason`
  // and `actor`; nullopt for an unknown painting.
  DbResult<std::optional<LineCleared>> Clear(const std::string& painting, const std::string& reason,
                                             const std::string& actor);
  DbResult<std::vector<LineListEntry>> List(const std::string& painting);

  const LineSettings& settings() const { return settings_; }

 private:
  Database& db_;
  const LineSettings settings_;
};

}  // namespace paintlock::locks
