// The credit, rate-limit and lease bodies (gateway/limit_requests.h) and the
// query-string token (ParseWholeNumber). The first byte picks the body.
// Properties: an accepted body has every number inside its documented range
// (the handlers pass them to SQL unchecked) and a holder that passes
// IsValidLeaseHolder; a refusal names a field and fits in a JSON error body.
#include <string>

#include "fuzz/fuzz_support.h"
#include "gateway/limit_requests.h"
#include "locks/credits.h"
#include "locks/leases.h"

using namespace paintlock;
using gateway::FieldError;

namespace {

void CheckRefusal(const FieldError& e) {
  FUZZ_CHECK(!e.message.empty());
  FUZZ_CHECK(fuzz::Describable(e.message) && fuzz::Describable(e.param));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const int which = data[0] % 6;
  const std::string body(fuzz::AsText(data + 1, size - 1));
  switch (which) {
    case 0: {
      auto r = gateway::ParseTakeRequest(body);
      if (auto* e = std::get_if<FieldError>(&r)) return CheckRefusal(*e), 0;
      const auto& take = std::get<gateway::TakeRequest>(r);
      FUZZ_CHECK(take.cost >= 1 && take.cost <= 1000000000);
      break;
    }
    case 1: {
      auto r = gateway::ParseTopUpRequest(body);
      if (auto* e = std::get_if<FieldError>(&r)) return CheckRefusal(*e), 0;
      const auto amount = std::get<gateway::TopUpRequest>(r).amount;
      FUZZ_CHECK(amount >= 1 && amount <= locks::kMaxCreditAmount);
      break;
    }
    case 2: {
      auto r = gateway::ParseHoldRequest(body);
      if (auto* e = std::get_if<FieldError>(&r)) return CheckRefusal(*e), 0;
      const auto& hold = std::get<gateway::HoldRequest>(r);
      FUZZ_CHECK(hold.amount >= 1 && hold.amount <= locks::kMaxCreditAmount);
      FUZZ_CHECK(hold.ttl.count() >= 1 && hold.ttl <= locks::kMaxHoldTtl);
      break;
    }
    case 3:
    case 4: {
      const bool renew = which == 4;
      auto r = gateway::ParseLeaseRequest(body, renew);
      if (auto* e = std::get_if<FieldError>(&r)) return CheckRefusal(*e), 0;
      const auto& lease = std::get<gateway::LeaseRequest>(r);
      FUZZ_CHECK(locks::IsValidLeaseHolder(lease.holder));
      FUZZ_CHECK(lease.ttl.count() >= 1 && lease.ttl <= locks::kMaxLeaseTtl);
      FUZZ_CHECK(renew ? lease.token >= 1 : lease.token == 0);
      break;
    }
    default: {
      const auto token = gateway::ParseWholeNumber(body, 1, INT64_MAX);
      if (token) {
        FUZZ_CHECK(*token >= 1);
        FUZZ_CHECK(std::to_string(*token) == body.substr(body.find_first_not_of('0')));
      }
      break;
    }
  }
  return 0;
}
