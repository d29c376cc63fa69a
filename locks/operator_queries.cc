#include "locks/operator_queries.h"

#include <array>
#include <vector>

#include "locks/availability_publisher.h"
#include "locks/reservations.h"
#include "locks/row_json.h"
#include "locks/statements.h"

namespace paintlock::locks {

namespace {

// A sweep statement's row as counts: `columns` names the column of each
// SweepCounts field in declaration order; nullptr leaves a field 0.
SweepCounts CountsOf(const pqxx::row& row, const std::array<const char*, 7>& columns) {
  std::array<long long, 7> v{};
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i]) v[i] = row[columns[i]].as<long long>();
  }
  return SweepCounts{v[0], v[1], v[2], v[3], v[4], v[5], v[6]};
}

std::string FenceArrayLiteral(const std::vector<std::int64_t>& fences) {
  std::string out = "{";
  for (size_t i = 0; i < fences.size(); ++i) out += (i ? "," : "") + std::to_string(fences[i]);
  return out + "}";
}

// An admin_reservations row as the fenced release reads it.
FencedReservation FencedReservationOf(const pqxx::row& row) {
  FencedReservation s;
  s.reservation_id = row["id"].as<std::string>();
  s.state = row["state"].as<std::string>();
  s.released_reason = row["released_reason"].as<std::string>("");
  s.session_id = row["stripe_session_id"].as<std::string>("");
  s.stripe_status = row["stripe_status"].as<std::string>("");
  for (const auto& item : nlohmann::json::parse(row["items"].as<std::string>("[]"))) {
    s.paintings.push_back(item["painting"].get<std::string>());
    s.fences.push_back(item["fence"].get<std::int64_t>());
  }
  return s;
}

}  // namespace

DbResult<nlohmann::json> OperatorQueries::Events(const std::optional<std::string>& session,
                                                 const std::optional<std::string>& since_instant,
                                                 const std::optional<long long>& since_seconds,
                                                 long long limit) {
  return db_.Run("admin_events", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return RowsJson(Exec(n, "admin_events", session, since_instant, since_seconds, limit));
  });
}

DbResult<HoldsListing> OperatorQueries::Holds(const std::optional<std::string>& painting,
                                              const std::optional<std::string>& condition,
                                              const std::optional<long long>& older_than_seconds,
                                              long long recent_seconds) {
  return db_.Run("admin_holds", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    HoldsListing l;
    if (painting) l.painting_known = !Exec(n, "admin_painting", *painting).empty();
    l.holds =
        RowsJson(Exec(n, "admin_holds", painting, condition, older_than_seconds, recent_seconds),
                 {"paintings"});
    return l;
  });
}

DbResult<StoryRows> OperatorQueries::Story(const std::optional<std::string>& painting,
                                           const std::optional<std::string>& reservation,
                                           const std::optional<std::string>& session) {
  return db_.Run("admin_show", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    StoryRows s;
    if (painting) {
      pqxx::result p = Exec(n, "admin_painting", *painting);
      if (p.empty()) return s;
      s.painting = RowJson(p[0]);
    }
    s.reservations = RowsJson(Exec(n, "admin_reservations", painting, reservation, session),
                              {"items", "disputes", "buyer_contact"});
    std::vector<std::string> ids, sessions;
    if (session) sessions.push_back(*session);
    for (const auto& r : s.reservations) {
      ids.push_back(r["id"].get<std::string>());
      // Listed once; a repeat would change nothing (the statements match with ANY).
      if (!r["stripe_session_id"].is_null() && (!session || r["stripe_session_id"] != *session)) {
        sessions.push_back(r["stripe_session_id"].get<std::string>());
      }
    }
    const std::string id_array = TextArrayLiteral(ids);
    const std::string session_array = TextArrayLiteral(sessions);
    s.events = RowsJson(Exec(n, "admin_story_events", session_array, id_array));
    s.audit =
        RowsJson(Exec(n, "admin_story_audit", painting, id_array, session_array), {"details"});
    return s;
  });
}

DbResult<nlohmann::json> OperatorQueries::ReconcileCandidates() {
  return db_.Run("admin_reconcile_candidates", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return RowsJson(Exec(n, "admin_reconcile_candidates"), {"paintings"});
  });
}

DbResult<std::optional<FencedReservation>> OperatorQueries::Fenced(
    const std::string& reservation_id) {
  return db_.Run("admin_reservations", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    const std::optional<std::string> none;
    pqxx::result r = Exec(n, "admin_reservations", none, reservation_id, none);
    return r.empty() ? std::nullopt : std::optional<FencedReservation>(FencedReservationOf(r[0]));
  });
}

DbResult<FencedReleaseAnswer> OperatorQueries::ReleaseFenced(
    const FencedReservation& seen, const std::string& reason, const std::string& actor, bool forced,
    const std::optional<std::string>& stripe_status) {
  auto answer = db_.Run("admin_release", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    pqxx::row row = Exec1(n, "admin_release", seen.reservation_id, seen.state,
                          FenceArrayLiteral(seen.fences), reason, actor, forced, stripe_status);
    return FencedReleaseAnswer{row["outcome"].as<std::string>(),
                               row["state_now"].as<std::string>("")};
  });
  if (const auto* a = std::get_if<FencedReleaseAnswer>(&answer)) {
    if (a->outcome == "released") db_.availability().ReservationChanged(seen.reservation_id);
  }
  return answer;
}

DbResult<std::optional<std::string>> OperatorQueries::ReservationState(
    const std::string& reservation_id) {
  return db_.Run("admin_reservation_state", [&](pqxx::connection& c) -> std::optional<std::string> {
    pqxx::nontransaction n(c);
    pqxx::result r = Exec(n, "admin_reservation_state", reservation_id);
    if (r.empty()) return std::nullopt;
    return r[0]["state"].as<std::string>();
  });
}

DbResult<SoldFlagChange> OperatorQueries::SetSoldFlag(const std::string& painting, bool sold,
                                                      const std::string& reason,
                                                      const std::string& actor) {
  const char* statement = sold ? "admin_mark_sold" : "admin_mark_unsold";
  auto changed = db_.Run(statement, [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    pqxx::row row = Exec1(n, statement, painting, reason, actor);
    SoldFlagChange change;
    change.outcome = row["outcome"].as<std::string>();
    if (sold) {
      static_cast<HeldBy&>(change) = ReadHeldBy(row);
    } else {
      change.sale = OptionalText(row["sale"]);
    }
    return change;
  });
  if (std::holds_alternative<SoldFlagChange>(changed)) {
    db_.availability().PaintingsChanged({painting});
  }
  return changed;
}

DbResult<SweepCounts> OperatorQueries::SweepPreview(long long older_than_seconds) {
  return db_.Run("admin_sweep_preview", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return CountsOf(Exec1(n, "admin_sweep_preview", older_than_seconds),
                    {"reservations", "released", "refunded", "lapsed", "items", "holders",
                     "kept_stripe_unknown"});
  });
}

DbResult<SweepCounts> OperatorQueries::SweepBatch(long long older_than_seconds, int batch) {
  return db_.Run("admin_sweep", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return CountsOf(Exec1(n, "admin_sweep", older_than_seconds, batch),
                    {"reservations_deleted", "released_deleted", "refunded_deleted",
                     "lapsed_deleted", "items_deleted", "holders_cleared", nullptr});
  });
}

}  // namespace paintlock::locks
