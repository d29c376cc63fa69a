#include "locks/sessions.h"

#include "locks/availability_publisher.h"
#include "locks/reservations.h"
#include "locks/statements.h"

namespace paintlock::locks {

DbResult<SessionApplied> SessionStore::Apply(const SessionFacts& facts, const std::string& event_id,
                                             const std::string& event_type,
                                             const std::string& actor) {
  const std::optional<std::string> reservation =
      LooksLikeUuid(facts.reservation_id) ? NullIfEmpty(facts.reservation_id) : std::nullopt;
  auto applied = db_.Run("apply_session", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    pqxx::row row = Exec1(n, "apply_session", NullIfEmpty(event_id), event_type, facts.session_id,
                          reservation, NullIfEmpty(facts.status), NullIfEmpty(facts.payment_status),
                          NullIfEmpty(facts.payment_intent), actor,
                          static_cast<int>(delayed_payment_hold_.count()));
    return SessionApplied{row["outcome"].as<std::string>(),
                          row["reservation_id"].as<std::string>(""),
                          row["payment_intent"].as<std::string>("")};
  });
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
