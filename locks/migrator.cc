#include "locks/migrator.h"

#include <pqxx/pqxx>
#include <set>

#include "locks/database.h"
#include "locks/sql_files.h"

namespace paintlock::locks {

namespace {

// Any constant shared by every paintlock process: the key of the advisory lock
// that serialises migrations.
constexpr long long kMigrationLockKey = 0x7061696e746c6f63LL;  // "paintloc"

}  // namespace

int LatestSchemaVersion() {
  auto all = Migrations();
  return all.empty() ? 0 : all.back().version;
}

bool ApplyMigrations(const std::string& database_url, std::vector<MigrationStatus>* statuses,
                     std::string* error,
                     const std::function<void(const MigrationStatus&)>& progress) {
  try {
    pqxx::connection c(database_url);
    {
      pqxx::work w(c);
      w.exec("SELECT pg_advisory_xact_lock(" + std::to_string(kMigrationLockKey) + ")");
      w.exec(
          "CREATE TABLE IF NOT EXISTS schema_migrations ("
          " version integer PRIMARY KEY, name text NOT NULL, checksum text NOT NULL,"
          " applied_at timestamptz NOT NULL DEFAULT now())");
      w.commit();
    }
    for (const Migration& m : Migrations()) {
      pqxx::work w(c);
      w.exec("SELECT pg_advisory_xact_lock(" + std::to_string(kMigrationLockKey) + ")");
      pqxx::result have = w.exec_params(
          "SELECT checksum = md5($2) AS same FROM schema_migrations WHERE version = $1", m.version,
          m.sql);
      MigrationStatus status{m.version, m.name, false};
      if (!have.empty()) {
        if (!have[0][0].as<bool>()) {
          *error = "migration " + m.name +
                   " changed after it was applied; migrations are forward-only: add a new one";
          return false;
        }
      } else {
        w.exec(m.sql);
        w.exec_params(
            "INSERT INTO schema_migrations (version, name, checksum) VALUES ($1, $2, md5($3))",
            m.version, m.name, m.sql);
        status.applied_now = true;
      }
      w.commit();
      if (statuses) statuses->push_back(status);
      if (progress) progress(status);
    }
    return true;
  } catch (const pqxx::broken_connection& e) {
    *error =
        "cannot connect to PostgreSQL (" + RedactConnectionString(database_url) + "): " + e.what();
  } catch (const std::exception& e) {
    *error = std::string("migration failed: ") + e.what();
  }
  return false;
}

int AppliedSchemaVersion(const std::string& database_url, std::string* error) {
  try {
    pqxx::connection c(database_url);
    pqxx::nontransaction n(c);
    pqxx::result exists = n.exec("SELECT to_regclass('schema_migrations') IS NOT NULL");
    if (!exists[0][0].as<bool>()) return 0;
    pqxx::result r = n.exec("SELECT coalesce(max(version), 0) FROM schema_migrations");
    return r[0][0].as<int>();
  } catch (const pqxx::broken_connection& e) {
    *error =
        "cannot connect to PostgreSQL (" + RedactConnectionString(database_url) + "): " + e.what();
  } catch (const std::exception& e) {
    *error = std::string("cannot read the schema version: ") + e.what();
  }
  return -1;
}

}  // namespace paintlock::locks

namespace paintlock::locks {

bool PendingMigrations(const std::string& database_url, std::vector<std::string>* pending,
                       std::string* error) {
  try {
    pqxx::connection c(database_url);
    pqxx::nontransaction n(c);
    std::set<int> applied;
    if (n.exec("SELECT to_regclass('schema_migrations') IS NOT NULL")[0][0].as<bool>()) {
      for (const auto& row : n.exec("SELECT version FROM schema_migrations")) {
        applied.insert(row[0].as<int>());
      }
    }
    for (const Migration& m : Migrations()) {
      if (!applied.count(m.version)) pending->push_back(m.name);
    }
    return true;
  } catch (const pqxx::broken_connection& e) {
    *error =
        "cannot connect to PostgreSQL (" + RedactConnectionString(database_url) + "): " + e.what();
  } catch (const std::exception& e) {
    *error = std::string("cannot read the schema version: ") + e.what();
  }
  return false;
}

}  // namespace paintlock::locks
