#include "webhooks/charges.h"

#include <regex>

#include "webhooks/json_fields.h"

namespace paintlock::webhooks {

bool IsChargeEventType(const std::string& type) {
  return type == "charge.refunded" || IsDisputeEventType(type);
}

bool IsDisputeEventType(const std::string& type) {
  return type == "charge.dispute.created" || type == "charge.dispute.closed";
}

namespace {

// An id, or the id of an expanded object; empty when absent or null.
std::string IdOf(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) return StringOr(*it, "id");
  return "";
}

bool HasPrefix(const std::string& id, const char* prefix) { return id.rfind(prefix, 0) == 0; }

bool Word(const std::string& text) {
  static const std::regex re("^[a-z_]{1,40}$");
  return std::regex_match(text, re);
}

bool Currency(const std::string& text) {
  static const std::regex re("^[a-z]{3}$");
  return std::regex_match(text, re);
}

bool Amount(const nlohmann::json& j, const char* key, std::int64_t* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer() || it->get<std::int64_t>() < 0) return false;
  *out = it->get<std::int64_t>();
  return true;
}

// The payment intent of an object: a pi_… id, or empty. False when the field
// holds something that is not one.
bool PaymentIntentOf(const nlohmann::json& object, std::string* out) {
  *out = IdOf(object, "payment_intent");
  return out->empty() || (HasPrefix(*out, "pi_") && IsStripeId(*out));
}

}  // namespace

std::optional<locks::ChargeRefundFacts> DecodeCharge(const nlohmann::json& object,
                                                     std::string* error) {
  locks::ChargeRefundFacts f;
  f.charge_id = StringOr(object, "id");
  if (StringOr(object, "object") != "charge" || !IsStripeId(f.charge_id) ||
      !(HasPrefix(f.charge_id, "ch_") || HasPrefix(f.charge_id, "py_"))) {
    *error = "a charge.refunded event must carry a charge with an id (ch_…)";
    return std::nullopt;
  }
  if (!Amount(object, "amount", &f.amount_minor) ||
      !Amount(object, "amount_refunded", &f.refunded_minor)) {
    *error = "the charge has no valid amount or amount_refunded";
    return std::nullopt;
  }
  auto refunded = object.find("refunded");
  if (refunded == object.end() || !refunded->is_boolean()) {
    *error = "the charge has no boolean refunded";
    return std::nullopt;
  }
  f.fully_refunded = refunded->get<bool>();
  f.currency = StringOr(object, "currency");
  if (!Currency(f.currency)) {
    *error = "the charge has no valid currency";
    return std::nullopt;
  }
  if (!PaymentIntentOf(object, &f.payment_intent)) {
    *error = "the charge's payment_intent is not a pi_… id";
    return std::nullopt;
  }
  return f;
}

std::optional<locks::DisputeFacts> DecodeDispute(const nlohmann::json& object, std::string* error) {
  locks::DisputeFacts f;
  f.dispute_id = StringOr(object, "id");
  if (StringOr(object, "object") != "dispute" || !IsStripeId(f.dispute_id)) {
    *error = "a charge.dispute event must carry a dispute with an id (dp_…)";
    return std::nullopt;
  }
  f.charge_id = IdOf(object, "charge");
  if (!f.charge_id.empty() && !IsStripeId(f.charge_id)) {
    *error = "the dispute's charge is not a Stripe id";
    return std::nullopt;
  }
  if (!Amount(object, "amount", &f.amount_minor)) {
    *error = "the dispute has no valid amount";
    return std::nullopt;
  }
  f.currency = StringOr(object, "currency");
  f.reason = StringOr(object, "reason");
  f.status = StringOr(object, "status");
  if (!Currency(f.currency) || !Word(f.reason) || !Word(f.status)) {
    *error = "the dispute has no valid currency, reason or status";
    return std::nullopt;
  }
  if (!PaymentIntentOf(object, &f.payment_intent)) {
    *error = "the dispute's payment_intent is not a pi_… id";
    return std::nullopt;
  }
  return f;
}

}  // namespace paintlock::webhooks
