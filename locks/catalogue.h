// The catalogue of paintings and what a buyer sees of each one.
//
// State (available / reserved / sold) is computed by the painting_states view
// from the database clock on every read: never stored, never cached.
// Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "locks/database.h"

namespace paintlock::locks {

struct CatalogueEntry {
  std::string id;
  std::string title;
  std::int64_t price_minor = 0;
  std::string currency;  // lowercase ISO 4217
};

struct PaintingView {
  CatalogueEntry entry;
  std::string state;            // available | reserved | sold
  std::string free_at;          // RFC 3339 when reserved, else empty
  int retry_after_seconds = 0;  // when reserved: whole seconds until free_at
};

struct ImportReport {
  int added = 0;
  int updated = 0;
  int unchanged = 0;
  // Price or currency changes refused because the painting is reserved or
  // sold (import without --force); nothing is written when this is non-empty.
  std::vector<std::string> refused;
};

// Checks one entry against the catalogue's rules (the same as the schema's
// CHECKs); an empty string when valid, else what is wrong.
std::string ValidateEntry(const CatalogueEntry& e);

class Catalogue {
 public:
  explicit Catalogue(Database& db) : db_(db) {}

  DbResult<std::vector<PaintingView>> List();
  DbResult<std::optional<PaintingView>> Get(const std::string& id);
  // The catalogue entries of a cart, sorted by id; unknown ids are missing.
  DbResult<std::vector<CatalogueEntry>> ForCart(const std::vector<std::string>& ids);

  // Upserts every entry in one transaction: all or nothing. Entries must be
  // valid (ValidateEntry). With `force`, price changes on reserved or sold
  // paintings are applied too.
  DbResult<ImportReport> Import(const std::vector<CatalogueEntry>& entries, bool force);

 private:
  Database& db_;
};

}  // namespace paintlock::locks
