// A pool of PostgreSQL connections with paintlock's session settings.
//
// Every connection sets lock_timeout (a hot painting answers quickly instead
// of queueing), statement_timeout and idle_in_transaction_session_timeout, and
// keeps synchronous_commit on (DESIGN.md, "Database hygiene"); the queries of
// sql/queries run on it as named or unnamed statements (locks/statements.h).
//
// libpqxx throws; nothing thrown by it leaves this module. Run() translates:
// serialization failures and deadlocks are retried (the whole function runs
// again), a lost connection or a timeout becomes kUnavailable, lock_timeout
// becomes kContended, anything else kInternal (logged with its SQLSTATE).
//
// Dead connections (after a database restart or failover every pooled
// connection is dead): an idle connection is checked before it is handed out
// (a pooled connection never LISTENs, so any byte or hang-up waiting on its
// socket is the server having closed it) and replaced by a fresh one, so a
// statement is never sent on a connection already known dead. A connection
// that breaks while a statement runs leaves its outcome unknown unless the
// statement cannot have committed:
//   * RunIdempotent(): fn only reads, or a second run changes nothing more
//     than the first; it runs once more on a fresh connection.
//   * Run(): fn may write in autocommit or commit a transaction. A broken
//     connection, or pqxx::in_doubt_error during COMMIT, is kUnavailable with
//     may_have_committed set: the caller must look the outcome up (by an id
//     it chose before the write) before it tells anyone what happened.
//
// Every Database also owns the process's AvailabilityPublisher
// (locks/availability_publisher.h): writers that change a painting hand it
// the ids after their commit.
//
// Thread-safe. A connection is used by one thread at a time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "locks/statements.h"

namespace paintlock::locks {

class AvailabilityPublisher;

struct DatabaseOptions {
  std::string url;  // libpq connection string or URI; may hold a password: never logged
  int pool_size = 16;
  std::chrono::milliseconds lock_timeout{1000};
  std::chrono::milliseconds statement_timeout{5000};
  std::chrono::milliseconds idle_in_transaction_timeout{10000};
  std::chrono::milliseconds acquire_timeout{5000};  // waiting for a free connection
  // How long LookUpPatiently() keeps asking an unreachable database; longer than a failover
  // (about 4-7 s measured, bench/reports/ha-cluster.md), shorter than a client's patience.
  // PAINTLOCK_DB_OUTCOME_LOOKUP_MS sets it for the gateway.
  std::chrono::milliseconds outcome_lookup_patience{10000};
  std::string application_name = "paintlock";
  // Named prepared statements, or unnamed ones for PgBouncer's transaction
  // pooling (locks/statements.h).
  StatementMode statements = StatementMode::kNamed;
};

enum class DbFailureKind {
  kUnavailable,  // the database could not be reached or timed out: retry later
  kContended,    // lock_timeout: another transaction holds the rows right now
  kInternal,     // a bug or a schema mismatch: logged; do not retry
};

struct DbFailure {
  DbFailureKind kind = DbFailureKind::kInternal;
  std::string detail;  // safe to log; never shown to a client
  // The connection broke after a write was sent: it may have committed.
  bool may_have_committed = false;
};

template <class T>
using DbResult = std::variant<T, DbFailure>;

// A store's answer from the database's: its failure, or the value the
// statement's function returned, for an Outcome that is a variant of T,
// DbFailure and other answers.
template <class Outcome, class T>
Outcome Flatten(DbResult<T> result) {
  if (auto* failure = std::get_if<DbFailure>(&result)) return *failure;
  return std::get<T>(std::move(result));
}

// Sets the session settings every connection of paintlock's has (the
// timeouts of `options`, synchronous_commit on) and its application_name.
// Throws what libpqxx throws.
void ApplySessionSettings(pqxx::connection_base& c, const DatabaseOptions& options,
                          const std::string& application_name);
// The SET statements ApplySessionSettings runs, as one string (for
// connections libpqxx does not make: locks/async_pool.h).
std::string SessionSettingsSql(const DatabaseOptions& options, const std::string& application_name);

// An SQLSTATE that means "the database could not do it now" (a lost
// connection, a timeout, a shutdown, no resources): kUnavailable.
bool IsUnavailableState(const std::string& sqlstate);

// What a broken connection's exception tells the log. libpqxx 6 asks for the
// client encoding before it looks at a statement's result, so a connection
// the server or a pooler closed while a statement ran (PostgreSQL shutting
// down, PgBouncer giving up at query_wait_timeout) surfaces as "Could not
// obtain client encoding: not connected.", and the server's own reason, held
// inside the connection, is not passed on. Other messages pass unchanged.
std::string BrokenConnectionDetail(const pqxx::broken_connection& e);

// The connection string with any password replaced by "***", for logs.
std::string RedactConnectionString(const std::string& url);

class Database {
 public:
  // Connects once to check the settings; nullptr and *error on failure
  // (error names the problem, never the password).
  static std::unique_ptr<Database> Open(const DatabaseOptions& options, std::string* error);

  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  // Runs fn(connection) on a pooled connection, translating libpqxx failures
  // as described above, and returns what fn returns. fn must be safe to run
  // again from the start: it is, after a serialization failure or deadlock.
  template <class F>
  auto Run(const char* what, F&& fn) -> DbResult<decltype(fn(std::declval<pqxx::connection&>()))> {
    return RunTyped(what, Effect::kMayWrite, std::forward<F>(fn));
  }
  // As Run(), for an fn that is safe to run twice (a read, or an idempotent
  // write): a connection that breaks under it is replaced and fn runs once more.
  template <class F>
  auto RunIdempotent(const char* what, F&& fn)
      -> DbResult<decltype(fn(std::declval<pqxx::connection&>()))> {
    return RunTyped(what, Effect::kIdempotent, std::forward<F>(fn));
  }

  // Calls `lookup` (a read returning DbResult<T>) until its answer is anything but
  // kUnavailable or options().outcome_lookup_patience has passed, every 200 ms. For the
  // look-up that settles a write whose connection died (may_have_committed): the answer must
  // come from the database, and during a failover no server answers for a few seconds; each
  // call finds whichever server is primary by then.
  template <class F>
  auto LookUpPatiently(F&& lookup) -> decltype(lookup()) {
    constexpr std::chrono::milliseconds kRetry{200};
    const auto deadline = std::chrono::steady_clock::now() + options_.outcome_lookup_patience;
    for (;;) {
      auto result = lookup();
      const DbFailure* failure = std::get_if<DbFailure>(&result);
      if (!failure || failure->kind != DbFailureKind::kUnavailable ||
          std::chrono::steady_clock::now() + kRetry >= deadline) {
        return result;
      }
      std::this_thread::sleep_for(kRetry);
    }
  }

  const DatabaseOptions& options() const { return options_; }

  // The pool as it is now (for metrics): connections open (idle + in use),
  // idle, callers waiting for one, and acquire timeouts since start.
  struct PoolStats {
    int size = 0;
    int open = 0;
    int idle = 0;
    int waiting = 0;
    long long acquire_timeouts = 0;
  };
  PoolStats Stats();

  // Publishes availability changes after commit; lives as long as this.
  AvailabilityPublisher& availability() { return *availability_; }

 private:
  enum class Effect { kIdempotent, kMayWrite };

  template <class F>
  auto RunTyped(const char* what, Effect effect, F&& fn)
      -> DbResult<decltype(fn(std::declval<pqxx::connection&>()))> {
    using T = decltype(fn(std::declval<pqxx::connection&>()));
    std::optional<T> value;
    std::optional<DbFailure> failure =
        RunErased(what, effect, [&](pqxx::connection& c) { value.emplace(fn(c)); });
    if (failure.has_value()) return *failure;
    return std::move(*value);
  }

  explicit Database(DatabaseOptions options);
  std::unique_ptr<pqxx::connection> Connect(std::string* error);
  std::optional<DbFailure> RunErased(const char* what, Effect effect,
                                     const std::function<void(pqxx::connection&)>& fn);
  std::unique_ptr<pqxx::connection> Take(std::string* error);
  void Give(std::unique_ptr<pqxx::connection> c);

  const DatabaseOptions options_;

  std::mutex mu_;
  std::condition_variable freed_;
  std::vector<std::unique_ptr<pqxx::connection>> idle_;  // guarded by mu_
  int open_ = 0;                                         // guarded by mu_: idle + leased
  int waiting_ = 0;                                      // guarded by mu_: callers in Take
  long long acquire_timeouts_ = 0;                       // guarded by mu_

  // Last member: stopped (and drained) before the pool goes.
  std::unique_ptr<AvailabilityPublisher> availability_;
};

}  // namespace paintlock::locks
