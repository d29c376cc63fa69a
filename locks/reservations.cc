#include "locks/reservations.h"

#include <nlohmann/json.hpp>

namespace paintlock::locks {

std::string TextArrayLiteral(const std::vector<std::string>& items) {
  std::string out = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out.push_back(',');
    out.push_back('"');
    for (char c : items[i]) {
      if (c == '"' || c == '\\') out.push_back('\\');
      out.push_back(c);
    }
    out.push_back('"');
  }
  out.push_back('}');
  return out;
}

bool LooksLikeUuid(const std::string& text) {
  if (text.size() != 36) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (c != '-') return false;
    } else if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))) {
      return false;
    }
  }
  return true;
}

ReserveOutcome ReservationStore::Reserve(const std::vector<std::string>& paintings,
                                         const std::optional<std::string>& buyer_ref) {
  const std::string cart = TextArrayLiteral(paintings);
  auto rows = db_.Run("reserve", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);  // one statement: its own transaction
    return n.exec_prepared("reserve", cart, static_cast<int>(hold_ttl_.count()), buyer_ref);
  });
  if (auto* failure = std::get_if<DbFailure>(&rows)) return *failure;
  const pqxx::result& r = std::get<pqxx::result>(rows);

  // Precedence when several paintings are in the way: an unknown painting
  // (404) before a sold one, a sold one before a held one, and take-over only
  // when nothing else stands in the way.
  std::optional<Sold> sold;
  std::optional<Busy> busy;
  TakeOverNeeded takeover;
  for (const auto& row : r) {
    const std::string outcome = row["outcome"].as<std::string>();
    if (outcome == "granted") {
      return Granted{row["reservation_id"].as<std::string>(), row["until"].as<std::string>()};
    }
    const std::string painting = row["painting_id"].as<std::string>();
    if (outcome == "unknown") return Unknown{painting};
    if (outcome == "sold" && !sold) sold = Sold{painting};
    if (outcome == "busy" && !busy) {
      busy = Busy{painting, row["until"].as<std::string>(), row["seconds_until"].as<int>()};
    }
    if (outcome == "takeover") {
      takeover.sessions.push_back({painting, row["reservation_id"].as<std::string>(),
                                   row["stripe_session_id"].as<std::string>()});
    }
  }
  if (sold) return *sold;
  if (busy) return *busy;
  if (!takeover.sessions.empty()) return takeover;
  return DbFailure{DbFailureKind::kInternal, "paintlock_reserve returned no outcome"};
}

DbResult<bool> ReservationStore::AttachSession(const std::string& reservation_id,
                                               const std::string& session_id,
                                               std::int64_t expires_at_unix) {
  return db_.Run("attach_session", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return n.exec_prepared1("attach_session", reservation_id, session_id, expires_at_unix)[0]
        .as<bool>();
  });
}

DbResult<ReleaseOutcome> ReservationStore::Release(const std::string& reservation_id,
                                                   const std::string& reason,
                                                   const std::string& actor) {
  if (!LooksLikeUuid(reservation_id)) return ReleaseOutcome{ReleaseResult::kNotFound, ""};
  return db_.Run("release", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    pqxx::row row = n.exec_prepared1("release", reservation_id, reason, actor);
    if (row[0].is_null()) return ReleaseOutcome{ReleaseResult::kNotFound, ""};
    std::string state = row[0].as<std::string>();
    return ReleaseOutcome{state == "released" ? ReleaseResult::kReleased : ReleaseResult::kNotHeld,
                          state};
  });
}

DbResult<std::optional<ReservationView>> ReservationStore::Get(const std::string& reservation_id) {
  using Result = std::optional<ReservationView>;
  if (!LooksLikeUuid(reservation_id)) return Result{};
  return db_.Run("reservation_get", [&](pqxx::connection& c) -> Result {
    pqxx::nontransaction n(c);
    pqxx::result r = n.exec_prepared("reservation_get", reservation_id);
    if (r.empty()) return std::nullopt;
    const auto& row = r[0];
    ReservationView v;
    v.id = row["id"].as<std::string>();
    v.state = row["state"].as<std::string>();
    v.released_reason = row["released_reason"].as<std::string>("");
    v.held_until = row["held_until"].as<std::string>();
    v.hold_live = row["hold_live"].as<bool>();
    v.holds = row["holds"].as<bool>();
    v.amount_minor = row["amount_minor"].as<std::int64_t>();
    v.currency = row["currency"].as<std::string>();
    v.stripe_session_id = row["stripe_session_id"].as<std::string>("");
    v.stripe_status = row["stripe_status"].as<std::string>("");
    v.created_at = row["created_at"].as<std::string>();
    v.paintings = nlohmann::json::parse(row["paintings"].as<std::string>("[]"))
                      .get<std::vector<std::string>>();
    return v;
  });
}

}  // namespace paintlock::locks
