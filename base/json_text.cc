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

void JsonObjectText::Key(std::string_view key) {
  if (!first_) out_ += ',';
  first_ = false;
  AppendJsonString(out_, key);
  out_ += ':';
}

JsonObjectText& JsonObjectText::String(std::string_view key, std::string_view value) {
  Key(key);
  AppendJsonString(out_, value);
  return *this;
}

JsonObjectText& JsonObjectText::Strings(std::string_view key,
                                        const std::vector<std::string>& values) {
  Key(key);
  out_ += '[';
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out_ += ',';
    AppendJsonString(out_, values[i]);
  }
  out_ += ']';
  return *this;
}

JsonObjectText& JsonObjectText::Int(std::string_view key, std::int64_t value) {
  Key(key);
  out_ += std::to_string(value);
  return *this;
}

JsonObjectText& JsonObjectText::Bool(std::string_view key, bool value) {
  Key(key);
  out_ += value ? "true" : "false";
  return *this;
}

JsonObjectText& JsonObjectText::Raw(std::string_view key, std::string_view json) {
  Key(key);
  out_.append(json.data(), json.size());
  return *this;
}

}  // namespace paintlock::base
