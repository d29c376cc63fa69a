#include "admin/duration.h"

#include <doctest/doctest.h>

using namespace paintlock::admin;
using std::chrono::seconds;

TEST_CASE("admin: durations parse as whole seconds, largest unit first") {
  CHECK(ParseDuration("30m") == seconds(1800));
  CHECK(ParseDuration("2h") == seconds(7200));
  CHECK(ParseDuration("3d") == seconds(3 * 86400));
  CHECK(ParseDuration("1w") == seconds(7 * 86400));
  CHECK(ParseDuration("45s") == seconds(45));
  CHECK(ParseDuration("0s") == seconds(0));
  CHECK(ParseDuration("1h30m") == seconds(5400));
  CHECK(ParseDuration("1d2h3m4s") == seconds(86400 + 7200 + 180 + 4));
  for (const char* bad : {"", "5", "m", "5x", "-5m", "1.5h", "30m1h", "1h1h", "5 m", "5M", " 5m",
                          "99999999999999999999s", "40000d"}) {
    INFO(bad);
    CHECK(!ParseDuration(bad).has_value());
  }
}

TEST_CASE("admin: durations print as their two largest units") {
  CHECK(FormatDuration(seconds(0)) == "0s");
  CHECK(FormatDuration(seconds(45)) == "45s");
  CHECK(FormatDuration(seconds(75)) == "1m15s");
  CHECK(FormatDuration(seconds(7200)) == "2h");
  CHECK(FormatDuration(seconds(3605)) == "1h");
  CHECK(FormatDuration(seconds(90061)) == "1d1h");
  CHECK(FormatDuration(seconds(8 * 86400)) == "1w1d");
  CHECK(FormatDuration(seconds(-75)) == "1m15s");
  CHECK(FormatOffset(0) == "now");
  CHECK(FormatOffset(300) == "in 5m");
  CHECK(FormatOffset(-300) == "5m ago");
}

TEST_CASE("admin: --since takes a duration or an RFC 3339 instant") {
  auto ago = ParseSince("2h");
  REQUIRE(ago.has_value());
  CHECK(ago->ago == seconds(7200));
  CHECK(ago->instant.empty());
  auto at = ParseSince("2026-05-01T12:00:00Z");
  REQUIRE(at.has_value());
  CHECK(!at->ago.has_value());
  CHECK(at->instant == "2026-05-01T12:00:00Z");
  CHECK(IsRfc3339("2026-05-01T12:00:00.123456+02:00"));
  CHECK(IsRfc3339("2026-05-01 12:00:00z"));
  for (const char* bad :
       {"yesterday", "2026-05-01", "2026-13-01T00:00:00Z", "2026-05-01T24:00:00Z",
        "2026-05-01T12:00:00", "2026-05-01T12:00:00+2:00", "2026-05-00T12:00:00Z"}) {
    INFO(bad);
    CHECK(!ParseSince(bad).has_value());
  }
}
