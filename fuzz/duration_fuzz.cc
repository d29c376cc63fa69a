// Durations and instants as paintlockctl reads them (admin/duration.h).
// Properties: a parsed duration is within 0..100 years; what FormatDuration
// prints parses back, to at most the original (it keeps two units, rounding
// down) and exactly when it fits two adjacent units; ParseSince sets exactly one of
// its fields.
#include <string>

#include "admin/duration.h"
#include "fuzz/fuzz_support.h"

using namespace paintlock;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = fuzz::AsText(data, size);
  constexpr std::int64_t kLongest = 100LL * 366 * 86400;

  if (auto d = admin::ParseDuration(text)) {
    FUZZ_CHECK(d->count() >= 0 && d->count() <= kLongest);
    const std::string shown = admin::FormatDuration(*d);
    const auto back = admin::ParseDuration(shown);
    FUZZ_CHECK(back.has_value());
    FUZZ_CHECK(*back <= *d);
    FUZZ_CHECK(admin::FormatDuration(*back) == shown);
  }
  (void)admin::IsRfc3339(text);
  if (auto since = admin::ParseSince(text)) {
    FUZZ_CHECK(since->ago.has_value() != !since->instant.empty());
  }
  return 0;
}
