// The metadata of a Checkout Session made while the database was down
// (PAINTLOCK_ON_DATABASE_DOWN=sell, checkout/checkout.h): the database never
// saw its cart, so the session carries it, and whoever learns of the session
// later (webhook, success page, paintlockctl reconcile) reads it back from
// there to apply it as a late payment (locks::SessionStore::ApplyOffline).
//
// Keys, within Stripe's limits (50 keys, 40-character keys, 500-character
// values): reservation_id (the id the gateway chose, as for every session),
// paintlock_offline=1, paintlock_currency, and paintlock_cart_0, _1, … each a
// comma-separated list of "painting:price_minor" of at most 500 characters
// (100 paintings of 64-character ids take 16 keys).
//
// Only the gateway writes these, and Stripe only returns them on an event
// whose signature was checked or on an authenticated API call; the reader
// still bounds and checks every value, as for any input.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "locks/catalogue.h"
#include "locks/sessions.h"

namespace paintlock::webhooks {

constexpr const char* kOfflineMarkerKey = "paintlock_offline";

// Adds the cart of `entries` (valid catalogue entries of one currency, at
// most 100) to `metadata`.
void PutOfflineCart(const std::vector<locks::CatalogueEntry>& entries,
                    std::map<std::string, std::string>* metadata);

// nullopt when `metadata` has no paintlock_offline marker (an ordinary
// session). With the marker: the cart, sorted by painting; or nullopt and
// *error when the cart is not one PutOfflineCart could have written.
std::optional<locks::OfflineCart> OfflineCartOf(const std::map<std::string, std::string>& metadata,
                                                std::string* error);

}  // namespace paintlock::webhooks
