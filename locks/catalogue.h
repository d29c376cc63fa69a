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
#include "locks/row_json.h"

namespace paintlock::locks {

struct CatalogueEntry {
  std::string id;
  std::string title;
  std::int64_t price_minor = 0;
  std::string currency;  // lowercase ISO 4217
  // Shown by Stripe Checkout; empty: none. An https URL of at most 2048
  // characters, and at most 1000 characters of text.
  std::string image_url = {};
  std::string description = {};
};

struct PaintingView {
  CatalogueEntry entry;
  std::string state;            // available | reserved | sold | withdrawn
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

// One page of the catalogue in id order (Catalogue::Page).
struct CataloguePage {
  bool cursor_known = true;  // false: starting_after names no painting (`paintings` is empty)
  std::vector<PaintingView> paintings;
  bool has_more = false;  // paintings after the last one returned
};

// What withdrawing a painting from sale, or restoring it, did
// (sql/migrations/0012: paintlock_admin_withdraw, paintlock_admin_restore).
// Withdrawing, when held: who holds it (HeldBy).
struct WithdrawalChange : HeldBy {
  // Withdrawing: withdrawn | already_withdrawn | sold | held | unknown.
  // Restoring: restored | not_withdrawn | unknown.
  std::string outcome;
};

class Catalogue {
 public:
  explicit Catalogue(Database& db) : db_(db) {}

  DbResult<std::vector<PaintingView>> List();
  // At most `limit` (1..kMaxPageSize) paintings with ids after
  // `starting_after` (from the first when nullopt), in id order, read in one
  // statement (keyset, not offset: a page costs the same wherever it starts).
  DbResult<CataloguePage> Page(int limit, const std::optional<std::string>& starting_after);
  static constexpr int kMaxPageSize = 100;
  DbResult<std::optional<PaintingView>> Get(const std::string& id);
  // The catalogue entries of a cart, sorted by id; unknown ids are missing.
  DbResult<std::vector<CatalogueEntry>> ForCart(const std::vector<std::string>& ids);

  // Upserts every entry in one transaction: all or nothing. Entries must be
  // valid (ValidateEntry). With `force`, price changes on reserved or sold
  // paintings are applied too.
  DbResult<ImportReport> Import(const std::vector<CatalogueEntry>& entries, bool force);

  // Takes a painting off sale without selling it (`withdrawn` true) or puts it
  // back, under its lock row, audited with `reason` and `actor`. Withdrawing is
  // refused while a reservation holds the painting or its Stripe session may
  // still be paid, and for a sold painting. Availability listeners hear of the
  // painting after commit.
  DbResult<WithdrawalChange> SetWithdrawn(const std::string& painting, bool withdrawn,
                                          const std::string& reason, const std::string& actor);

 private:
  Database& db_;
};

}  // namespace paintlock::locks
