#include "locks/idempotency.h"

#include <algorithm>

#include "base/ids.h"
#include "locks/statements.h"

namespace paintlock::locks {

namespace {

long long ClampedAge(std::chrono::seconds older_than) {
  return std::max<long long>(older_than.count(),
                             std::chrono::seconds(kIdempotencyKeyMinAge).count());
}

}  // namespace

ClaimOutcome IdempotencyStore::Claim(const IdempotentRequest& request, std::chrono::seconds lease) {
  const std::string claim = base::RandomHex(16).value_or(base::NewRequestId());
  return Flatten<
      ClaimOutcome>(db_.Run("idempotency_claim", [&](pqxx::connection& c) -> ClaimOutcome {
    pqxx::nontransaction n(c);
    pqxx::row row = Exec1(n, "idempotency_claim", request.key, request.fingerprint, request.route,
                          claim, static_cast<int>(lease.count()));
    const std::string outcome = row["outcome"].as<std::string>();
    if (outcome == "claimed") return KeyClaimed{claim};
    if (outcome == "replay") {
      return KeyReplay{{row["status"].as<int>(), row["body"].as<std::string>(),
                        row["location"].as<std::string>("")}};
    }
    if (outcome == "reused") return KeyReused{};
    if (outcome == "in_progress") return KeyInProgress{row["retry_after_seconds"].as<int>(1)};
    return DbFailure{DbFailureKind::kInternal, "paintlock_idempotency_claim: outcome " + outcome};
  }));
}

DbResult<bool> IdempotencyStore::Record(const std::string& key, const std::string& claim,
                                        const IdempotentAnswer& answer) {
  return db_.Run("idempotency_record", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return Exec1(n, "idempotency_record", key, claim, answer.status, answer.body,
                 answer.location)["recorded"]
        .as<bool>();
  });
}

DbResult<bool> IdempotencyStore::Forget(const std::string& key, const std::string& claim) {
  return db_.RunIdempotent("idempotency_forget", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return Exec1(n, "idempotency_forget", key, claim)["forgotten"].as<bool>();
  });
}

DbResult<long long> IdempotencyStore::SweepBatch(std::chrono::seconds older_than, int batch) {
  return db_.Run("idempotency_sweep", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return Exec1(n, "idempotency_sweep", ClampedAge(older_than), batch)["deleted"].as<long long>();
  });
}

DbResult<long long> IdempotencyStore::SweepPreview(std::chrono::seconds older_than) {
  return db_.RunIdempotent("idempotency_sweep_preview", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return Exec1(n, "idempotency_sweep_preview", ClampedAge(older_than))["keys"].as<long long>();
  });
}

}  // namespace paintlock::locks
