// What Stripe says of a Checkout Session, applied to the reservations, and
// the refunds paid for late payments (sql/migrations/0002:
// paintlock_apply_session, paintlock_record_refund). webhooks::Fulfilment
// decides around these; this store only runs them. Thread-safe: every call
// runs on its own pooled connection.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "locks/database.h"
#include "locks/sale_contacts.h"

namespace paintlock::locks {

// The cart of a checkout made while the database was down
// (PAINTLOCK_ON_DATABASE_DOWN=sell), as its session's metadata carries it
// (webhooks/offline_sale.h): the database has no reservation for it.
struct OfflineCart {
  std::vector<std::string> paintings;      // sorted, without duplicates
  std::vector<std::int64_t> prices_minor;  // the price charged for each, same order
  std::string currency;
};

// What Stripe said of one session (empty fields: not said).
struct SessionFacts {
  std::string session_id;
  std::string status;                  // open | complete | expired
  std::string payment_status;          // paid | unpaid | no_payment_required
  std::string payment_intent;          // may be empty
  std::string reservation_id;          // from metadata / client_reference_id; ignored unless a UUID
  std::optional<OfflineCart> offline;  // set for a checkout made while the database was down
  SaleContact contact;                 // the buyer's details, once the session is complete
};

struct SessionApplied {
  std::string outcome;  // as paintlock_apply_session answers; refund_needed: the caller refunds
  std::string reservation_id;  // empty when no reservation is known
  std::string payment_intent;  // empty when none is known
};

class SessionStore {
 public:
  SessionStore(Database& db, std::chrono::seconds delayed_payment_hold)
      : db_(db), delayed_payment_hold_(delayed_payment_hold) {}

  // Applies `facts` in one transaction with the dedup row of `event_id`
  // (empty when the session was retrieved; `event_type` is then
  // "session.retrieved"), audited as `actor`; a delayed payment holds for
  // delayed_payment_hold. Availability listeners hear of the reservation
  // afterwards.
  DbResult<SessionApplied> Apply(const SessionFacts& facts, const std::string& event_id,
                                 const std::string& event_type, const std::string& actor);

  // As Apply, for a session made while the database was down
  // (facts.offline set, facts.reservation_id the id the gateway chose): the
  // first fact that it may have been paid makes its reservation, holding
  // nothing, so it is applied as a late payment — sold if every painting is
  // still free, else refund_needed — and audited as an offline sale
  // (sql/migrations/0011_offline_sales.sql). Idempotent in any order.
  DbResult<SessionApplied> ApplyOffline(const SessionFacts& facts, const std::string& event_id,
                                        const std::string& event_type, const std::string& actor);

  // Records Stripe's refund `refund_id` of the reservation's late payment;
  // false when one was recorded already.
  DbResult<bool> RecordRefund(const std::string& reservation_id, const std::string& refund_id,
                              const std::string& actor);

 private:
  // Tells availability listeners of the reservation an apply touched.
  DbResult<SessionApplied> Published(DbResult<SessionApplied> applied);

  Database& db_;
  const std::chrono::seconds delayed_payment_hold_;
};

}  // namespace paintlock::locks
