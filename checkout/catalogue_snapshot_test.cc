#include "checkout/catalogue_snapshot.h"

#include <doctest/doctest.h>

using namespace paintlock::checkout;
using paintlock::locks::PaintingAvailability;

TEST_CASE("snapshot: never read in full, it prices nothing, whatever the feed said") {
  CatalogueSnapshot snapshot;
  CHECK_FALSE(snapshot.Loaded());
  snapshot.Note({PaintingAvailability{"p1", "available", ""}});
  snapshot.HoldOffline({"p1"}, CatalogueSnapshot::Clock::now());
  CHECK(std::holds_alternative<SnapshotEmpty>(
      snapshot.ForCart({"p1"}, CatalogueSnapshot::Clock::now())));
  CHECK_FALSE(snapshot.Loaded());
}

TEST_CASE("snapshot: RFC 3339 times as the database writes them") {
  auto t = ParseRfc3339("2026-12-03T08:00:05Z");
  REQUIRE(t);
  CHECK(CatalogueSnapshot::Clock::to_time_t(*t) == 1796284805);
  CHECK_FALSE(ParseRfc3339("2026-12-03 08:00:05"));
  CHECK_FALSE(ParseRfc3339("2026-12-03T08:00:05Z junk"));
  CHECK_FALSE(ParseRfc3339(""));
}
