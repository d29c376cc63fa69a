#include "locks/sessions.h"

#include "locks/availability_publisher.h"
#include "locks/reservations.h"
#include "locks/statements.h"

namespace paintlock::locks {

namespace {

// The row of apply_session or apply_offline_session.
SessionApplied SessionAppliedOf(const pqxx::row& row) {
  return SessionApplied{row["outcome"].as<std::string>(), row["reservation_id"].as<std::string>(""),
                        row["payment_intent"].as<std::string>("")};
}

std::string BigintArrayLiteral(const std::vector<std::int64_t>& values) {
  std::string out = "{";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + std::to_string(values[i]);
  return out + "}";
}

}  // namespace

DbResult<SessionApplied> SessionStore::Apply(const SessionFacts& facts, const std::string& event_id,
                                             const std::string& event_type,
                                             const std::string& actor) {
  const std::optional<std::string> reservation =
      LooksLikeUuid(facts.reservation_id) ? NullIfEmpty(facts.reservation_id) : std::nullopt;
  auto applied = db_.Run("apply_session", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return SessionAppliedOf(Exec1(
        n, "apply_session", NullIfEmpty(event_id), event_type, facts.session_id, reservation,
        NullIfEmpty(facts.status), NullIfEmpty(facts.payment_status),
        NullIfEmpty(facts.payment_intent), actor, static_cast<int>(delayed_payment_hold_.count())));
  });
  return Published(std::move(applied));
}

DbResult<SessionApplied> SessionStore::ApplyOffline(const SessionFacts& facts,
                                                    const std::string& event_id,
                                                    const std::string& event_type,
                                                    const std::string& actor) {
  if (!facts.offline || !LooksLikeUuid(facts.reservation_id) ||
      facts.offline->paintings.size() != facts.offline->prices_minor.size()) {
    return DbFailure{DbFailureKind::kInternal, "an offline session without its cart or id"};
  }
  const std::string paintings = TextArrayLiteral(facts.offline->paintings);
  const std::string prices = BigintArrayLiteral(facts.offline->prices_minor);
  auto applied = db_.Run("apply_offline_session", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return SessionAppliedOf(Exec1(
        n, "apply_offline_session", NullIfEmpty(event_id), event_type, facts.session_id,
        facts.reservation_id, NullIfEmpty(facts.status), NullIfEmpty(facts.payment_status),
        NullIfEmpty(facts.payment_intent), actor, static_cast<int>(delayed_payment_hold_.count()),
        paintings, prices, facts.offline->currency));
  });
  return Published(std::move(applied));
}

DbResult<SessionApplied> SessionStore::Published(DbResult<SessionApplied> applied) {
  if (const auto* a = std::get_if<SessionApplied>(&applied)) {
    db_.availability().ReservationChanged(a->reservation_id);
  }
  return applied;
}

DbResult<bool> SessionStore::RecordRefund(const std::string& reservation_id,
                                          const std::string& refund_id, const std::string& actor) {
  return db_.Run("record_refund", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return Exec1(n, "record_refund", reservation_id, refund_id, actor)[0].as<bool>();
  });
}

}  // namespace paintlock::locks
