// Shared by the fuzz targets: property checks that abort (so libFuzzer keeps
// the input as a crash) and a splitter for inputs made of several fields.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

// A property that must hold for every input; prints where and aborts.
#define FUZZ_CHECK(cond)                                                               \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: property failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)

namespace paintlock::fuzz {

inline std::string_view AsText(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Splits on the byte 0x00 (a separator no text parser treats specially), so a
// seed file can hold "header\0body" and mutations stay meaningful.
inline std::vector<std::string> Fields(std::string_view input, std::size_t count) {
  std::vector<std::string> fields;
  while (fields.size() + 1 < count) {
    const std::size_t cut = input.find('\0');
    if (cut == std::string_view::npos) break;
    fields.emplace_back(input.substr(0, cut));
    input.remove_prefix(cut + 1);
  }
  fields.emplace_back(input);
  fields.resize(count);
  return fields;
}

// What the gateway tells a caller must be something it can put in a JSON
// error body: nlohmann refuses (throws on) invalid UTF-8 when serialising.
inline bool Describable(const std::string& text) {
  try {
    (void)nlohmann::json(text).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

}  // namespace paintlock::fuzz
