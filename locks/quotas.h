// Exact daily quotas per subject (locks/QUOTAS.md).
//
// A quota is a name, a daily limit and the time zone whose midnight starts a
// new day ("downloads", 5, "UTC"). A subject is who is counted: a visitor
// (the HMAC of the client address, base/visitor.h) or a subject named by
// a server-to-server caller. The two are kept apart by a prefix, so a named
// subject can never spend a visitor's quota.
//
// Consume() decides in one statement (sql/queries/quota_consume.sql): the
// guarded upsert checks and counts together under the row's lock, so any
// number of concurrent requests through any number of gateways allow at most
// `limit` a day, and a refused request counts nothing. The day is computed in
// the statement from the database clock; a new day's first request resets the
// count, so no job runs at midnight.
//
// Thread-safe: the store is immutable after construction and every call runs
// on its own pooled connection.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "locks/async_pool.h"
#include "locks/database.h"
#include "locks/quotas_config.h"

namespace paintlock::locks {

// A subject named by a server-to-server caller: 1–128 printable ASCII
// characters, not starting or ending with a space. Empty when valid, else
// a sentence saying what is wrong.
std::string SubjectNameProblem(const std::string& subject);

// The stored forms of the two kinds of subject.
std::string VisitorSubject(const std::string& visitor_id);  // "visitor:" + id
std::string NamedSubject(const std::string& name);          // "subject:" + name

struct QuotaAllowed {
  int used = 0;  // including this request
  int limit = 0;
  std::string resets_at;  // RFC 3339, UTC: the next midnight in the quota's zone
};
struct QuotaExceeded {
  int used = 0;  // today's count, unchanged by this request
  int limit = 0;
  std::string resets_at;
  int retry_after_seconds = 1;  // until resets_at, at least 1
};
using ConsumeOutcome = std::variant<QuotaAllowed, QuotaExceeded, DbFailure>;

struct QuotaUsage {
  int used = 0;  // today
  int limit = 0;
  std::string resets_at;
  int retry_after_seconds = 1;
  std::string today;       // YYYY-MM-DD in the quota's zone
  std::string stored_day;  // the day the stored row counts; empty: no row
  int stored_used = 0;
  std::string last_at;  // when a request was last counted; empty: never
};

class QuotaStore {
 public:
  // `policies` must be valid (ParseQuotaPolicies) with distinct names.
  QuotaStore(Database& db, std::vector<QuotaPolicy> policies)
      : db_(db), policies_(std::move(policies)) {}

  // nullptr for a quota that is not configured.
  const QuotaPolicy* Find(const std::string& name) const;
  const std::vector<QuotaPolicy>& policies() const { return policies_; }

  // Counts one request of `subject` (a stored form: VisitorSubject or
  // NamedSubject) if today's count is below the limit.
  ConsumeOutcome Consume(const QuotaPolicy& quota, const std::string& subject);
  // The same consume with asynchronous libpq (quota_consume.sql as `statement`
  // of `pool`): `done` gets the outcome on the pool's thread; `wanted` as
  // AsyncPool::Submit's. `quota` must outlive the call (the store's own).
  void ConsumeAsync(AsyncPool& pool, int statement, const QuotaPolicy& quota,
                    const std::string& subject, std::function<void(ConsumeOutcome)> done,
                    std::function<bool()> wanted = nullptr);

  // Today's count, counting nothing.
  DbResult<QuotaUsage> Usage(const QuotaPolicy& quota, const std::string& subject);

  // Forgets the subject's count; audited as `actor`. Returns today's count
  // before the reset (0 when there was none).
  DbResult<int> Reset(const QuotaPolicy& quota, const std::string& subject,
                      const std::string& actor, const std::optional<std::string>& reason);

  // The configured time zones the database does not know (empty: all good).
  DbResult<std::vector<std::string>> UnknownTimeZones();

 private:
  Database& db_;
  const std::vector<QuotaPolicy> policies_;
};

}  // namespace paintlock::locks
