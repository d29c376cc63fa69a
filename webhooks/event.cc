#include "webhooks/event.h"

#include <nlohmann/json.hpp>

#include "stripe/buyer_details.h"
#include "webhooks/charges.h"
#include "webhooks/json_fields.h"

namespace paintlock::webhooks {

bool IsHandledType(const std::string& type) {
  return type == "checkout.session.completed" || type == "checkout.session.expired" ||
         type == "checkout.session.async_payment_succeeded" ||
         type == "checkout.session.async_payment_failed";
}

namespace {

// A session's metadata as Stripe bounds it (50 keys of at most 40
// characters, string values of at most 500); anything beyond is left out.
std::map<std::string, std::string> MetadataOf(const nlohmann::json& md) {
  std::map<std::string, std::string> out;
  for (auto it = md.begin(); it != md.end() && out.size() < 50; ++it) {
    if (it.key().size() <= 40 && it->is_string() && it->get_ref<const std::string&>().size() <= 500)
      out[it.key()] = it->get<std::string>();
  }
  return out;
}

}  // namespace

std::optional<WebhookEvent> DecodeEvent(const std::string& body, std::string* error) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *error = "the body is not a JSON object";
    return std::nullopt;
  }
  WebhookEvent e;
  e.id = StringOr(j, "id");
  e.type = StringOr(j, "type");
  if (e.id.empty() || e.type.empty()) {
    *error = "the event has no id or type";
    return std::nullopt;
  }
  if (IsSubscriptionEventType(e.type)) {
    e.subscription = DecodeSubscriptionObject(j, error);
    if (!e.subscription) return std::nullopt;
  }
  if (auto it = j.find("created"); it != j.end() && it->is_number_integer())
    e.created = it->get<std::int64_t>();
  const nlohmann::json* object = nullptr;
  if (auto d = j.find("data"); d != j.end() && d->is_object()) {
    if (auto o = d->find("object"); o != d->end() && o->is_object()) object = &*o;
  }
  if (object != nullptr && StringOr(*object, "object") == "checkout.session") {
    e.is_checkout_session = true;
    e.session.session_id = StringOr(*object, "id");
    e.session.status = StringOr(*object, "status");
    e.session.payment_status = StringOr(*object, "payment_status");
    if (auto pi = object->find("payment_intent"); pi != object->end()) {
      if (pi->is_string()) e.session.payment_intent = pi->get<std::string>();
      if (pi->is_object()) e.session.payment_intent = StringOr(*pi, "id");
    }
    if (auto md = object->find("metadata"); md != object->end() && md->is_object()) {
      e.session.reservation_id = StringOr(*md, "reservation_id");
      e.session.offline = OfflineCartFrom(e.session.session_id, MetadataOf(*md));
    }
    if (e.session.reservation_id.empty())
      e.session.reservation_id = StringOr(*object, "client_reference_id");
    // The event's object is the whole session, buyer details included, so no
    // second call to Stripe is needed to keep them.
    if (e.session.status == "complete")
      e.session.contact = ContactOf(stripe::BuyerDetailsOf(*object));
  }
  if (IsChargeEventType(e.type)) {
    if (object == nullptr) {
      *error = "a " + e.type + " event must carry an object";
      return std::nullopt;
    }
    if (IsDisputeEventType(e.type)) {
      e.dispute = DecodeDispute(*object, error);
      if (!e.dispute) return std::nullopt;
    } else {
      e.refund = DecodeCharge(*object, error);
      if (!e.refund) return std::nullopt;
    }
  }
  if (IsHandledType(e.type) && (!e.is_checkout_session || e.session.session_id.empty())) {
    *error = "a " + e.type + " event must carry a checkout.session with an id";
    return std::nullopt;
  }
  return e;
}

}  // namespace paintlock::webhooks
