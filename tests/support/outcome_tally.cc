#include "tests/support/outcome_tally.h"

namespace paintlock::testing {

namespace {

// Retry-After as whole seconds, or -1 when missing or not a number.
int RetryAfterSeconds(const Reply& r) {
  const std::string retry = r.Header("Retry-After");
  if (retry.empty() || retry.size() > 9 ||
      retry.find_first_not_of("0123456789") != std::string::npos)
    return -1;
  return std::stoi(retry);
}

bool ErrorCode(const Reply& r, int status, const std::string& code) {
  return r.status == status && r.json.is_object() && r.json.value("code", "") == code;
}

}  // namespace

Outcome TakeOutcome(const Reply& r, const std::string& key) {
  const bool key_ok = key.empty() || (r.json.is_object() && r.json.value("key", "") == key);
  if (r.status == 200 && r.json.is_object() && r.json.value("allowed", false) && key_ok)
    return Outcome::kGranted;
  const int retry = RetryAfterSeconds(r);
  if (ErrorCode(r, 429, "rate_limited") && key_ok && retry >= 1 &&
      r.json.value("retry_after_seconds", -1) == retry)
    return Outcome::kRefused;
  return Outcome::kOther;
}

Outcome ConsumeOutcome(const Reply& r) {
  if (r.status == 200 && r.json.is_object() && r.json.value("allowed", false))
    return Outcome::kGranted;
  if (ErrorCode(r, 429, "quota_exceeded") && RetryAfterSeconds(r) >= 1) return Outcome::kRefused;
  return Outcome::kOther;
}

Outcome HoldOutcome(const Reply& r) {
  if (r.status == 201 && r.json.is_object() && r.json.value("hold_id", "") != "" &&
      r.Header("Location") == "/v1/holds/" + r.json.value("hold_id", ""))
    return Outcome::kGranted;
  if (ErrorCode(r, 409, "insufficient_credits")) return Outcome::kRefused;
  return Outcome::kOther;
}

void OutcomeTally::Add(Outcome outcome, const Reply& r) {
  switch (outcome) {
    case Outcome::kGranted:
      ++granted_;
      return;
    case Outcome::kRefused:
      ++refused_;
      return;
    case Outcome::kOther:
      break;
  }
  ++other_;
  std::lock_guard<std::mutex> lock(mu_);
  others_ += std::to_string(r.status) + " " + r.body.substr(0, 300) + "\n";
}

std::string OutcomeTally::others() const {
  std::lock_guard<std::mutex> lock(mu_);
  return others_;
}

}  // namespace paintlock::testing
