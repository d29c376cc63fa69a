// JSON text written straight into a string, for the lines and answers the
// gateway writes on every request, where building an nlohmann object first
// cost more than the rest of the work (base/log.cc, gateway/limit_routes.cc,
// gateway/reservation_routes.cc, gateway/availability_stream.cc, and every
// error body: gateway/http_errors.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace paintlock::base {

// Appends `s` as a JSON string: as it is, quoted, when it is printable ASCII
// with nothing to escape (names, ids, keys, times); else nlohmann's escaping,
// invalid UTF-8 replaced by U+FFFD. Always the bytes nlohmann's dump gives.
void AppendJsonString(std::string& out, std::string_view s);

// One flat JSON object written into `out`, member by member, then End(). The
// bytes are nlohmann's dump of the same object when the members come in its
// order (keys sorted, as its std::map keeps them): each writer holds that in a
// test against nlohmann. Keys and values are escaped alike (AppendJsonString).
//   JsonObjectText(body).Bool("allowed", true).String("key", key).End();
class JsonObjectText {
 public:
  explicit JsonObjectText(std::string& out) : out_(out) { out_ += '{'; }
  JsonObjectText& String(std::string_view key, std::string_view value);
  JsonObjectText& Strings(std::string_view key, const std::vector<std::string>& values);
  JsonObjectText& Int(std::string_view key, std::int64_t value);
  JsonObjectText& Bool(std::string_view key, bool value);
  // A value already written as JSON text (say, an nlohmann value's dump).
  JsonObjectText& Raw(std::string_view key, std::string_view json);
  void End() { out_ += '}'; }

 private:
  void Key(std::string_view key);

  std::string& out_;
  bool first_ = true;
};

}  // namespace paintlock::base
