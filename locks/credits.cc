#include "locks/credits.h"

#include "base/text.h"
#include "locks/reservations.h"  // LooksLikeUuid
#include "locks/row_columns.h"
#include "locks/statements.h"

namespace paintlock::locks {

bool IsValidAccountId(const std::string& id) { return base::IsToken(id, 1, 64, "", "_.:-"); }

namespace {

CreditHoldView HoldViewOf(const pqxx::row& row) {
  CreditHoldView v;
  v.id = row["id"].as<std::string>();
  v.account_id = row["account_id"].as<std::string>();
  v.amount = row["amount"].as<std::int64_t>();
  v.state = row["state"].as<std::string>();
  v.created_at = row["created_at"].as<std::string>();
  v.expires_at = row["expires_at"].as<std::string>();
  v.closed_at = row["closed_at"].as<std::string>("");
  if (!row["late"].is_null()) v.late = row["late"].as<bool>();
  if (!row["balance_after"].is_null()) v.balance_after = row["balance_after"].as<std::int64_t>();
  v.expires_in_seconds = row["expires_in_seconds"].as<std::int64_t>();
  return v;
}

}  // namespace

namespace {

HoldOutcome HoldDecided(const Column& column, std::int64_t amount) {
  const std::string outcome = column("outcome");
  if (outcome == "held") {
    return HoldOpened{column("hold_id"), column("expires_at"), std::stoll(column("available"))};
  }
  if (outcome == "insufficient")
    return InsufficientCredits{std::stoll(column("available")), amount};
  if (outcome == "unknown_account") return AccountNotFound{};
  return DbFailure{DbFailureKind::kInternal, "paintlock_credit_hold: outcome " + outcome};
}

CommitOutcome CommitDecided(const Column& column, const std::string& hold_id) {
  const std::string outcome = column("outcome");
  if (outcome == "committed" || outcome == "already_committed") {
    HoldCommitted done;
    done.hold_id = hold_id;
    done.account_id = column("account_id");
    done.amount = std::stoll(column("amount"));
    done.late = column("late") == "t";
    done.committed_at = column("committed_at");
    done.balance_after = std::stoll(column("balance_after"));
    done.replayed = outcome == "already_committed";
    return done;
  }
  if (outcome == "released") return HoldWasReleased{std::stoll(column("amount"))};
  if (outcome == "expired") {
    return HoldLapsed{std::stoll(column("amount")), column("expires_at"),
                      std::stoll(column("available"))};
  }
  if (outcome == "unknown_hold") return HoldNotFound{};
  return DbFailure{DbFailureKind::kInternal, "paintlock_credit_commit: outcome " + outcome};
}

}  // namespace

HoldOutcome CreditStore::Hold(const std::string& account_id, std::int64_t amount,
                              std::chrono::seconds ttl) {
  if (!IsValidAccountId(account_id)) return AccountNotFound{};
  return Flatten<HoldOutcome>(db_.Run("credit_hold", [&](pqxx::connection& c) -> HoldOutcome {
    pqxx::nontransaction n(c);  // one statement: its own transaction
    pqxx::row row = Exec1(n, "credit_hold", account_id, amount, static_cast<int>(ttl.count()));
    return HoldDecided(ColumnsOf(row), amount);
  }));
}

void CreditStore::HoldAsync(AsyncPool& pool, int statement, const std::string& account_id,
                            std::int64_t amount, std::chrono::seconds ttl,
                            std::function<void(HoldOutcome)> done, std::function<bool()> wanted) {
  if (!IsValidAccountId(account_id)) return done(AccountNotFound{});
  pool.Submit(
      statement, {account_id, std::to_string(amount), std::to_string(ttl.count())},
      [amount, done = std::move(done)](AsyncReply reply) {
        done(FromReply<HoldOutcome>(reply, "credit_hold", [&](const Column& column) {
          return HoldDecided(column, amount);
        }));
      },
      std::move(wanted));
}

CommitOutcome CreditStore::Commit(const std::string& hold_id) {
  if (!LooksLikeUuid(hold_id)) return HoldNotFound{};
  return Flatten<CommitOutcome>(db_.Run("credit_commit", [&](pqxx::connection& c) -> CommitOutcome {
    pqxx::nontransaction n(c);
    pqxx::row row = Exec1(n, "credit_commit", hold_id);
    return CommitDecided(ColumnsOf(row), hold_id);
  }));
}

void CreditStore::CommitAsync(AsyncPool& pool, int statement, const std::string& hold_id,
                              std::function<void(CommitOutcome)> done,
                              std::function<bool()> wanted) {
  if (!LooksLikeUuid(hold_id)) return done(HoldNotFound{});
  pool.Submit(
      statement, {hold_id},
      [hold_id, done = std::move(done)](AsyncReply reply) {
        done(FromReply<CommitOutcome>(reply, "credit_commit", [&](const Column& column) {
          return CommitDecided(column, hold_id);
        }));
      },
      std::move(wanted));
}

ReleaseHoldOutcome CreditStore::Release(const std::string& hold_id) {
  if (!LooksLikeUuid(hold_id)) return HoldNotFound{};
  return Flatten<ReleaseHoldOutcome>(
      db_.Run("credit_release", [&](pqxx::connection& c) -> ReleaseHoldOutcome {
        pqxx::nontransaction n(c);
        pqxx::row row = Exec1(n, "credit_release", hold_id);
        const std::string outcome = row["outcome"].as<std::string>();
        if (outcome == "released" || outcome == "already_released") {
          return HoldReleased{
              hold_id, row["account_id"].as<std::string>(), row["amount"].as<std::int64_t>(),
              row["released_at"].as<std::string>(""), outcome == "already_released"};
        }
        if (outcome == "committed") return HoldWasCommitted{row["amount"].as<std::int64_t>()};
        if (outcome == "unknown_hold") return HoldNotFound{};
        return DbFailure{DbFailureKind::kInternal, "paintlock_credit_release: outcome " + outcome};
      }));
}

TopUpOutcome CreditStore::TopUp(const std::string& account_id, const std::string& idempotency_key,
                                std::int64_t amount) {
  return Flatten<TopUpOutcome>(db_.Run("credit_topup", [&](pqxx::connection& c) -> TopUpOutcome {
    pqxx::nontransaction n(c);
    pqxx::row row =
        Exec1(n, "credit_topup", account_id, idempotency_key, amount, kMaxCreditBalance);
    const std::string outcome = row["outcome"].as<std::string>();
    if (outcome == "credited" || outcome == "replayed") {
      return TopUpApplied{account_id, row["amount"].as<std::int64_t>(),
                          row["balance_after"].as<std::int64_t>(),
                          row["created_at"].as<std::string>(), outcome == "replayed"};
    }
    if (outcome == "key_reused") return IdempotencyKeyReused{row["amount"].as<std::int64_t>()};
    if (outcome == "balance_limit")
      return BalanceLimitReached{row["balance_after"].as<std::int64_t>()};
    return DbFailure{DbFailureKind::kInternal, "paintlock_credit_topup: outcome " + outcome};
  }));
}

DbResult<std::optional<CreditAccountView>> CreditStore::Account(const std::string& account_id) {
  using Result = std::optional<CreditAccountView>;
  if (!IsValidAccountId(account_id)) return Result{};
  return db_.Run("credit_account_get", [&](pqxx::connection& c) -> Result {
    pqxx::nontransaction n(c);
    pqxx::result r = Exec(n, "credit_account_get", account_id);
    if (r.empty()) return std::nullopt;
    CreditAccountView v;
    v.id = r[0]["id"].as<std::string>();
    v.balance = r[0]["balance"].as<std::int64_t>();
    v.held = r[0]["held"].as<std::int64_t>();
    v.available = r[0]["available"].as<std::int64_t>();
    v.created_at = r[0]["created_at"].as<std::string>();
    v.updated_at = r[0]["updated_at"].as<std::string>();
    return v;
  });
}

DbResult<std::optional<CreditHoldView>> CreditStore::GetHold(const std::string& hold_id) {
  using Result = std::optional<CreditHoldView>;
  if (!LooksLikeUuid(hold_id)) return Result{};
  return db_.Run("credit_hold_get", [&](pqxx::connection& c) -> Result {
    pqxx::nontransaction n(c);
    pqxx::result r = Exec(n, "credit_hold_get", hold_id);
    if (r.empty()) return std::nullopt;
    return HoldViewOf(r[0]);
  });
}

DbResult<std::vector<CreditHoldView>> CreditStore::Holds(const std::string& account_id,
                                                         bool include_closed) {
  using Result = std::vector<CreditHoldView>;
  if (!IsValidAccountId(account_id)) return Result{};
  return db_.Run("credit_holds_list", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    Result out;
    for (const auto& row : Exec(n, "credit_holds_list", account_id, include_closed)) {
      out.push_back(HoldViewOf(row));
    }
    return out;
  });
}

DbResult<std::int64_t> CreditStore::Sweep(int batch) {
  std::int64_t total = 0;
  // Short batches: each is its own transaction, so a sweep of a large backlog
  // never holds many rows locked at once.
  for (;;) {
    auto closed = db_.Run("credit_sweep", [&](pqxx::connection& c) {
      pqxx::nontransaction n(c);
      return Exec1(n, "credit_sweep", batch)[0].as<std::int64_t>();
    });
    if (auto* failure = std::get_if<DbFailure>(&closed)) return *failure;
    total += std::get<std::int64_t>(closed);
    if (std::get<std::int64_t>(closed) < batch) return total;
  }
}

}  // namespace paintlock::locks
