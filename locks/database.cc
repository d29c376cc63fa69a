#include "locks/database.h"

#include <poll.h>
#include <sys/socket.h>

#include <optional>
#include <regex>
#include <thread>

#include "base/log.h"
#include "locks/availability_publisher.h"

namespace paintlock::locks {

using base::LogError;
using base::LogWarn;

std::string RedactConnectionString(const std::string& url) {
  // URI form: postgresql://user:secret@host/db ; key=value form: password=secret
  static const std::regex uri_password(R"(^(postgres(?:ql)?://[^:/@]*:)[^@]*@)");
  static const std::regex kv_password(R"((password\s*=\s*)('[^']*'|\S+))");
  std::string out = std::regex_replace(url, uri_password, "$1***@");
  out = std::regex_replace(out, kv_password, "$1***");
  return out;
}

Database::Database(DatabaseOptions options) : options_(std::move(options)) {}

Database::~Database() { availability_.reset(); }

std::unique_ptr<Database> Database::Open(const DatabaseOptions& options, std::string* error) {
  std::unique_ptr<Database> db(new Database(options));
  auto first = db->Connect(error);
  if (!first) return nullptr;
  {
    std::lock_guard<std::mutex> lock(db->mu_);
    db->open_ = 1;
  }
  db->Give(std::move(first));
  db->availability_ = std::make_unique<AvailabilityPublisher>(*db);
  return db;
}

std::string SessionSettingsSql(const DatabaseOptions& options,
                               const std::string& application_name) {
  std::string quoted = "'";
  for (char ch : application_name) quoted += ch == '\'' ? std::string("''") : std::string(1, ch);
  quoted += "'";
  return "SET lock_timeout = " + std::to_string(options.lock_timeout.count()) +
         "; SET statement_timeout = " + std::to_string(options.statement_timeout.count()) +
         "; SET idle_in_transaction_session_timeout = " +
         std::to_string(options.idle_in_transaction_timeout.count()) +
         "; SET synchronous_commit = on; SET application_name = " + quoted;
}

void ApplySessionSettings(pqxx::connection_base& c, const DatabaseOptions& options,
                          const std::string& application_name) {
  pqxx::nontransaction n(c);
  n.exec(SessionSettingsSql(options, application_name));
  n.commit();
}

std::unique_ptr<pqxx::connection> Database::Connect(std::string* error) {
  try {
    auto c = std::make_unique<pqxx::connection>(options_.url);
    ApplySessionSettings(*c, options_, options_.application_name);
    if (options_.statements == StatementMode::kNamed) PrepareNamedQueries(*c);
    return c;
  } catch (const pqxx::broken_connection& e) {
    // libpq's message names the host and the reason, not the password.
    *error = std::string("cannot connect to PostgreSQL (") + RedactConnectionString(options_.url) +
             "): " + e.what();
  } catch (const std::exception& e) {
    *error = std::string("PostgreSQL connection set-up failed: ") + e.what();
  }
  return nullptr;
}

namespace {

// True when the server has closed an idle connection (or sent it anything:
// an idle pooled connection has nothing to receive, as it never LISTENs).
// One poll(2) with no wait; the connection is not touched.
bool ClosedByServer(pqxx::connection& c) {
  const int fd = c.sock();
  if (fd < 0) return true;
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  return poll(&p, 1, 0) != 0;
}

}  // namespace

std::unique_ptr<pqxx::connection> Database::Take(std::string* error) {
  const auto deadline = std::chrono::steady_clock::now() + options_.acquire_timeout;
  for (;;) {
    std::unique_ptr<pqxx::connection> c;
    {
      std::unique_lock<std::mutex> lock(mu_);
      while (idle_.empty() && open_ >= options_.pool_size) {
        ++waiting_;
        const bool timed_out = freed_.wait_until(lock, deadline) == std::cv_status::timeout;
        --waiting_;
        if (timed_out && idle_.empty() && open_ >= options_.pool_size) {
          ++acquire_timeouts_;
          *error = "no free database connection within the acquire timeout";
          return nullptr;
        }
      }
      if (idle_.empty()) {
        ++open_;  // reserve a slot, connect outside the lock
        break;
      }
      c = std::move(idle_.back());
      idle_.pop_back();
    }
    // The check is a syscall: outside the lock, which every request takes.
    if (!ClosedByServer(*c)) return c;
    // Dropped without a word to the server, which has gone; its slot is
    // reused by the next pass (an idle connection, or a new one).
    c.reset();
    LogWarn("database_connection_dropped", {{"why", "closed by the server while idle"}});
    std::lock_guard<std::mutex> lock(mu_);
    --open_;
  }
  auto c = Connect(error);
  if (!c) {
    std::lock_guard<std::mutex> lock(mu_);
    --open_;
    freed_.notify_one();
  }
  return c;
}

Database::PoolStats Database::Stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return {options_.pool_size, open_, static_cast<int>(idle_.size()), waiting_, acquire_timeouts_};
}

void Database::Give(std::unique_ptr<pqxx::connection> c) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (c && c->is_open()) {
      idle_.push_back(std::move(c));
    } else {
      --open_;
    }
  }
  freed_.notify_one();  // after the unlock: the waiter it wakes does not block on mu_ at once
}

bool IsUnavailableState(const std::string& sqlstate) {
  // 08: connection exceptions; 57014 statement timeout; 57P0x shutdown;
  // 53: insufficient resources (too many connections, disk full).
  return sqlstate.rfind("08", 0) == 0 || sqlstate == "57014" || sqlstate.rfind("57P0", 0) == 0 ||
         sqlstate.rfind("53", 0) == 0 || sqlstate == "25P03";
}

std::string BrokenConnectionDetail(const pqxx::broken_connection& e) {
  const std::string what = e.what();
  if (what.rfind("Could not obtain client encoding", 0) != 0) return what;
  return "the connection was closed while the statement ran (by the server, or a pooler such "
         "as PgBouncer; libpqxx 6 does not pass on its reason)";
}

std::optional<DbFailure> Database::RunErased(const char* what, Effect effect,
                                             const std::function<void(pqxx::connection&)>& fn) {
  constexpr int kAttempts = 4;
  bool reconnected = false;  // an idempotent fn gets one fresh connection after a broken one
  for (int attempt = 1;; ++attempt) {
    std::string error;
    auto c = Take(&error);
    if (!c) return DbFailure{DbFailureKind::kUnavailable, error};
    try {
      {
        std::optional<UnnamedStatements> unnamed;
        if (options_.statements == StatementMode::kUnnamed) unnamed.emplace(*c);
        fn(*c);
      }
      Give(std::move(c));
      return std::nullopt;
    } catch (const pqxx::in_doubt_error& e) {
      // The connection broke during COMMIT: the server may have committed.
      c.reset();
      Give(nullptr);
      LogWarn("database_outcome_unknown", {{"operation", what}, {"error", e.what()}});
      return DbFailure{DbFailureKind::kUnavailable, e.what(), true};
    } catch (const pqxx::broken_connection& e) {
      c.reset();
      Give(nullptr);
      const std::string detail = BrokenConnectionDetail(e);
      if (effect == Effect::kIdempotent && !reconnected) {
        reconnected = true;
        LogWarn("database_connection_lost_retrying", {{"operation", what}, {"error", detail}});
        continue;
      }
      const bool may_have_committed = effect == Effect::kMayWrite;
      LogWarn(may_have_committed ? "database_outcome_unknown" : "database_unavailable",
              {{"operation", what}, {"error", detail}});
      return DbFailure{DbFailureKind::kUnavailable, detail, may_have_committed};
    } catch (const pqxx::transaction_rollback& e) {
      // Serialization failure or deadlock: the transaction did nothing; run it again.
      Give(std::move(c));
      if (attempt < kAttempts) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5 * attempt));
        continue;
      }
      LogError("database_retries_exhausted", {{"operation", what}, {"error", e.what()}});
      return DbFailure{DbFailureKind::kUnavailable, e.what()};
    } catch (const pqxx::sql_error& e) {
      const std::string state = e.sqlstate();
      const bool open = c->is_open();
      // 25006: this server is read-only now, a primary demoted under us (a
      // switchover, or a partition Patroni resolved). The statement was refused,
      // so nothing was written; the connection is dropped and the work runs once
      // more on a fresh one, which the multi-host URL takes to the new primary.
      const bool demoted = state == "25006";
      const bool usable = open && !demoted;
      Give(usable ? std::move(c) : nullptr);
      if (demoted && !reconnected) {
        reconnected = true;
        LogWarn("database_primary_demoted", {{"operation", what}, {"error", e.what()}});
        continue;
      }
      // A backend ended by the server (57P0x) answers with an error and closes
      // the connection: for a write that is as good as a broken connection.
      if (!usable && effect == Effect::kIdempotent && !reconnected) {
        reconnected = true;
        LogWarn("database_connection_lost_retrying", {{"operation", what}, {"error", e.what()}});
        continue;
      }
      if (state == "40001" || state == "40P01") {
        if (attempt < kAttempts) continue;
        return DbFailure{DbFailureKind::kUnavailable, e.what()};
      }
      if (state == "55P03") return DbFailure{DbFailureKind::kContended, "lock_timeout"};
      if (IsUnavailableState(state) || demoted) {
        const bool may_have_committed = !open && effect == Effect::kMayWrite;
        LogWarn(may_have_committed ? "database_outcome_unknown" : "database_unavailable",
                {{"operation", what}, {"sqlstate", state}, {"error", e.what()}});
        return DbFailure{DbFailureKind::kUnavailable, e.what(), may_have_committed};
      }
      LogError("database_error", {{"operation", what}, {"sqlstate", state}, {"error", e.what()}});
      return DbFailure{DbFailureKind::kInternal, e.what()};
    } catch (const std::exception& e) {
      bool usable = c && c->is_open();
      Give(usable ? std::move(c) : nullptr);
      LogError("database_error", {{"operation", what}, {"error", e.what()}});
      return DbFailure{DbFailureKind::kInternal, e.what()};
    }
  }
}

}  // namespace paintlock::locks
