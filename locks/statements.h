// Runs the named queries of sql/queries, as named prepared statements or as
// unnamed ones (DatabaseOptions::statements).
//
// Named (the default): each query is prepared once per connection (libpqxx
// prepares on first use) and later runs send only its name and parameters.
// Unnamed (PAINTLOCK_DB_STATEMENTS=unnamed): every run sends the query's text
// with its parameters in one extended-protocol exchange (Parse/Bind/Execute on
// the unnamed statement), so nothing outlives the transaction. That is what
// PgBouncer's transaction pooling needs: it hands each transaction whichever
// server connection is free, where a named statement was never prepared (or
// another client's has the same name). bench/reports/ha-cluster.md measured
// both through PgBouncer 1.18; `make bench` measures what unnamed costs.
//
// The mode belongs to the pool: Database runs each function of an unnamed
// pool inside an UnnamedStatements scope naming its connection, and Exec()
// runs unnamed exactly on that connection. (libpqxx 6's connection classes are
// not polymorphic, so the connection cannot carry the mode itself.)
#pragma once

#include <pqxx/pqxx>
#include <string>
#include <utility>

namespace paintlock::locks {

enum class StatementMode { kNamed, kUnnamed };

// "named" | "unnamed"; false for anything else.
bool ParseStatementMode(const std::string& text, StatementMode* out);

// Registers every query of sql/queries on `c` (libpqxx prepares each on first use).
void PrepareNamedQueries(pqxx::connection_base& c);

// While one lives, Exec() on a transaction of `c` on this thread runs unnamed
// statements. Scopes nest; each restores the one before.
class UnnamedStatements {
 public:
  explicit UnnamedStatements(const pqxx::connection_base& c);
  ~UnnamedStatements();
  UnnamedStatements(const UnnamedStatements&) = delete;
  UnnamedStatements& operator=(const UnnamedStatements&) = delete;

 private:
  const pqxx::connection_base* previous_;
};

// The text of the named query `name` (sql/queries/NAME.sql); throws
// std::logic_error for an unknown name.
const std::string& NamedQuerySql(const char* name);

// True when `t`'s connection is the one of this thread's UnnamedStatements scope.
bool RunsUnnamed(const pqxx::transaction_base& t);

// t.exec_prepared(name, args...) or, in unnamed mode, t.exec_params(its text, args...).
template <class... Args>
pqxx::result Exec(pqxx::transaction_base& t, const char* name, Args&&... args) {
  if (RunsUnnamed(t)) return t.exec_params(NamedQuerySql(name), std::forward<Args>(args)...);
  return t.exec_prepared(name, std::forward<Args>(args)...);
}

// As Exec(), for a query that returns exactly one row (pqxx::unexpected_rows otherwise).
template <class... Args>
pqxx::row Exec1(pqxx::transaction_base& t, const char* name, Args&&... args) {
  if (RunsUnnamed(t)) return t.exec_params1(NamedQuerySql(name), std::forward<Args>(args)...);
  return t.exec_prepared1(name, std::forward<Args>(args)...);
}

}  // namespace paintlock::locks
