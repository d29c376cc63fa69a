// Licences: what a paid subscription gives its customer (locks/QUOTAS.md).
//
// A licence key is derived, never stored: key = "plk_" + hex(HMAC-SHA256(
// PAINTLOCK_LICENSE_SECRET, "paintlock-license:v1:" + subscription id)). The
// database keeps only its SHA-256, so a leaked database yields no key, while
// the seller can always show a customer's key again (`paintlockctl licenses
// --keys`) and every gateway that applies the subscription's webhook arrives
// at the same key. The catch, chosen knowingly: one key per subscription for
// its whole life; a leaked key is revoked by cancelling the subscription.
//
// Validation may be served from an in-process cache for at most max_age
// (PAINTLOCK_LICENSE_CACHE_SECONDS, default 45): a cancellation takes up to
// that long to reach every gateway. That staleness is the price of keeping
// the database out of a licence holder's every request; 0 turns it off.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "locks/database.h"

namespace paintlock::locks {

// The key of a subscription under `secret` (non-empty). Pure: thread-safe.
std::string DeriveLicenseKey(const std::string& secret, const std::string& subscription_id);

// Lowercase hex SHA-256 of a key: what the database stores and looks up.
std::string LicenseKeyDigest(const std::string& key);

// True for the shape of a derived key ("plk_" and 64 lowercase hex digits).
// Anything else is refused without asking the database.
bool LooksLikeLicenseKey(const std::string& key);

struct LicenseView {
  std::string subscription_id;
  std::string customer_id;
  std::string status;              // Stripe's subscription status
  std::string current_period_end;  // RFC 3339, UTC; empty when unknown
  bool active = false;             // lifts quotas (paintlock_license_active)
};

// What a key is worth right now.
struct LicenseValid {
  LicenseView license;
};
struct LicenseInactive {  // a real licence whose subscription no longer pays
  LicenseView license;
};
struct LicenseUnknown {};  // no licence has this key: forged, mistyped, or not yet created
using LicenseCheck = std::variant<LicenseValid, LicenseInactive, LicenseUnknown, DbFailure>;

// A Stripe customer.subscription event, as it changes a licence.
struct SubscriptionEvent {
  std::string event_id;                 // evt_…
  std::string event_type;               // customer.subscription.…
  std::int64_t event_created_unix = 0;  // orders the events of one subscription
  std::string subscription_id;          // sub_…
  std::string customer_id;              // cus_… (or the id of an expanded customer object)
  std::string status;                   // active, trialing, past_due, canceled, …
  // Unix seconds; 0 when absent. Read from the subscription, or — API
  // versions from 2025-03-31 on moved it — the latest of its items'.
  std::int64_t current_period_end_unix = 0;
};

struct LicenseApplied {
  std::string outcome;  // created, updated, stale, duplicate
  std::string status;   // the licence's status afterwards
};

// Thread-safe: every call runs on its own pooled connection.
class LicenseStore {
 public:
  explicit LicenseStore(Database& db) : db_(db) {}

  // The licence whose key has this digest; nullopt when none has.
  DbResult<std::optional<LicenseView>> FindByDigest(const std::string& key_sha256);

  // Applies `event` to its subscription's licence, whose key has the digest
  // `key_sha256`, once per event id; an event older than the last one applied
  // changes nothing (sql/queries/license_apply.sql).
  DbResult<LicenseApplied> Apply(const SubscriptionEvent& event, const std::string& key_sha256);

  // Every licence, newest first, as JSON rows keyed by column name (those of
  // sql/queries/license_list.sql; key_sha256 included), for the operator.
  DbResult<nlohmann::json> List();

 private:
  Database& db_;
};

// Answers "is this key valid?" from a cache of database answers no older
// than max_age. Unknown keys are cached too, so a flood of forged keys costs
// the database one lookup per key per max_age; the cache holds at most
// `capacity` keys (by digest, never the key itself) and starts over when full.
// Database failures are not cached. Thread-safe (one mutex, never held while
// the database is asked).
class LicenseValidator {
 public:
  using Lookup = std::function<DbResult<std::optional<LicenseView>>(const std::string& key_sha256)>;
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  LicenseValidator(
      Lookup lookup, std::chrono::seconds max_age,
      Clock clock = [] { return std::chrono::steady_clock::now(); }, std::size_t capacity = 100000)
      : lookup_(std::move(lookup)),
        max_age_(max_age),
        clock_(std::move(clock)),
        capacity_(capacity) {}

  LicenseCheck Check(const std::string& key);

  std::chrono::seconds max_age() const { return max_age_; }

 private:
  struct Entry {
    std::optional<LicenseView> license;
    std::chrono::steady_clock::time_point fetched_at;
  };

  const Lookup lookup_;
  const std::chrono::seconds max_age_;
  const Clock clock_;
  const std::size_t capacity_;

  std::mutex mu_;
  std::unordered_map<std::string, Entry> cache_;  // guarded by mu_; digest → answer
};

}  // namespace paintlock::locks
