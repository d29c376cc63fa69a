// Stripe subscription events → licences (locks/QUOTAS.md, "Subscriptions").
//
// customer.subscription.created / .updated / .deleted arrive signed on the
// existing webhook route (gateway/server.cc verifies the signature before
// anything here runs). Each is applied once, in one statement
// (sql/migrations/0005: paintlock_apply_subscription): deduplicated by event
// id in stripe_events, and order-safe — a licence shows the subscription
// data of the newest event by its `created` time, and a cancellation is
// final. So events applied twice, or in any order, leave the same licence as
// applied once in order (docs/ARCHITECTURE.md invariant 4).
//
// The licence key is derived here from PAINTLOCK_LICENSE_SECRET and the
// subscription id (locks/licenses.h); only its SHA-256 reaches the database.
// Thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>

#include "locks/database.h"
#include "locks/licenses.h"

namespace paintlock::webhooks {

// customer.subscription.created, .updated or .deleted.
bool IsSubscriptionEventType(const std::string& type);

using SubscriptionEvent = locks::SubscriptionEvent;

// nullopt and *error when the body is not a subscription event paintlock can
// apply (no event id, type or created time; an object that is not a
// subscription, or lacks an id, a customer or a status).
std::optional<SubscriptionEvent> DecodeSubscriptionEvent(const std::string& body,
                                                         std::string* error);
// The same, from an event already parsed (a JSON object).
std::optional<SubscriptionEvent> DecodeSubscriptionObject(const nlohmann::json& event,
                                                          std::string* error);

using SubscriptionApplied = locks::LicenseApplied;

enum class SubscriptionFailure {
  kNotConfigured,        // no PAINTLOCK_LICENSE_SECRET: nothing applied; Stripe retries
  kDatabaseUnavailable,  // nothing applied: retry
  kInternal,
};

using SubscriptionOutcome = std::variant<SubscriptionApplied, SubscriptionFailure>;

class SubscriptionLicenses {
 public:
  // `license_secret` may be empty: every event then fails kNotConfigured.
  SubscriptionLicenses(locks::Database& db, std::string license_secret)
      : db_(db), license_secret_(std::move(license_secret)) {}

  SubscriptionOutcome Apply(const SubscriptionEvent& event);

  bool configured() const { return !license_secret_.empty(); }

 private:
  locks::Database& db_;
  const std::string license_secret_;
};

}  // namespace paintlock::webhooks
