// Idempotency keys of the server API (sql/migrations/0015_idempotency_keys.sql).
//
// A key names one request (its fingerprint) and, once answered, the answer.
// Claim() decides in one statement who may act on a key: the first caller
// claims it; a caller with another fingerprint is refused; a caller after the
// answer was recorded gets it to replay; a caller while a live claim stands is
// told to retry. A claim lapses after its lease (on the database clock), so a
// key whose gateway died mid-request can be taken over by a retry.
//
// Record() and Forget() act only while the claim is still the caller's (the
// claim id on the row): a claimant that outlived its lease changes nothing.
//
// Thread-safe: every call runs on its own pooled connection.
#pragma once

#include <chrono>
#include <string>
#include <variant>

#include "locks/database.h"

namespace paintlock::locks {

// Keys are kept at least this long: the sweep never deletes a younger one.
constexpr std::chrono::hours kIdempotencyKeyMinAge{24};
// The largest answer body kept for replay (the column's CHECK).
constexpr std::size_t kMaxIdempotentBodyBytes = 65536;

// What a request with a key is, as the database keeps it.
struct IdempotentRequest {
  std::string key;          // 1..255 printable ASCII characters
  std::string fingerprint;  // 64 lowercase hex characters
  std::string route;        // "POST /v1/…", for operators; at most 300 characters
};

// The answer recorded for a key.
struct IdempotentAnswer {
  int status = 0;
  std::string body;
  std::string location;  // empty: none
};

struct KeyClaimed {
  std::string claim;  // pass to Record() or Forget()
};
struct KeyReplay {
  IdempotentAnswer answer;
};
struct KeyReused {};
struct KeyInProgress {
  int retry_after_seconds = 1;
};
using ClaimOutcome = std::variant<KeyClaimed, KeyReplay, KeyReused, KeyInProgress, DbFailure>;

class IdempotencyStore {
 public:
  explicit IdempotencyStore(Database& db) : db_(db) {}

  // Claims request.key for `lease` (a claim older than that may be taken over
  // by a retry with the same fingerprint). A DbFailure means nothing is known:
  // the caller must not act.
  ClaimOutcome Claim(const IdempotentRequest& request, std::chrono::seconds lease);

  // Records the answer of a claimed key. False when the claim was no longer
  // the caller's (taken over after its lease): nothing was written.
  DbResult<bool> Record(const std::string& key, const std::string& claim,
                        const IdempotentAnswer& answer);

  // Drops a claim whose request changed nothing, so a retry with the key acts.
  DbResult<bool> Forget(const std::string& key, const std::string& claim);

  // Deletes at most `batch` keys created more than `older_than` ago (clamped
  // up to kIdempotencyKeyMinAge); returns how many.
  DbResult<long long> SweepBatch(std::chrono::seconds older_than, int batch);
  // How many keys SweepBatch would delete, in all.
  DbResult<long long> SweepPreview(std::chrono::seconds older_than);

 private:
  Database& db_;
};

}  // namespace paintlock::locks
