// What a Checkout Session asks the buyer for, beyond paying: a shipping
// address (in which countries), a phone number, the page's language, and a
// shipping rate. The seller sets these once (gateway/config.h); every session
// carries them (stripe/session_form.h).
//
// The checks below are Stripe's own rules for these parameters, so a bad
// setting stops the gateway at start-up instead of failing every checkout.
// Pure functions: safe from any thread.
#pragma once

#include <string>
#include <vector>

namespace paintlock::stripe {

struct CheckoutCollection {
  // ISO 3166-1 alpha-2 codes, uppercase; empty: no shipping address is asked.
  std::vector<std::string> shipping_countries;
  bool collect_phone = false;
  std::string locale;         // a Stripe Checkout locale ("auto", "de", "pt-BR"); empty: Stripe's
  std::string shipping_rate;  // an existing shipping rate (shr_…); empty: none
};

// True for a two-letter uppercase code Stripe accepts in
// shipping_address_collection[allowed_countries] (it refuses a few
// territories and sanctioned countries).
bool IsShippingCountry(const std::string& code);
// True for a locale Stripe Checkout accepts.
bool IsCheckoutLocale(const std::string& locale);
// True for what a shipping rate id looks like: shr_ and 1..250 letters, digits or '_'.
bool IsShippingRateId(const std::string& id);

}  // namespace paintlock::stripe
