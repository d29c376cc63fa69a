#include "locks/row_json.h"

#include <algorithm>

namespace paintlock::locks {

nlohmann::json RowJson(const pqxx::row& row, const std::vector<std::string>& json_columns) {
  // PostgreSQL type oids: bool, int8, int2, int4.
  constexpr pqxx::oid kBool = 16, kInt8 = 20, kInt2 = 21, kInt4 = 23;
  nlohmann::json out = nlohmann::json::object();
  for (const auto& field : row) {
    const std::string name = field.name();
    if (field.is_null()) {
      out[name] = nullptr;
    } else if (std::find(json_columns.begin(), json_columns.end(), name) != json_columns.end()) {
      out[name] = nlohmann::json::parse(field.c_str(), nullptr, false);
    } else if (field.type() == kBool) {
      out[name] = field.as<bool>();
    } else if (field.type() == kInt8 || field.type() == kInt2 || field.type() == kInt4) {
      out[name] = field.as<long long>();
    } else {
      out[name] = field.as<std::string>();
    }
  }
  return out;
}

nlohmann::json RowsJson(const pqxx::result& rows, const std::vector<std::string>& json_columns) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& row : rows) out.push_back(RowJson(row, json_columns));
  return out;
}

std::optional<std::string> OptionalText(const pqxx::field& field) {
  if (field.is_null()) return std::nullopt;
  return field.as<std::string>();
}

HeldBy ReadHeldBy(const pqxx::row& row) {
  return {OptionalText(row["holder"]), OptionalText(row["holder_state"]),
          OptionalText(row["until"])};
}

}  // namespace paintlock::locks
