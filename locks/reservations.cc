#include "locks/reservations.h"

#include <map>
#include <nlohmann/json.hpp>

#include "base/ids.h"
#include "base/log.h"
#include "locks/availability_publisher.h"
#include "locks/lines.h"
#include "locks/statements.h"

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

std::optional<std::string> NullIfEmpty(const std::string& text) {
  if (text.empty()) return std::nullopt;
  return text;
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

std::optional<std::string> NewReservationId() {
  std::optional<std::string> hex = base::RandomHex(16);
  if (!hex) return std::nullopt;
  std::string& h = *hex;
  h[12] = '4';                                                  // version 4: random
  h[16] = "89ab"[std::stoi(h.substr(16, 1), nullptr, 16) & 3];  // RFC 4122 variant
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20);
}

ReserveOutcome ReservationStore::Reserve(const std::vector<std::string>& paintings,
                                         const std::optional<std::string>& buyer_ref,
                                         const std::optional<std::string>& line_token) {
  const std::string cart = TextArrayLiteral(paintings);
  std::optional<std::string> line_digest;
  if (line_token) line_digest = LineTokenDigest(*line_token);
  // Chosen here so that an outcome lost with the connection can be looked up.
  const std::optional<std::string> id = NewReservationId();
  auto rows = db_.Run("reserve", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);  // one statement: its own transaction
    return Exec(n, "reserve", cart, static_cast<int>(hold_ttl_.count()), buyer_ref, id,
                line_digest);
  });
  if (auto* failure = std::get_if<DbFailure>(&rows)) {
    if (failure->may_have_committed && id) return Recover(*id, *failure);
    return *failure;
  }
  const pqxx::result& r = std::get<pqxx::result>(rows);

  // Precedence when several paintings are in the way: an unknown painting
  // (404) before a sold or withdrawn one, that before a held one, and take-over only
  // when nothing else stands in the way.
  std::optional<std::variant<Sold, Withdrawn>> sold;
  std::optional<Busy> busy;
  TakeOverNeeded takeover;
  std::map<std::string, std::int64_t> line_positions;
  for (const auto& row : r) {
    const std::string outcome = row["outcome"].as<std::string>();
    if (outcome == "granted") {
      db_.availability().PaintingsChanged(paintings);
      return Granted{row["reservation_id"].as<std::string>(), row["until"].as<std::string>()};
    }
    const std::string painting = row["painting_id"].as<std::string>();
    if (outcome == "unknown") return Unknown{painting};
    if (outcome == "sold" && !sold) sold = Sold{painting};
    if (outcome == "withdrawn" && !sold) sold = Withdrawn{painting};
    if (outcome == "busy" && !busy) {
      busy = Busy{painting, row["until"].as<std::string>(), row["seconds_until"].as<int>()};
    }
    if (outcome == "in_line" && !row["line_position"].is_null()) {
      line_positions[painting] = row["line_position"].as<std::int64_t>();
    }
    if (outcome == "takeover") {
      takeover.sessions.push_back({painting, row["reservation_id"].as<std::string>(),
                                   row["stripe_session_id"].as<std::string>()});
    }
  }
  if (sold) return std::visit([](const auto& off) -> ReserveOutcome { return off; }, *sold);
  if (busy) {
    if (auto it = line_positions.find(busy->painting); it != line_positions.end()) {
      busy->line_position = it->second;
    }
    return *busy;
  }
  if (!takeover.sessions.empty()) return takeover;
  return DbFailure{DbFailureKind::kInternal, "paintlock_reserve returned no outcome"};
}

ReserveOutcome ReservationStore::Recover(const std::string& id, const DbFailure& lost) {
  auto found = LookUp(id);
  if (std::holds_alternative<DbFailure>(found)) return lost;  // still unknown: say so
  const auto& view = std::get<std::optional<ReservationView>>(found);
  if (!view) return DbFailure{DbFailureKind::kUnavailable, lost.detail};  // it never committed
  base::LogInfo("reservation_recovered", {{"reservation_id", id}, {"state", view->state}});
  db_.availability().PaintingsChanged(view->paintings);
  if (view->state == "held" && view->holds && view->hold_live) {
    return Granted{view->id, view->held_until};
  }
  // Committed, and already gone again (released by someone in between): for
  // the caller that is as good as never granted.
  return DbFailure{DbFailureKind::kUnavailable, "reservation committed but no longer held"};
}

DbResult<bool> ReservationStore::AttachSession(const std::string& reservation_id,
                                               const std::string& session_id,
                                               std::int64_t expires_at_unix) {
  // Idempotent: attaching the same session again changes nothing.
  return db_.RunIdempotent("attach_session", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return Exec1(n, "attach_session", reservation_id, session_id, expires_at_unix)[0].as<bool>();
  });
}

DbResult<ReleaseOutcome> ReservationStore::Release(const std::string& reservation_id,
                                                   const std::string& reason,
                                                   const std::string& actor) {
  if (!LooksLikeUuid(reservation_id)) return ReleaseOutcome{ReleaseResult::kNotFound, ""};
  // Idempotent: a second release finds the reservation released already.
  auto released = db_.RunIdempotent("release", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    pqxx::row row = Exec1(n, "release", reservation_id, reason, actor);
    if (row[0].is_null()) return ReleaseOutcome{ReleaseResult::kNotFound, ""};
    std::string state = row[0].as<std::string>();
    return ReleaseOutcome{state == "released" ? ReleaseResult::kReleased : ReleaseResult::kNotHeld,
                          state};
  });
  if (const auto* o = std::get_if<ReleaseOutcome>(&released)) {
    if (o->result == ReleaseResult::kReleased)
      db_.availability().ReservationChanged(reservation_id);
  }
  return released;
}

DbResult<std::optional<ReservationView>> ReservationStore::LookUp(
    const std::string& reservation_id) {
  return db_.LookUpPatiently([&] { return Get(reservation_id); });
}

DbResult<std::optional<ReservationView>> ReservationStore::Get(const std::string& reservation_id) {
  using Result = std::optional<ReservationView>;
  if (!LooksLikeUuid(reservation_id)) return Result{};
  return db_.RunIdempotent("reservation_get", [&](pqxx::connection& c) -> Result {
    pqxx::nontransaction n(c);
    pqxx::result r = Exec(n, "reservation_get", reservation_id);
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
