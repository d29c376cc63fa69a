// The checkout flow behind the storefront's "buy" button (docs/ARCHITECTURE.md, Flows).
//
//  1. Read the cart's catalogue entries (prices and names come from here,
//     never from the request).
//  2. Reserve every painting or none (locks::ReservationStore): one short
//     statement, no lock held afterwards. A lapsed hold whose Stripe session
//     may still be open is taken over first: the session is expired at Stripe
//     before the painting passes on; if Stripe says it was paid, the painting
//     is sold to that buyer; if Stripe cannot be reached, nobody gets it now.
//  3. Outside any transaction, create the Checkout Session with the
//     reservation id as Idempotency-Key, client_reference_id and metadata.
//  4. Attach the session, checking the reservation still holds everything;
//     if it lost a painting meanwhile, expire the session and report the 409.
//  A caller whose client has left by step 3 (still_wanted false) gets its
//  hold released at once instead of a session nobody will open: BuyerLeft.
//  If Stripe fails, the reservation is released before answering. If the
//  database fails after the hold committed, the answer is what the database
//  says afterwards (started, or released), or that a hold may remain.
//
// When the database is down (PAINTLOCK_ON_DATABASE_DOWN=sell, a snapshot in
// the settings): if reading the cart or reserving it fails with a definite
// kUnavailable (never one that may have committed: that is looked up first,
// and stays a 503 when it cannot be), the checkout is made without a hold:
// priced from the CatalogueSnapshot, refused as usual when the snapshot says
// sold, held or unknown, and refused (503) when the gateway never read the
// catalogue. The session carries its cart in metadata (webhooks/offline_sale.h)
// and is applied as a late payment when the database is back: sold if every
// painting is still free, else refunded once and audited. Each one is logged
// (offline_checkout_created) and counted (OfflineCheckouts()).
//
// Thread-safe; holds no state of its own between calls.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "checkout/catalogue_snapshot.h"
#include "checkout/release.h"
#include "locks/audit.h"
#include "locks/catalogue.h"
#include "locks/reservations.h"
#include "stripe/client.h"
#include "webhooks/fulfilment.h"

namespace paintlock::checkout {

struct CheckoutStarted {
  std::string reservation_id;
  std::string checkout_url;
  std::string held_until;  // empty when offline: nothing is held
  bool offline = false;    // made while the database was down (no hold)
};
struct MixedCurrency {
  std::vector<std::string> currencies;
};
struct StripeFailed {
  bool unavailable = true;  // true: 503 (retry later); false: 502 (Stripe refused)
  std::string stripe_type;
  std::string stripe_message;
};

// The client left while its paintings were being reserved: the hold was
// released (or, if the database would not let go, lapses at its TTL).
struct BuyerLeft {};

using CheckoutOutcome =
    std::variant<CheckoutStarted, locks::Busy, locks::Sold, locks::Withdrawn, locks::Unknown,
                 MixedCurrency, StripeFailed, locks::DbFailure, BuyerLeft>;

struct CheckoutSettings {
  std::string success_url;
  std::string cancel_url;
  std::chrono::seconds session_ttl{35 * 60};
  stripe::CheckoutCollection collection;  // what every session asks the buyer for
  // Non-null: sell from this snapshot when the database is down (see above).
  CatalogueSnapshot* snapshot = nullptr;
};

// Re-types an outcome as a narrower or wider outcome variant. Alternatives the
// target cannot hold are bugs upstream, reported as internal failures.
template <class To, class From>
To Narrow(const From& from) {
  return std::visit(
      [](const auto& o) -> To {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_constructible_v<To, T>) {
          return To(o);
        } else {
          return locks::DbFailure{locks::DbFailureKind::kInternal, "unexpected outcome"};
        }
      },
      from);
}

class Checkout {
 public:
  Checkout(locks::Catalogue& catalogue, locks::ReservationStore& reservations,
           stripe::StripeClient& stripe, webhooks::Fulfilment& fulfilment, locks::AuditLog& audit,
           ReleaseService& release, CheckoutSettings settings)
      : catalogue_(catalogue),
        reservations_(reservations),
        release_(release),
        stripe_(stripe),
        fulfilment_(fulfilment),
        audit_(audit),
        settings_(std::move(settings)) {}

  // `cart` is non-empty, without duplicates, at most 100 valid ids.
  // `line_token`: the buyer's place in a painting's waiting line, if any
  // (locks::ReservationStore::Reserve). `still_wanted` (when given) is asked
  // once the hold is made: false means nobody will read the answer (a
  // checkout has no Idempotency-Key to ask for it again), so the hold is
  // released before a Stripe session is made for it.
  CheckoutOutcome Start(const std::vector<std::string>& cart,
                        const std::optional<std::string>& line_token = std::nullopt,
                        const std::function<bool()>& still_wanted = {});

  // Step 2 alone, for the server-to-server reservations API: reserve every
  // painting or none, taking over lapsed holds as above. Never a
  // TakeOverNeeded; Stripe trouble during a take-over comes back as
  // StripeFailed.
  using ReserveResult = std::variant<locks::Granted, locks::Busy, locks::Sold, locks::Withdrawn,
                                     locks::Unknown, StripeFailed, locks::DbFailure>;
  ReserveResult Reserve(const std::vector<std::string>& cart,
                        const std::optional<std::string>& buyer_ref,
                        const std::optional<std::string>& line_token = std::nullopt) {
    return Reserve(cart, buyer_ref, line_token, nullptr);
  }

  // A hold made for a caller who has gone (`still_wanted()` false) and who
  // cannot ask for it again: released at once (reason client_gone) instead
  // of held for nobody until it lapses. True when the caller had gone; the
  // release (or its failure: the hold then lapses) is logged as `event`.
  // Only before a Stripe session exists, so nothing can have been paid.
  bool LetGoIfLeft(const locks::Granted& granted, const std::function<bool()>& still_wanted,
                   const char* event);

  // Checkouts made while the database was down since this process started.
  std::int64_t OfflineCheckouts() const { return offline_checkouts_.load(); }

 private:
  // As Reserve; *unreachable (when given) is set when the reservation store
  // itself answered a definite kUnavailable (not a take-over's failure, not
  // an outcome that may have committed).
  ReserveResult Reserve(const std::vector<std::string>& cart,
                        const std::optional<std::string>& buyer_ref,
                        const std::optional<std::string>& line_token, bool* unreachable);
  // The session's parameters for `entries`, keyed by `reservation_id`.
  stripe::CreateSessionParams SessionParams(
      const std::string& reservation_id, const std::vector<locks::CatalogueEntry>& entries) const;
  // The database failed with `failure`: a checkout from the snapshot when
  // the settings allow it and the failure is definite, else `failure`.
  CheckoutOutcome StartOffline(const std::vector<std::string>& cart,
                               const locks::DbFailure& failure);
  // Expires a lapsed holder's session at Stripe and applies what Stripe says.
  // nullopt: the painting may pass on now; otherwise the outcome for the buyer.
  std::optional<CheckoutOutcome> TakeOver(const locks::LapsedSession& lapsed);
  // Stripe could not say what became of a lapsed holder's session: nobody
  // gets the painting on this request (fail safe), and the refusal is audited.
  CheckoutOutcome TakeOverRefused(const locks::LapsedSession& lapsed,
                                  const stripe::StripeError& error);
  // Attaching the session failed although the hold committed: confirms the
  // attach by reading the reservation, or releases the hold, or (when
  // neither is possible) says a hold may remain (may_have_committed).
  CheckoutOutcome AfterFailedAttach(const locks::Granted& granted,
                                    const stripe::CheckoutSession& session,
                                    const locks::DbFailure& failure);
  // What stands in the way of a cart right now (after a lost attach).
  CheckoutOutcome WhatIsInTheWay(const std::vector<std::string>& cart);

  locks::Catalogue& catalogue_;
  locks::ReservationStore& reservations_;
  ReleaseService& release_;
  stripe::StripeClient& stripe_;
  webhooks::Fulfilment& fulfilment_;
  locks::AuditLog& audit_;
  const CheckoutSettings settings_;
  std::atomic<std::int64_t> offline_checkouts_{0};
};

}  // namespace paintlock::checkout
