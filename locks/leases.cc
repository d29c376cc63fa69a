#include "locks/leases.h"

#include "base/text.h"
#include "locks/statements.h"

namespace paintlock::locks {

bool IsValidLeaseName(const std::string& name) { return base::IsToken(name, 1, 128, "", "_.:-"); }

bool IsValidLeaseHolder(const std::string& holder) {
  if (holder.empty() || holder.size() > 200) return false;
  for (char c : holder) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

namespace {

LeaseLost LostOf(const std::string& name, const pqxx::row& row) {
  LeaseLost lost{name, std::nullopt, ""};
  if (row["live"].as<bool>() && !row["holder"].is_null()) {
    lost.holder = row["holder"].as<std::string>();
    lost.expires_at = row["expires_at"].as<std::string>();
  }
  return lost;
}

LeaseView LeaseViewOf(const pqxx::row& row) {
  LeaseView v;
  v.name = row["name"].as<std::string>();
  if (!row["holder"].is_null()) v.holder = row["holder"].as<std::string>();
  v.token = row["token"].as<std::int64_t>();
  v.expires_at = row["expires_at"].as<std::string>("");
  v.live = row["live"].as<bool>();
  v.seconds_left = v.live ? row["seconds_left"].as<int>(0) : 0;
  v.granted_at = row["granted_at"].as<std::string>();
  if (!row["expires_in_seconds"].is_null()) {
    v.expires_in_seconds = row["expires_in_seconds"].as<std::int64_t>();
  }
  return v;
}

}  // namespace

AcquireOutcome LeaseStore::Acquire(const std::string& name, const std::string& holder,
                                   std::chrono::seconds ttl) {
  // A refusal reads the lease in a second statement; if it was released or
  // lapsed in between, that read names no live holder (nullopt here), so the
  // grant is decided again.
  using Attempt = std::optional<AcquireOutcome>;
  for (int attempt = 1;; ++attempt) {
    auto acquired = db_.Run("lease_acquire", [&](pqxx::connection& c) -> Attempt {
      pqxx::nontransaction n(c);
      pqxx::row row = Exec1(n, "lease_acquire", name, holder, static_cast<int>(ttl.count()));
      if (row["granted"].as<bool>()) {
        return LeaseGranted{name, holder, row["token"].as<std::int64_t>(),
                            row["expires_at"].as<std::string>()};
      }
      if (!row["live"].as<bool>() || row["holder"].is_null()) return std::nullopt;
      return LeaseHeld{name, row["holder"].as<std::string>(), row["expires_at"].as<std::string>(),
                       row["seconds_left"].as<int>(1)};
    });
    if (auto* failure = std::get_if<DbFailure>(&acquired)) return *failure;
    if (auto& decided = std::get<Attempt>(acquired)) return *decided;
    if (attempt == 3)
      return DbFailure{DbFailureKind::kContended, "lease changes too fast to grant"};
  }
}

RenewOutcome LeaseStore::Renew(const std::string& name, const std::string& holder,
                               std::int64_t token, std::chrono::seconds ttl) {
  return Flatten<RenewOutcome>(db_.Run("lease_renew", [&](pqxx::connection& c) -> RenewOutcome {
    pqxx::nontransaction n(c);
    pqxx::row row = Exec1(n, "lease_renew", name, holder, token, static_cast<int>(ttl.count()));
    const std::string outcome = row["outcome"].as<std::string>();
    if (outcome == "renewed") {
      return LeaseGranted{name, holder, row["token"].as<std::int64_t>(),
                          row["expires_at"].as<std::string>()};
    }
    if (outcome == "lost") return LostOf(name, row);
    if (outcome == "unknown") return LeaseNotFound{name};
    return DbFailure{DbFailureKind::kInternal, "paintlock_lease_renew: outcome " + outcome};
  }));
}

LeaseReleaseOutcome LeaseStore::Release(const std::string& name, const std::string& holder,
                                        std::int64_t token) {
  return Flatten<LeaseReleaseOutcome>(
      db_.Run("lease_release", [&](pqxx::connection& c) -> LeaseReleaseOutcome {
        pqxx::nontransaction n(c);
        pqxx::row row = Exec1(n, "lease_release", name, holder, token);
        const std::string outcome = row["outcome"].as<std::string>();
        if (outcome == "released" || outcome == "already_released") {
          return LeaseReleased{name, token, outcome == "already_released"};
        }
        if (outcome == "not_holder") return LostOf(name, row);
        if (outcome == "unknown") return LeaseNotFound{name};
        return DbFailure{DbFailureKind::kInternal, "paintlock_lease_release: outcome " + outcome};
      }));
}

DbResult<std::optional<LeaseView>> LeaseStore::Get(const std::string& name) {
  using Result = std::optional<LeaseView>;
  if (!IsValidLeaseName(name)) return Result{};
  return db_.Run("lease_get", [&](pqxx::connection& c) -> Result {
    pqxx::nontransaction n(c);
    pqxx::result r = Exec(n, "lease_get", name);
    if (r.empty()) return std::nullopt;
    return LeaseViewOf(r[0]);
  });
}

DbResult<std::vector<LeaseView>> LeaseStore::List() {
  return db_.Run("lease_list", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    std::vector<LeaseView> out;
    for (const auto& row : Exec(n, "lease_list")) out.push_back(LeaseViewOf(row));
    return out;
  });
}

}  // namespace paintlock::locks
