// A query row as JSON, for the listings a store hands on as the statement
// returns them (paintlockctl prints them as they are with --json).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

namespace paintlock::locks {

// A text column that may be NULL.
std::optional<std::string> OptionalText(const pqxx::field& field);

// The reservation that stands in the way of an operator's change to a
// painting (marking it sold, withdrawing it): its id, its state, and when its
// hold ends (nullopt while its Stripe session may still be paid). Read from a
// row's `holder`, `holder_state` and `until` columns.
struct HeldBy {
  std::optional<std::string> holder, holder_state, until;
};
HeldBy ReadHeldBy(const pqxx::row& row);

// The fields of a query row as a JSON object keyed by column name: NULL as
// null, booleans and integers as such, columns named in `json_columns`
// parsed as JSON, anything else as a string.
nlohmann::json RowJson(const pqxx::row& row, const std::vector<std::string>& json_columns = {});

// Every row of `rows`, in order, as RowJson gives it: a JSON array.
nlohmann::json RowsJson(const pqxx::result& rows,
                        const std::vector<std::string>& json_columns = {});

}  // namespace paintlock::locks
