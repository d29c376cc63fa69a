#include "gateway/idempotency.h"

#include <openssl/evp.h>

#include <cstdlib>
#include <memory>

#include "base/ids.h"
#include "base/log.h"

namespace paintlock::gateway {

namespace {

constexpr const char* kHeader = "Idempotency-Key";

// Enough of a key to follow it through the logs, not enough to reuse it.
std::string LoggableKey(const std::string& key) {
  return key.size() <= 6 ? std::string("(short key)") : key.substr(0, 6) + "…";
}

void DigestPart(EVP_MD_CTX* ctx, const std::string& part) {
  const std::string size = std::to_string(part.size()) + ":";
  EVP_DigestUpdate(ctx, size.data(), size.size());
  EVP_DigestUpdate(ctx, part.data(), part.size());
}

void Replay(httplib::Response& res, const locks::IdempotentAnswer& answer) {
  res.status = answer.status;
  if (!answer.location.empty()) res.set_header("Location", answer.location);
  res.set_header("Idempotent-Replayed", "true");
  res.set_content(answer.body, "application/json");
}

}  // namespace

bool CarriesIdempotencyKey(const httplib::Request& req) { return req.has_header(kHeader); }

std::string IdempotencyKeyProblem(const std::string& key) {
  if (key.empty() || key.size() > 255) {
    return "An Idempotency-Key is 1 to 255 printable ASCII characters.";
  }
  for (char c : key) {
    if (c < ' ' || c > '~') return "An Idempotency-Key is 1 to 255 printable ASCII characters.";
  }
  return "";
}

std::string RequestFingerprint(const httplib::Request& req) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  // Only allocation can fail here, and then nothing in the process works.
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) std::abort();
  DigestPart(ctx.get(), req.method);
  DigestPart(ctx.get(), req.path);
  // httplib keeps parameters in a multimap: sorted by name, so two spellings
  // of one query fingerprint alike.
  DigestPart(ctx.get(), std::to_string(req.params.size()));
  for (const auto& [name, value] : req.params) {
    DigestPart(ctx.get(), name);
    DigestPart(ctx.get(), value);
  }
  DigestPart(ctx.get(), req.body);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &size);
  return base::Hex(digest, size);
}

bool KeepsAnswer(const httplib::Response& res) {
  return res.status < 500 && res.status != 429 && !res.has_header("Retry-After");
}

void IdempotentRequests::Serve(const httplib::Request& req, httplib::Response& res, Surface surface,
                               const std::function<void()>& act) {
  if (!req.has_header(kHeader)) return act();
  const std::string key = req.get_header_value(kHeader);
  if (const std::string problem = IdempotencyKeyProblem(key); !problem.empty()) {
    return WriteError(res, InvalidRequest(problem, kHeader));
  }
  const locks::IdempotentRequest request{key, RequestFingerprint(req),
                                         (req.method + " " + req.path).substr(0, 300)};
  const locks::ClaimOutcome claimed = store_.Claim(request, kClaimLease);
  if (auto* replay = std::get_if<locks::KeyReplay>(&claimed)) {
    base::LogInfo("idempotent_replay",
                  {{"key", LoggableKey(key)}, {"status", replay->answer.status}});
    return Replay(res, replay->answer);
  }
  if (std::holds_alternative<locks::KeyReused>(claimed)) {
    base::LogInfo("idempotency_key_reused", {{"key", LoggableKey(key)}});
    return WriteError(res, IdempotencyKeyReused());
  }
  if (auto* busy = std::get_if<locks::KeyInProgress>(&claimed)) {
    return WriteError(res, IdempotencyKeyInUse(busy->retry_after_seconds));
  }
  if (auto* failure = std::get_if<locks::DbFailure>(&claimed)) {
    return WriteError(res, ErrorFor(*failure, surface));
  }
  const std::string& claim = std::get<locks::KeyClaimed>(claimed).claim;

  act();

  if (!KeepsAnswer(res)) {
    const auto forgotten = store_.Forget(key, claim);
    if (auto* f = std::get_if<locks::DbFailure>(&forgotten)) {
      // The claim stands until its lease lapses; a retry meanwhile gets 409.
      base::LogWarn("idempotency_forget_failed", {{"key", LoggableKey(key)}, {"why", f->detail}});
    }
    return;
  }
  locks::IdempotentAnswer answer{res.status, res.body, res.get_header_value("Location")};
  if (answer.body.size() > locks::kMaxIdempotentBodyBytes) {
    // No route served here answers more than a few hundred bytes; should one,
    // its replay carries the status and Location alone.
    base::LogWarn("idempotent_answer_too_large",
                  {{"key", LoggableKey(key)}, {"bytes", answer.body.size()}});
    answer.body.clear();
  }
  const auto recorded = store_.Record(key, claim, answer);
  if (auto* f = std::get_if<locks::DbFailure>(&recorded)) {
    // The answer stands; a retry after the claim's lease acts again.
    base::LogWarn("idempotency_record_failed", {{"key", LoggableKey(key)}, {"why", f->detail}});
  } else if (!std::get<bool>(recorded)) {
    base::LogWarn("idempotency_claim_lost", {{"key", LoggableKey(key)}});
  }
}

void ServeIdempotently(IdempotentRequests* requests, const httplib::Request& req,
                       httplib::Response& res, Surface surface, const std::function<void()>& act) {
  if (requests == nullptr) return act();
  requests->Serve(req, res, surface, act);
}

}  // namespace paintlock::gateway
