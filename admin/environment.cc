#include "admin/environment.h"

#include <cstdlib>

#include "locks/migrator.h"
#include "stripe/https_client.h"

namespace paintlock::admin {

std::optional<long> ParseBoundedInteger(const std::string& value, long lo, long hi) {
  if (value.empty()) return std::nullopt;
  char* end = nullptr;
  const long n = std::strtol(value.c_str(), &end, 10);
  if (*end != '\0' || n < lo || n > hi) return std::nullopt;
  return n;
}

AdminEnvironment::AdminEnvironment(base::EnvLookup lookup) : lookup_(std::move(lookup)) {}

AdminEnvironment::~AdminEnvironment() = default;

std::optional<std::string> AdminEnvironment::DatabaseUrl(std::string* error) {
  auto url = lookup_("DATABASE_URL");
  if (!url) *error = "DATABASE_URL is not set: export the database's libpq URI (postgresql://…)";
  return url;
}

locks::Database* AdminEnvironment::Database(std::string* error) {
  if (database_) return database_.get();
  auto url = DatabaseUrl(error);
  if (!url) return nullptr;
  // The named statements need the newest schema; say so before preparing them fails.
  const int applied = locks::AppliedSchemaVersion(*url, error);
  if (applied < 0) return nullptr;
  if (applied < locks::LatestSchemaVersion()) {
    *error = "the database schema is at version " + std::to_string(applied) +
             " but paintlockctl needs " + std::to_string(locks::LatestSchemaVersion()) +
             ": run `paintlockctl migrate` with the same DATABASE_URL";
    return nullptr;
  }
  locks::DatabaseOptions options;
  options.url = *url;
  options.pool_size = 2;
  options.application_name = "paintlockctl";
  // An operator can wait a little longer than a buyer for a hot painting, and
  // a sweep batch may take a while on a big table.
  options.lock_timeout = std::chrono::seconds(5);
  options.statement_timeout = std::chrono::seconds(120);
  options.idle_in_transaction_timeout = std::chrono::seconds(60);
  if (auto mode = lookup_("PAINTLOCK_DB_STATEMENTS")) {
    if (!locks::ParseStatementMode(*mode, &options.statements)) {
      *error = "PAINTLOCK_DB_STATEMENTS must be named or unnamed, got \"" + *mode + "\"";
      return nullptr;
    }
  }
  database_ = locks::Database::Open(options, error);
  return database_.get();
}

stripe::StripeClient* AdminEnvironment::Stripe(std::string* error) {
  if (stripe_) return stripe_.get();
  stripe::HttpsClientOptions options;
  std::vector<std::string> problems;
  base::SettingsReader settings(lookup_, &problems);
  stripe::ReadHttpsClientOptions(settings, &options);
  if (!problems.empty()) {
    *error = problems.front();
    for (size_t i = 1; i < problems.size(); ++i) *error += "; " + problems[i];
    return nullptr;
  }
  std::string why;
  auto client = stripe::HttpsStripeClient::Create(options, &why);
  if (!client) {
    *error = "Stripe settings: " + why;
    return nullptr;
  }
  stripe_ = std::move(client);
  return stripe_.get();
}

webhooks::Fulfilment* AdminEnvironment::Fulfilment(std::string* error) {
  if (fulfilment_) return fulfilment_.get();
  std::chrono::seconds delayed_hold(14 * 24 * 3600);  // the gateway's default
  if (auto v = lookup_("PAINTLOCK_DELAYED_PAYMENT_HOLD_SECONDS")) {
    auto n = ParseBoundedInteger(*v, 60, 60L * 86400);
    if (!n) {
      *error =
          "PAINTLOCK_DELAYED_PAYMENT_HOLD_SECONDS must be a whole number of seconds from 60 "
          "to 5184000";
      return nullptr;
    }
    delayed_hold = std::chrono::seconds(*n);
  }
  locks::Database* db = Database(error);
  if (!db) return nullptr;
  stripe::StripeClient* client = Stripe(error);
  if (!client) return nullptr;
  fulfilment_ = std::make_unique<webhooks::Fulfilment>(*db, *client, delayed_hold);
  return fulfilment_.get();
}

}  // namespace paintlock::admin
