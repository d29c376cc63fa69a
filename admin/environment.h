// What paintlockctl connects to, read from the environment like the gateway:
//   DATABASE_URL                            every command but --help
//   STRIPE_SECRET_KEY, STRIPE_API_BASE,     the commands that ask Stripe
//   STRIPE_CA_FILE, STRIPE_TIMEOUT_MS,      (release, reconcile)
//   STRIPE_MAX_RETRIES
//   PAINTLOCK_DELAYED_PAYMENT_HOLD_SECONDS  how long fulfilment holds for a
//                                           delayed payment (as the gateway)
// Everything is opened on first use, so `--help` and usage errors need none
// of it. Each accessor returns nullptr and one line saying what to do when a
// setting is missing or wrong; secrets never appear in it.
//
// Not thread-safe (one per process, used by the command's thread); the
// objects it hands out are thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "base/env.h"
#include "locks/database.h"
#include "stripe/client.h"
#include "webhooks/fulfilment.h"

namespace paintlock::admin {

class AdminEnvironment {
 public:
  explicit AdminEnvironment(base::EnvLookup lookup);
  ~AdminEnvironment();
  AdminEnvironment(const AdminEnvironment&) = delete;
  AdminEnvironment& operator=(const AdminEnvironment&) = delete;

  std::optional<std::string> Lookup(const std::string& name) const { return lookup_(name); }

  // DATABASE_URL, or nullopt and *error.
  std::optional<std::string> DatabaseUrl(std::string* error);

  // A small pool on DATABASE_URL, after checking that the schema has every
  // migration this binary knows (else: "run `paintlockctl migrate`").
  locks::Database* Database(std::string* error);

  // An HTTPS client configured from STRIPE_*; nullptr and *error when
  // STRIPE_SECRET_KEY is unset or a setting is invalid.
  stripe::StripeClient* Stripe(std::string* error);

  // The one fulfilment function, on Database() and Stripe().
  webhooks::Fulfilment* Fulfilment(std::string* error);

 private:
  base::EnvLookup lookup_;
  std::unique_ptr<locks::Database> database_;
  std::unique_ptr<stripe::StripeClient> stripe_;
  std::unique_ptr<webhooks::Fulfilment> fulfilment_;
};

// Reads a whole number from `value` within [lo, hi]; nullopt otherwise.
std::optional<long> ParseBoundedInteger(const std::string& value, long lo, long hi);

}  // namespace paintlock::admin
