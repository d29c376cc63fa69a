// The Stripe API as paintlock uses it: Checkout Sessions and refunds.
//
// StripeClient is the seam between the gateway and Stripe. The production
// implementation is HttpsStripeClient (stripe/https_client.h); tests run it
// against the fake Stripe server in fixtures/. Implementations never throw for
// anything Stripe or the network did: every call returns either the object or
// a StripeError carrying what Stripe said. Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/text.h"
#include "stripe/checkout_collection.h"

namespace paintlock::stripe {

struct LineItem {
  std::string name;
  std::int64_t unit_amount_minor = 0;
  std::string currency;          // ISO 4217, lowercase
  std::string image_url = {};    // sent as product_data[images][0]; empty: none
  std::string description = {};  // sent as product_data[description]; empty: none
};

struct CreateSessionParams {
  // Sent as Idempotency-Key and reused on every retry, so a retry can never
  // create a second session. paintlock uses the reservation id.
  std::string idempotency_key;
  std::vector<LineItem> line_items;
  std::string success_url;  // may contain the literal {CHECKOUT_SESSION_ID}
  std::string cancel_url;
  std::int64_t expires_at_unix = 0;  // 30 min .. 24 h after creation
  std::string client_reference_id;
  std::map<std::string, std::string> metadata;
  // What the buyer is asked for besides paying (stripe/checkout_collection.h).
  CheckoutCollection collection;
};

// A postal address as Stripe gives it; empty fields: not given.
struct PostalAddress {
  std::string line1, line2, city, postal_code, state;
  std::string country;  // ISO 3166-1 alpha-2
};

// Who paid and where the painting goes, as a completed session says
// (customer_details, and shipping_details or, in API versions from
// 2025-03-31, collected_information.shipping_details). Personal data:
// never logged. Empty until the buyer completes the session.
struct BuyerDetails {
  std::string name, email, phone;  // customer_details
  std::string shipping_name;       // the addressee; empty: no shipping address collected
  PostalAddress shipping_address;
  bool empty() const {
    return name.empty() && email.empty() && phone.empty() && shipping_name.empty() &&
           shipping_address.line1.empty() && shipping_address.country.empty();
  }
};

// A Checkout Session id as paintlock accepts one from outside (a success-page
// query, an operator's command line): cs_ and 1-250 letters, digits or '_'
// (the sale_contacts CHECK in sql/migrations/0016 says the same).
inline bool IsCheckoutSessionId(std::string_view id) {
  return id.size() > 3 && id.substr(0, 3) == "cs_" && base::IsToken(id.substr(3), 1, 250, "_", "_");
}

struct CheckoutSession {
  std::string id;              // cs_...
  std::string status;          // open | complete | expired
  std::string payment_status;  // paid | unpaid | no_payment_required
  std::string url;             // only while open
  std::string payment_intent;  // empty until the buyer confirms
  std::string client_reference_id;
  std::string currency;
  std::int64_t amount_total = 0;
  std::int64_t expires_at_unix = 0;
  std::int64_t created_unix = 0;
  std::map<std::string, std::string> metadata;
  BuyerDetails buyer;
};

// GET /v1/checkout/sessions: sessions created at or after created_gte,
// newest first, `limit` (1..100) per page; the next page starts after the
// last id of this one.
struct ListSessionsParams {
  std::int64_t created_gte = 0;  // unix seconds
  int limit = 100;
  std::string starting_after;  // empty: the first page
};
struct SessionPage {
  std::vector<CheckoutSession> sessions;
  bool has_more = false;
};

struct Refund {
  std::string id;  // re_...
  std::string status;
  std::string payment_intent;
  std::int64_t amount = 0;
};

// What went wrong talking to Stripe. `http_status` is 0 when no HTTP answer
// arrived (connection refused, TLS failure, timeout).
struct StripeError {
  int http_status = 0;
  std::string type;  // api_error, card_error, idempotency_error, invalid_request_error,
                     // or "connection_error" when there was no answer
  std::string code;
  std::string message;
  std::string param;

  // True when the failure says nothing about the request itself (no answer,
  // 409, 429, 5xx): the caller may try again later and should tell its own
  // caller "unavailable" rather than "refused".
  bool Unavailable() const {
    return http_status == 0 || http_status == 409 || http_status == 429 || http_status >= 500;
  }
};

template <class T>
using StripeResult = std::variant<T, StripeError>;

template <class T>
const StripeError* ErrorOf(const StripeResult<T>& r) {
  return std::get_if<StripeError>(&r);
}

class StripeClient {
 public:
  virtual ~StripeClient() = default;

  // POST /v1/checkout/sessions (mode=payment, one quantity-1 line per item).
  virtual StripeResult<CheckoutSession> CreateCheckoutSession(const CreateSessionParams& p) = 0;
  // GET /v1/checkout/sessions/{id}.
  virtual StripeResult<CheckoutSession> RetrieveCheckoutSession(const std::string& id) = 0;
  // POST /v1/checkout/sessions/{id}/expire. Stripe refuses (400) unless the
  // session is open; callers decide what happened by retrieving the session.
  virtual StripeResult<CheckoutSession> ExpireCheckoutSession(const std::string& id) = 0;
  // POST /v1/refunds payment_intent=... with the given idempotency key.
  virtual StripeResult<Refund> CreateRefund(const std::string& payment_intent,
                                            const std::string& idempotency_key) = 0;
  // GET /v1/checkout/sessions (paintlockctl reconcile --offline-since). A
  // client that cannot list answers 400 invalid_request_error.
  virtual StripeResult<SessionPage> ListCheckoutSessions(const ListSessionsParams& p) {
    (void)p;
    return StripeError{400, "invalid_request_error", "", "this client cannot list sessions", ""};
  }
};

}  // namespace paintlock::stripe
