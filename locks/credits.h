// Reserve-then-commit credit holds (locks/CREDITS.md).
//
// An account has a balance of whole credits. A hold sets some of it aside for
// a while (a row with a TTL); the balance does not move. What an account can
// still hold or spend is
//     available = balance − the amounts of its live holds
// (live: not committed, not released, not yet expired), computed in the query
// on every read, never stored or cached, so a crashed client's hold stops
// counting the instant its TTL passes, sweep or no sweep.
//
// Every operation is one statement calling a plpgsql function of
// sql/migrations/0006 that locks the account row first (SELECT … FOR UPDATE),
// then the hold: two concurrent holds on credit for one decide one after the
// other, and commit and release of one hold cannot both win. Commit moves the
// balance once; repeating it returns the first result and moves nothing.
//
// Thread-safe: every call runs on its own pooled connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "locks/async_pool.h"
#include "locks/database.h"

namespace paintlock::locks {

constexpr std::int64_t kMaxCreditAmount = 1000000000000LL;      // one hold or top-up
constexpr std::int64_t kMaxCreditBalance = 1000000000000000LL;  // far from bigint's end
constexpr std::chrono::seconds kMaxHoldTtl{86400};

// [A-Za-z0-9][A-Za-z0-9_.:-]{0,63}: what the schema allows as an account id.
bool IsValidAccountId(const std::string& id);

struct HoldOpened {
  std::string hold_id;
  std::string expires_at;      // RFC 3339 (ms, UTC)
  std::int64_t available = 0;  // after this hold
};
struct InsufficientCredits {
  std::int64_t available = 0;
  std::int64_t requested = 0;
};
struct AccountNotFound {};
using HoldOutcome = std::variant<HoldOpened, InsufficientCredits, AccountNotFound, DbFailure>;

// A commit's result. A repeated commit returns the stored one, replayed.
struct HoldCommitted {
  std::string hold_id;
  std::string account_id;
  std::int64_t amount = 0;
  bool late = false;  // committed after the hold expired; its credits were still free
  std::string committed_at;
  std::int64_t balance_after = 0;
  bool replayed = false;
};
struct HoldNotFound {};
struct HoldWasReleased {
  std::int64_t amount = 0;
};
// Expired, and its credits are no longer free; nothing moved.
struct HoldLapsed {
  std::int64_t amount = 0;
  std::string expired_at;
  std::int64_t available = 0;
};
using CommitOutcome =
    std::variant<HoldCommitted, HoldNotFound, HoldWasReleased, HoldLapsed, DbFailure>;

struct HoldReleased {
  std::string hold_id;
  std::string account_id;
  std::int64_t amount = 0;
  std::string released_at;
  bool replayed = false;  // it was released before
};
struct HoldWasCommitted {
  std::int64_t amount = 0;
};
using ReleaseHoldOutcome = std::variant<HoldReleased, HoldNotFound, HoldWasCommitted, DbFailure>;

struct TopUpApplied {
  std::string account_id;
  std::int64_t amount = 0;
  std::int64_t balance_after = 0;
  std::string credited_at;
  bool replayed = false;  // the key was used before with this amount: nothing moved now
};
// The Idempotency-Key was used on this account with another amount.
struct IdempotencyKeyReused {
  std::int64_t original_amount = 0;
};
struct BalanceLimitReached {
  std::int64_t balance = 0;
};
using TopUpOutcome =
    std::variant<TopUpApplied, IdempotencyKeyReused, BalanceLimitReached, DbFailure>;

struct CreditAccountView {
  std::string id;
  std::int64_t balance = 0;
  std::int64_t held = 0;  // by live holds, now
  std::int64_t available = 0;
  std::string created_at;
  std::string updated_at;
};

struct CreditHoldView {
  std::string id;
  std::string account_id;
  std::int64_t amount = 0;
  std::string state;  // held | expired | committed | released, as of now
  std::string created_at;
  std::string expires_at;
  std::string closed_at;  // empty while open
  std::optional<bool> late;
  std::optional<std::int64_t> balance_after;
  std::int64_t expires_in_seconds = 0;  // negative once lapsed
};

class CreditStore {
 public:
  explicit CreditStore(Database& db) : db_(db) {}

  // Sets `amount` (1..kMaxCreditAmount) aside on `account_id` for `ttl`
  // (1 s..kMaxHoldTtl) if that much is available.
  HoldOutcome Hold(const std::string& account_id, std::int64_t amount, std::chrono::seconds ttl);
  // The same hold with asynchronous libpq: `statement` is sql/queries/
  // credit_hold.sql's index in `pool`'s statements; `done` gets the outcome on
  // the pool's thread (before HoldAsync returns for an invalid account id).
  // `wanted`: as AsyncPool::Submit's.
  void HoldAsync(AsyncPool& pool, int statement, const std::string& account_id, std::int64_t amount,
                 std::chrono::seconds ttl, std::function<void(HoldOutcome)> done,
                 std::function<bool()> wanted = nullptr);

  // Moves the hold's amount off the balance, once. A hold past its TTL is
  // committed (late) only if its credits are still available now.
  CommitOutcome Commit(const std::string& hold_id);
  // The same commit with asynchronous libpq (credit_commit.sql), as HoldAsync.
  void CommitAsync(AsyncPool& pool, int statement, const std::string& hold_id,
                   std::function<void(CommitOutcome)> done, std::function<bool()> wanted = nullptr);

  // Cancels an open or lapsed hold. Idempotent; a committed hold stays so.
  ReleaseHoldOutcome Release(const std::string& hold_id);

  // Adds `amount` (1..kMaxCreditAmount) to the account, creating it, once per
  // `idempotency_key` (1..255 characters) on that account. `account_id` must
  // pass IsValidAccountId.
  TopUpOutcome TopUp(const std::string& account_id, const std::string& idempotency_key,
                     std::int64_t amount);

  // nullopt for an unknown account.
  DbResult<std::optional<CreditAccountView>> Account(const std::string& account_id);
  // nullopt for an unknown hold.
  DbResult<std::optional<CreditHoldView>> GetHold(const std::string& hold_id);
  // The account's live holds (soonest to lapse first), then, with
  // `include_closed`, its closed ones (newest first); at most 1000.
  DbResult<std::vector<CreditHoldView>> Holds(const std::string& account_id, bool include_closed);

  // Closes lapsed holds in batches of `batch`; returns how many it closed.
  // Hygiene only: no answer of this class depends on it having run.
  DbResult<std::int64_t> Sweep(int batch = 1000);

 private:
  Database& db_;
};

}  // namespace paintlock::locks
