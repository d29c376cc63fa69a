// A query row as JSON, for the listings a store hands on as the statement
// returns them (paintlockctl prints them as they are with --json).
#pragma once

#include <nlohmann/json.hpp>
#include <pqxx/pqxx>
#include <string>
#include <vector>

namespace paintlock::locks {

// The fields of a query row as a JSON object keyed by column name: NULL as
// null, booleans and integers as such, columns named in `json_columns`
// parsed as JSON, anything else as a string.
nlohmann::json RowJson(const pqxx::row& row, const std::vector<std::string>& json_columns = {});

// Every row of `rows`, in order, as RowJson gives it: a JSON array.
nlohmann::json RowsJson(const pqxx::result& rows,
                        const std::vector<std::string>& json_columns = {});

}  // namespace paintlock::locks
