#include <cstdlib>

#include "locks/sql_files.h"

namespace paintlock::locks {

namespace {

std::string Stem(const std::string& path, const std::string& folder) {
  std::string name = path.substr(folder.size());
  return name.substr(0, name.size() - 4);  // ".sql"
}

}  // namespace

std::vector<Migration> Migrations() {
  std::vector<Migration> out;
  const std::string folder = "migrations/";
  for (const auto& [path, sql] : SqlFiles()) {  // std::map: sorted by name, so by version
    if (path.compare(0, folder.size(), folder) != 0) continue;
    Migration m;
    m.name = Stem(path, folder);
    m.version = std::atoi(m.name.c_str());
    m.sql = sql;
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<NamedQuery> NamedQueries() {
  std::vector<NamedQuery> out;
  const std::string folder = "queries/";
  for (const auto& [path, sql] : SqlFiles()) {
    if (path.compare(0, folder.size(), folder) != 0) continue;
    out.push_back({Stem(path, folder), sql});
  }
  return out;
}

}  // namespace paintlock::locks
