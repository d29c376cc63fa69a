#include "webhooks/subscriptions.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>

#include "base/log.h"
#include "locks/licenses.h"
#include "webhooks/json_fields.h"

namespace paintlock::webhooks {

using base::LogInfo;

bool IsSubscriptionEventType(const std::string& type) {
  return type == "customer.subscription.created" || type == "customer.subscription.updated" ||
         type == "customer.subscription.deleted";
}

namespace {

std::int64_t IntegerOr(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return 0;
  return it->get<std::int64_t>();
}

}  // namespace

std::optional<SubscriptionEvent> DecodeSubscriptionEvent(const std::string& body,
                                                         std::string* error) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *error = "the body is not a JSON object";
    return std::nullopt;
  }
  return DecodeSubscriptionObject(j, error);
}

std::optional<SubscriptionEvent> DecodeSubscriptionObject(const nlohmann::json& j,
                                                          std::string* error) {
  SubscriptionEvent e;
  e.event_id = StringOr(j, "id");
  e.event_type = StringOr(j, "type");
  e.event_created_unix = IntegerOr(j, "created");
  if (e.event_id.empty() || e.event_id.size() > 255 || !IsSubscriptionEventType(e.event_type)) {
    *error = "not a customer.subscription event with an id";
    return std::nullopt;
  }
  if (e.event_created_unix <= 0) {
    // Without it the event cannot be ordered against the others.
    *error = "the event has no created time";
    return std::nullopt;
  }
  const nlohmann::json* object = nullptr;
  if (auto d = j.find("data"); d != j.end() && d->is_object()) {
    if (auto o = d->find("object"); o != d->end() && o->is_object()) object = &*o;
  }
  if (object == nullptr || StringOr(*object, "object") != "subscription") {
    *error = "a " + e.event_type + " event must carry a subscription object";
    return std::nullopt;
  }
  e.subscription_id = StringOr(*object, "id");
  if (!IsStripeId(e.subscription_id, "sub_")) {
    *error = "the subscription has no valid id (sub_…)";
    return std::nullopt;
  }
  if (auto c = object->find("customer"); c != object->end()) {
    if (c->is_string()) e.customer_id = c->get<std::string>();
    if (c->is_object()) e.customer_id = StringOr(*c, "id");
  }
  if (!IsStripeId(e.customer_id, "cus_")) {
    *error = "the subscription has no valid customer (cus_…)";
    return std::nullopt;
  }
  e.status = StringOr(*object, "status");
  static const std::regex status_re("^[a-z_]{1,40}$");
  if (!std::regex_match(e.status, status_re)) {
    *error = "the subscription has no valid status";
    return std::nullopt;
  }
  e.current_period_end_unix = IntegerOr(*object, "current_period_end");
  if (e.current_period_end_unix == 0) {
    if (auto items = object->find("items"); items != object->end() && items->is_object()) {
      if (auto data = items->find("data"); data != items->end() && data->is_array()) {
        for (const auto& item : *data) {
          if (item.is_object()) {
            e.current_period_end_unix =
                std::max(e.current_period_end_unix, IntegerOr(item, "current_period_end"));
          }
        }
      }
    }
  }
  return e;
}

SubscriptionOutcome SubscriptionLicenses::Apply(const SubscriptionEvent& event) {
  if (license_secret_.empty()) return SubscriptionFailure::kNotConfigured;
  const std::string digest =
      locks::LicenseKeyDigest(locks::DeriveLicenseKey(license_secret_, event.subscription_id));
  auto applied = locks::LicenseStore(db_).Apply(event, digest);
  if (auto* f = std::get_if<locks::DbFailure>(&applied)) {
    return f->kind == locks::DbFailureKind::kInternal ? SubscriptionFailure::kInternal
                                                      : SubscriptionFailure::kDatabaseUnavailable;
  }
  const auto& a = std::get<SubscriptionApplied>(applied);
  LogInfo("subscription_applied", {{"event_id", event.event_id},
                                   {"event_type", event.event_type},
                                   {"subscription_id", event.subscription_id},
                                   {"outcome", a.outcome},
                                   {"status", a.status}});
  return a;
}

}  // namespace paintlock::webhooks
