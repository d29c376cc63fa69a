// Applies sql/migrations in version order, each in its own transaction,
// recorded in schema_migrations with a checksum.
//
// Safe to run twice (applied migrations are skipped) and from two processes
// at once (a transaction-scoped advisory lock serialises them). A migration
// whose text changed after it was applied is an error: migrations are
// forward-only; write a new one.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace paintlock::locks {

struct MigrationStatus {
  int version = 0;
  std::string name;
  bool applied_now = false;  // false: it was already applied
};

// Returns false and sets *error on failure (nothing of the failing migration
// is kept). `progress` is told about each migration as it is decided.
bool ApplyMigrations(const std::string& database_url, std::vector<MigrationStatus>* statuses,
                     std::string* error,
                     const std::function<void(const MigrationStatus&)>& progress = {});

// The newest migration version the database has applied (0 for none), or -1
// and *error when it cannot be read.
int AppliedSchemaVersion(const std::string& database_url, std::string* error);

// The migrations this binary knows that the database has not applied — gaps
// included (a migration numbered below the newest applied one can land
// later). False and *error when the database cannot be read.
bool PendingMigrations(const std::string& database_url, std::vector<std::string>* pending,
                       std::string* error);

// The newest migration version this binary knows.
int LatestSchemaVersion();

}  // namespace paintlock::locks
