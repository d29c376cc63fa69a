#include "locks/quotas.h"

#include "locks/reservations.h"
#include "locks/row_columns.h"
#include "locks/statements.h"

namespace paintlock::locks {

std::string SubjectNameProblem(const std::string& subject) {
  if (subject.empty()) return "The subject must not be empty.";
  if (subject.size() > 128) return "The subject must be at most 128 characters.";
  for (char c : subject) {
    if (c < 0x20 || c > 0x7e) {
      return "The subject must be printable ASCII (no control characters, no non-ASCII "
             "characters).";
    }
  }
  if (subject.front() == ' ' || subject.back() == ' ') {
    return "The subject must not start or end with a space.";
  }
  return "";
}

std::string VisitorSubject(const std::string& visitor_id) { return "visitor:" + visitor_id; }
std::string NamedSubject(const std::string& name) { return "subject:" + name; }

const QuotaPolicy* QuotaStore::Find(const std::string& name) const {
  for (const auto& p : policies_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

namespace {

// quota_consume's row as the consume's outcome.
ConsumeOutcome Decided(const QuotaPolicy& quota, const Column& column) {
  const int used = std::stoi(column("used"));
  const std::string resets_at = column("resets_at");
  if (column("allowed") == "t") return QuotaAllowed{used, quota.limit, resets_at};
  return QuotaExceeded{used, quota.limit, resets_at, std::stoi(column("retry_after"))};
}

}  // namespace

ConsumeOutcome QuotaStore::Consume(const QuotaPolicy& quota, const std::string& subject) {
  return Flatten<ConsumeOutcome>(
      db_.Run("quota_consume", [&](pqxx::connection& c) -> ConsumeOutcome {
        pqxx::nontransaction n(c);  // one statement: its own transaction
        const pqxx::row row =
            Exec1(n, "quota_consume", quota.name, subject, quota.limit, quota.time_zone);
        return Decided(quota, ColumnsOf(row));
      }));
}

void QuotaStore::ConsumeAsync(AsyncPool& pool, int statement, const QuotaPolicy& quota,
                              const std::string& subject, std::function<void(ConsumeOutcome)> done,
                              std::function<bool()> wanted) {
  pool.Submit(
      statement, {quota.name, subject, std::to_string(quota.limit), quota.time_zone},
      [&quota, done = std::move(done)](AsyncReply reply) {
        done(FromReply<ConsumeOutcome>(
            reply, "quota_consume", [&](const Column& column) { return Decided(quota, column); }));
      },
      std::move(wanted));
}

DbResult<QuotaUsage> QuotaStore::Usage(const QuotaPolicy& quota, const std::string& subject) {
  return db_.Run("quota_get", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    pqxx::row row = Exec1(n, "quota_get", quota.name, subject, quota.time_zone);
    QuotaUsage u;
    u.used = row["used"].as<int>();
    u.limit = quota.limit;
    u.resets_at = row["resets_at"].as<std::string>();
    u.retry_after_seconds = row["retry_after"].as<int>();
    u.today = row["today"].as<std::string>();
    u.stored_day = row["stored_day"].as<std::string>("");
    u.stored_used = row["stored_used"].as<int>(0);
    u.last_at = row["last_at"].as<std::string>("");
    return u;
  });
}

DbResult<int> QuotaStore::Reset(const QuotaPolicy& quota, const std::string& subject,
                                const std::string& actor,
                                const std::optional<std::string>& reason) {
  return db_.Run("quota_reset", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return Exec1(n, "quota_reset", quota.name, subject, quota.time_zone, actor, reason)[0]
        .as<int>();
  });
}

DbResult<std::vector<std::string>> QuotaStore::UnknownTimeZones() {
  std::vector<std::string> zones;
  for (const auto& p : policies_) zones.push_back(p.time_zone);
  const std::string array = TextArrayLiteral(zones);
  return db_.Run("quota_unknown_time_zones", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    std::vector<std::string> unknown;
    for (const auto& row : Exec(n, "quota_unknown_time_zones", array)) {
      unknown.push_back(row[0].as<std::string>());
    }
    return unknown;
  });
}

}  // namespace paintlock::locks
