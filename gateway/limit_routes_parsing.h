// Reading the JSON bodies and query parameters of the credit, rate-limit and
// lease endpoints (gateway/limit_routes.h). Strict about numbers: an amount,
// cost, TTL or token is a JSON integer in range; 5.0, "5", -1, 1e30 and true
// are refused with a sentence naming the field, so bad input never reaches
// the database. Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>

namespace paintlock::gateway {

struct FieldError {
  std::string param;    // the offending field ("" for the body as a whole)
  std::string message;  // a sentence for the caller
};

// The body as a JSON object. An empty body is an empty object when
// `empty_ok` (endpoints whose fields are all optional).
std::variant<nlohmann::json, FieldError> ParseJsonObject(const std::string& body, bool empty_ok);

// body[field] as a whole number in [lo, hi]; `fallback` when the field is
// absent or null (nullopt: the field is required).
std::variant<std::int64_t, FieldError> WholeNumberField(const nlohmann::json& body,
                                                        const std::string& field, std::int64_t lo,
                                                        std::int64_t hi,
                                                        std::optional<std::int64_t> fallback);

// body[field] as a string; `fallback` when absent or null (nullopt: required).
std::variant<std::string, FieldError> TextField(const nlohmann::json& body,
                                                const std::string& field,
                                                std::optional<std::string> fallback);

// A whole number in [lo, hi] written in decimal digits (a query parameter).
std::optional<std::int64_t> ParseWholeNumber(const std::string& text, std::int64_t lo,
                                             std::int64_t hi);

}  // namespace paintlock::gateway
