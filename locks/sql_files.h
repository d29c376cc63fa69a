// The SQL of sql/, compiled into the binary by sql/embed.cmake.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace paintlock::locks {

// Every file under sql/migrations and sql/queries, keyed by its path relative
// to sql/ ("migrations/0001_catalogue_and_locks.sql").
const std::map<std::string, std::string>& SqlFiles();

struct Migration {
  int version = 0;   // from the file name's leading number
  std::string name;  // the file name without ".sql"
  std::string sql;
};
// The migrations in version order.
std::vector<Migration> Migrations();

struct NamedQuery {
  std::string name;  // the file name without ".sql": "reserve"
  std::string sql;
};
// The named statements every connection prepares.
std::vector<NamedQuery> NamedQueries();

}  // namespace paintlock::locks
