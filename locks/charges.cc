#include "locks/charges.h"

#include "locks/availability_publisher.h"
#include "locks/reservations.h"
#include "locks/statements.h"

namespace paintlock::locks {

namespace {

ChargeApplied ChargeAppliedOf(const pqxx::row& row) {
  return ChargeApplied{row["outcome"].as<std::string>(), row["reservation_id"].as<std::string>(""),
                       row["session_id"].as<std::string>("")};
}

}  // namespace

DbResult<ChargeApplied> ChargeStore::ApplyRefund(const ChargeRefundFacts& facts,
                                                 const std::string& event_id,
                                                 const std::string& event_type,
                                                 const std::string& actor) {
  auto applied = db_.Run("apply_charge_refund", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return ChargeAppliedOf(Exec1(n, "apply_charge_refund", event_id, event_type, facts.charge_id,
                                 facts.payment_intent, facts.amount_minor, facts.refunded_minor,
                                 facts.currency, facts.fully_refunded, actor));
  });
  if (const auto* a = std::get_if<ChargeApplied>(&applied); a && a->outcome == "unsold") {
    db_.availability().ReservationChanged(a->reservation_id);
  }
  return applied;
}

DbResult<ChargeApplied> ChargeStore::ApplyDispute(const DisputeFacts& facts,
                                                  const std::string& event_id,
                                                  const std::string& event_type,
                                                  std::int64_t event_created_unix,
                                                  const std::string& actor) {
  return db_.Run("apply_dispute", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return ChargeAppliedOf(Exec1(n, "apply_dispute", event_id, event_type, event_created_unix,
                                 facts.dispute_id, NullIfEmpty(facts.charge_id),
                                 facts.payment_intent, facts.amount_minor, facts.currency,
                                 facts.reason, facts.status, actor));
  });
}

}  // namespace paintlock::locks
