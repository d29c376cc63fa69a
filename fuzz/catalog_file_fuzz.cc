// The catalogue import (admin/catalog_file.h), CSV or JSON by the first byte.
// Properties: accepted means no problem lines and every entry valid by
// locks::ValidateEntry with distinct ids (what the import then writes); a
// refusal has at least one problem line.
#include <set>
#include <string>

#include "admin/catalog_file.h"
#include "fuzz/fuzz_support.h"

using namespace paintlock;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string path = data[0] % 2 == 0 ? "catalogue.csv" : "catalogue.json";
  const std::string text(fuzz::AsText(data + 1, size - 1));

  std::vector<locks::CatalogueEntry> entries;
  std::vector<std::string> problems;
  if (admin::ParseCatalogFile(path, text, &entries, &problems)) {
    FUZZ_CHECK(problems.empty());
    std::set<std::string> ids;
    for (const auto& e : entries) {
      FUZZ_CHECK(locks::ValidateEntry(e).empty());
      FUZZ_CHECK(ids.insert(e.id).second);
    }
  } else {
    FUZZ_CHECK(!problems.empty());
    FUZZ_CHECK(entries.empty());
  }
  return 0;
}
