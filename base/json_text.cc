#include "base/json_text.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace paintlock::base {

void AppendJsonString(std::string& out, std::string_view s) {
  const bool plain = std::all_of(s.begin(), s.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (!plain) {
    out += nlohmann::json(std::string(s))
               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return;
  }
  out += '"';
  out.append(s.data(), s.size());
  out += '"';
}

}  // namespace paintlock::base
