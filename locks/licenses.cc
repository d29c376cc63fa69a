#include "locks/licenses.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "base/ids.h"
#include "locks/row_json.h"
#include "locks/statements.h"

namespace paintlock::locks {

namespace {

constexpr const char* kKeyPrefix = "plk_";
// Domain separation: the secret may one day derive other things too.
constexpr const char* kDerivationLabel = "paintlock-license:v1:";

}  // namespace

std::string DeriveLicenseKey(const std::string& secret, const std::string& subscription_id) {
  const std::string message = kDerivationLabel + subscription_id;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len);
  return kKeyPrefix + base::Hex(mac, len);
}

std::string LicenseKeyDigest(const std::string& key) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(key.data()), key.size(), digest);
  return base::Hex(digest, sizeof digest);
}

bool LooksLikeLicenseKey(const std::string& key) {
  const std::string prefix = kKeyPrefix;
  if (key.size() != prefix.size() + 64 || key.compare(0, prefix.size(), prefix) != 0) return false;
  for (std::size_t i = prefix.size(); i < key.size(); ++i) {
    const char c = key[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

DbResult<std::optional<LicenseView>> LicenseStore::FindByDigest(const std::string& key_sha256) {
  using Result = std::optional<LicenseView>;
  return db_.Run("license_get", [&](pqxx::connection& c) -> Result {
    pqxx::nontransaction n(c);
    pqxx::result r = Exec(n, "license_get", key_sha256);
    if (r.empty()) return std::nullopt;
    LicenseView v;
    v.subscription_id = r[0]["subscription_id"].as<std::string>();
    v.customer_id = r[0]["customer_id"].as<std::string>();
    v.status = r[0]["status"].as<std::string>();
    v.current_period_end = r[0]["current_period_end"].as<std::string>("");
    v.active = r[0]["active"].as<bool>();
    return v;
  });
}

DbResult<LicenseApplied> LicenseStore::Apply(const SubscriptionEvent& event,
                                             const std::string& key_sha256) {
  const std::optional<std::int64_t> period_end =
      event.current_period_end_unix > 0 ? std::optional<std::int64_t>(event.current_period_end_unix)
                                        : std::nullopt;
  return db_.Run("license_apply", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    pqxx::row row =
        Exec1(n, "license_apply", event.event_id, event.event_type, event.event_created_unix,
              event.subscription_id, event.customer_id, event.status, period_end, key_sha256);
    return LicenseApplied{row["outcome"].as<std::string>(), row["status"].as<std::string>("")};
  });
}

DbResult<nlohmann::json> LicenseStore::List() {
  return db_.Run("license_list", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return RowsJson(Exec(n, "license_list"));
  });
}

LicenseCheck LicenseValidator::Check(const std::string& key) {
  if (!LooksLikeLicenseKey(key)) return LicenseUnknown{};
  const std::string digest = LicenseKeyDigest(key);
  auto verdict = [](const std::optional<LicenseView>& license) -> LicenseCheck {
    if (!license) return LicenseUnknown{};
    if (license->active) return LicenseValid{*license};
    return LicenseInactive{*license};
  };

  const auto now = clock_();
  if (max_age_.count() > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = cache_.find(digest);
    if (it != cache_.end() && now - it->second.fetched_at < max_age_) {
      return verdict(it->second.license);
    }
  }
  // Two threads may both miss and both ask: harmless, and it keeps the mutex
  // away from the database.
  auto found = lookup_(digest);
  if (auto* f = std::get_if<DbFailure>(&found)) return *f;
  auto& license = std::get<std::optional<LicenseView>>(found);
  if (max_age_.count() > 0) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cache_.size() >= capacity_) {
      for (auto it = cache_.begin(); it != cache_.end();) {
        it = now - it->second.fetched_at >= max_age_ ? cache_.erase(it) : std::next(it);
      }
      if (cache_.size() >= capacity_) cache_.clear();
    }
    // Stamped with the time of the question, not of the answer, so an entry
    // is never older than it claims; a slower thread's older answer never
    // replaces a newer one.
    Entry& entry = cache_[digest];
    if (entry.fetched_at <= now) entry = Entry{license, now};
  }
  return verdict(license);
}

}  // namespace paintlock::locks
