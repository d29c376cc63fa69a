#include "gateway/limit_routes_parsing.h"

namespace paintlock::gateway {

std::variant<nlohmann::json, FieldError> ParseJsonObject(const std::string& body, bool empty_ok) {
  if (body.find_first_not_of(" \t\r\n") == std::string::npos) {
    if (empty_ok) return nlohmann::json::object();
    return FieldError{"", "The request needs a JSON object body."};
  }
  nlohmann::json j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return FieldError{"", "The body is not valid JSON."};
  if (!j.is_object()) return FieldError{"", "The body must be a JSON object."};
  return j;
}

std::variant<std::int64_t, FieldError> WholeNumberField(const nlohmann::json& body,
                                                        const std::string& field, std::int64_t lo,
                                                        std::int64_t hi,
                                                        std::optional<std::int64_t> fallback) {
  const std::string range = "from " + std::to_string(lo) + " to " + std::to_string(hi);
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) {
    if (fallback) return *fallback;
    return FieldError{field, "\"" + field + "\" is required: a whole number " + range + "."};
  }
  // nlohmann keeps integers that fit as integers; 5.0, 1e3 and numbers past
  // uint64 are floats, and strings and booleans are not numbers at all.
  bool in_range = false;
  std::int64_t value = 0;
  if (it->is_number_unsigned()) {
    const std::uint64_t u = it->get<std::uint64_t>();
    in_range = u <= static_cast<std::uint64_t>(hi) && static_cast<std::int64_t>(u) >= lo;
    value = static_cast<std::int64_t>(u);
  } else if (it->is_number_integer()) {
    value = it->get<std::int64_t>();
    in_range = value >= lo && value <= hi;
  } else {
    return FieldError{field, "\"" + field + "\" must be a whole number " + range +
                                 ", written as a JSON integer (such as 300; not 300.5, 3e2 or "
                                 "\"300\"); got " +
                                 std::string(it->type_name()) + "."};
  }
  if (!in_range) {
    return FieldError{field, "\"" + field + "\" must be a whole number " + range + "."};
  }
  return value;
}

std::variant<std::string, FieldError> TextField(const nlohmann::json& body,
                                                const std::string& field,
                                                std::optional<std::string> fallback) {
  auto it = body.find(field);
  if (it == body.end() || it->is_null()) {
    if (fallback) return *fallback;
    return FieldError{field, "\"" + field + "\" is required."};
  }
  if (!it->is_string()) return FieldError{field, "\"" + field + "\" must be a string."};
  return it->get<std::string>();
}

std::optional<std::int64_t> ParseWholeNumber(const std::string& text, std::int64_t lo,
                                             std::int64_t hi) {
  if (text.empty() || text.size() > 18) return std::nullopt;  // 18 digits always fit int64
  std::int64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value < lo || value > hi) return std::nullopt;
  return value;
}

}  // namespace paintlock::gateway
