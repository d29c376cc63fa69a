#include "gateway/limit_requests.h"

#include <cstdint>

#include "locks/credits.h"
#include "locks/leases.h"

namespace paintlock::gateway {

using nlohmann::json;

std::variant<TakeRequest, FieldError> ParseTakeRequest(const std::string& body) {
  auto parsed = ParseJsonObject(body, /*empty_ok=*/true);
  if (auto* e = std::get_if<FieldError>(&parsed)) return *e;
  const json& j = std::get<json>(parsed);
  auto cost = WholeNumberField(j, "cost", 1, 1000000000, 1);
  if (auto* e = std::get_if<FieldError>(&cost)) return *e;
  auto bucket = TextField(j, "bucket", std::string());
  if (auto* e = std::get_if<FieldError>(&bucket)) return *e;
  return TakeRequest{std::get<std::int64_t>(cost), std::get<std::string>(bucket)};
}

std::variant<TopUpRequest, FieldError> ParseTopUpRequest(const std::string& body) {
  auto parsed = ParseJsonObject(body, /*empty_ok=*/false);
  if (auto* e = std::get_if<FieldError>(&parsed)) return *e;
  auto amount =
      WholeNumberField(std::get<json>(parsed), "amount", 1, locks::kMaxCreditAmount, std::nullopt);
  if (auto* e = std::get_if<FieldError>(&amount)) return *e;
  return TopUpRequest{std::get<std::int64_t>(amount)};
}

std::variant<HoldRequest, FieldError> ParseHoldRequest(const std::string& body) {
  auto parsed = ParseJsonObject(body, /*empty_ok=*/false);
  if (auto* e = std::get_if<FieldError>(&parsed)) return *e;
  const json& j = std::get<json>(parsed);
  auto amount = WholeNumberField(j, "amount", 1, locks::kMaxCreditAmount, std::nullopt);
  if (auto* e = std::get_if<FieldError>(&amount)) return *e;
  auto ttl = WholeNumberField(j, "ttl_seconds", 1, locks::kMaxHoldTtl.count(), std::nullopt);
  if (auto* e = std::get_if<FieldError>(&ttl)) return *e;
  return HoldRequest{std::get<std::int64_t>(amount),
                     std::chrono::seconds(std::get<std::int64_t>(ttl))};
}

std::variant<LeaseRequest, FieldError> ParseLeaseRequest(const std::string& body, bool with_token) {
  auto parsed = ParseJsonObject(body, /*empty_ok=*/false);
  if (auto* e = std::get_if<FieldError>(&parsed)) return *e;
  const json& j = std::get<json>(parsed);
  auto holder = TextField(j, "holder", std::nullopt);
  if (auto* e = std::get_if<FieldError>(&holder)) return *e;
  if (!locks::IsValidLeaseHolder(std::get<std::string>(holder))) {
    return FieldError{"holder",
                      "\"holder\" is 1 to 200 printable characters without spaces "
                      "(\"worker-3@host-a\")."};
  }
  auto ttl = WholeNumberField(j, "ttl_seconds", 1, locks::kMaxLeaseTtl.count(), std::nullopt);
  if (auto* e = std::get_if<FieldError>(&ttl)) return *e;
  LeaseRequest request{std::get<std::string>(holder),
                       std::chrono::seconds(std::get<std::int64_t>(ttl)), 0};
  if (with_token) {
    auto token = WholeNumberField(j, "token", 1, INT64_MAX, std::nullopt);
    if (auto* e = std::get_if<FieldError>(&token)) return *e;
    request.token = std::get<std::int64_t>(token);
  }
  return request;
}

}  // namespace paintlock::gateway
