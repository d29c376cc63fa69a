#include "locks/statements.h"

#include <stdexcept>
#include <string_view>
#include <unordered_map>

#include "locks/sql_files.h"

namespace paintlock::locks {

bool ParseStatementMode(const std::string& text, StatementMode* out) {
  if (text == "named") {
    *out = StatementMode::kNamed;
  } else if (text == "unnamed") {
    *out = StatementMode::kUnnamed;
  } else {
    return false;
  }
  return true;
}

namespace {

thread_local const pqxx::connection_base* unnamed_connection = nullptr;

}  // namespace

void PrepareNamedQueries(pqxx::connection_base& c) {
  for (const NamedQuery& q : NamedQueries()) c.prepare(q.name, q.sql);
}

UnnamedStatements::UnnamedStatements(const pqxx::connection_base& c)
    : previous_(unnamed_connection) {
  unnamed_connection = &c;
}

UnnamedStatements::~UnnamedStatements() { unnamed_connection = previous_; }

const std::string& NamedQuerySql(const char* name) {
  // Built once; the map's keys view the strings of the vector it lives beside.
  static const auto* const queries = new std::vector<NamedQuery>(NamedQueries());
  static const auto* const by_name = [] {
    auto* m = new std::unordered_map<std::string_view, const std::string*>();
    for (const NamedQuery& q : *queries) m->emplace(q.name, &q.sql);
    return m;
  }();
  const auto it = by_name->find(name);
  if (it == by_name->end()) throw std::logic_error(std::string("no query named ") + name);
  return *it->second;
}

bool RunsUnnamed(const pqxx::transaction_base& t) {
  return unnamed_connection != nullptr && &t.conn() == unnamed_connection;
}

}  // namespace paintlock::locks
