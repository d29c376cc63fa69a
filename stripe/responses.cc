#include "stripe/responses.h"

#include <nlohmann/json.hpp>

#include "stripe/buyer_details.h"

namespace paintlock::stripe {

namespace {

using json = nlohmann::json;

std::string StringField(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

std::int64_t IntField(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || !it->is_number_integer()) return 0;
  return it->get<std::int64_t>();
}

// A reference that Stripe sends as an id, as an expanded object, or as null.
std::string IdField(const json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) return StringField(*it, "id");
  return "";
}

// The JSON object in `body` if it looks like a Stripe object of kind `object`:
// an object with a non-empty string id and, when present, the right `object`.
std::optional<json> ParseObject(const std::string& body, const char* object) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || StringField(j, "id").empty()) return std::nullopt;
  auto kind = j.find("object");
  if (kind != j.end() && kind->is_string() && kind->get<std::string>() != object) {
    return std::nullopt;
  }
  return j;
}

bool DecodeSession(const json& j, CheckoutSession* s);

bool DecodeObject(const std::string& body, CheckoutSession* s) {
  std::optional<json> j = ParseObject(body, "checkout.session");
  return j && DecodeSession(*j, s);
}

bool DecodeSession(const json& object, CheckoutSession* s) {
  const json* j = &object;
  if (!j->is_object() || StringField(*j, "id").empty()) return false;
  if (auto kind = j->find("object"); kind != j->end() && *kind != "checkout.session") return false;
  s->id = StringField(*j, "id");
  s->status = StringField(*j, "status");
  s->payment_status = StringField(*j, "payment_status");
  s->url = StringField(*j, "url");
  s->payment_intent = IdField(*j, "payment_intent");
  s->client_reference_id = StringField(*j, "client_reference_id");
  s->currency = StringField(*j, "currency");
  s->amount_total = IntField(*j, "amount_total");
  s->expires_at_unix = IntField(*j, "expires_at");
  s->created_unix = IntField(*j, "created");
  auto meta = j->find("metadata");
  if (meta != j->end() && meta->is_object()) {
    for (auto it = meta->begin(); it != meta->end(); ++it) {
      if (it.value().is_string()) {
        s->metadata[it.key()] = it.value().get<std::string>();
      } else if (!it.value().is_null()) {
        s->metadata[it.key()] = it.value().dump();
      }
    }
  }
  s->buyer = BuyerDetailsOf(*j);
  return true;
}

bool DecodeObject(const std::string& body, SessionPage* page) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || StringField(j, "object") != "list") return false;
  auto data = j.find("data");
  if (data == j.end() || !data->is_array()) return false;
  for (const json& item : *data) {
    CheckoutSession s;
    if (!DecodeSession(item, &s)) return false;
    page->sessions.push_back(std::move(s));
  }
  auto more = j.find("has_more");
  page->has_more = more != j.end() && more->is_boolean() && more->get<bool>();
  return true;
}

bool DecodeObject(const std::string& body, Refund* r) {
  std::optional<json> j = ParseObject(body, "refund");
  if (!j) return false;
  r->id = StringField(*j, "id");
  r->status = StringField(*j, "status");
  r->payment_intent = IdField(*j, "payment_intent");
  r->amount = IntField(*j, "amount");
  return true;
}

StripeError Unparseable(int status, const char* object) {
  StripeError e;
  e.http_status = status;
  e.type = "api_error";
  e.message = "Stripe answered HTTP " + std::to_string(status) + " but the body is not a " +
              object + " object";
  return e;
}

template <typename T>
std::optional<StripeError> Decode(int status, const std::string& body, T* out, const char* kind) {
  if (DecodeObject(body, out)) return std::nullopt;
  return Unparseable(status, kind);
}

}  // namespace

std::optional<StripeError> DecodeResponse(int status, const std::string& body,
                                          CheckoutSession* out) {
  return Decode(status, body, out, "checkout.session");
}

std::optional<StripeError> DecodeResponse(int status, const std::string& body, Refund* out) {
  return Decode(status, body, out, "refund");
}

std::optional<StripeError> DecodeResponse(int status, const std::string& body, SessionPage* out) {
  return Decode(status, body, out, "list of checkout.session");
}

StripeError ErrorFromBody(int status, const std::string& body) {
  StripeError e;
  e.http_status = status;
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  auto detail = j.is_object() ? j.find("error") : j.end();
  if (j.is_object() && detail != j.end() && detail->is_object()) {
    e.type = StringField(*detail, "type");
    e.code = StringField(*detail, "code");
    e.message = StringField(*detail, "message");
    e.param = StringField(*detail, "param");
  }
  if (e.type.empty()) e.type = "api_error";
  if (e.message.empty()) {
    e.message = "Stripe answered HTTP " + std::to_string(status) + " without a Stripe error body";
  }
  return e;
}

}  // namespace paintlock::stripe
