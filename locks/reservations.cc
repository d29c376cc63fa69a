#include "locks/reservations.h"

#include <map>
#include <nlohmann/json.hpp>

#include "base/ids.h"
#include "base/log.h"
#include "locks/availability_publisher.h"
#include "locks/lines.h"
#include "locks/row_columns.h"
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
  // Written in place: every reserve makes one.
  unsigned char b[16];
  if (!base::SystemRandom(b, sizeof b)) return std::nullopt;
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4: random
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  std::string id;
  id.reserve(36);
  std::size_t from = 0;
  for (const std::size_t group : {4, 2, 2, 2, 6}) {  // 8-4-4-4-12 hex digits
    if (from > 0) id += '-';
    base::AppendHex(id, b + from, group);
    from += group;
  }
  return id;
}

namespace {

// What paintlock_reserve's rows say (sql/queries/reserve.sql), row `i` read
// through `row(i)`. Precedence when several paintings are in the way: an
// unknown painting (404) before a sold or withdrawn one, that before a held
// one, and take-over only when nothing else stands in the way.
ReserveOutcome ReserveDecided(int rows, const std::function<Column(int)>& row) {
  std::optional<std::variant<Sold, Withdrawn>> sold;
  std::optional<Busy> busy;
  TakeOverNeeded takeover;
  std::map<std::string, std::int64_t> line_positions;
  for (int i = 0; i < rows; ++i) {
    const Column column = row(i);
    const std::string outcome = column("outcome");
    if (outcome == "granted") return Granted{column("reservation_id"), column("until")};
    const std::string painting = column("painting_id");
    if (outcome == "unknown") return Unknown{painting};
    if (outcome == "sold" && !sold) sold = Sold{painting};
    if (outcome == "withdrawn" && !sold) sold = Withdrawn{painting};
    if (outcome == "busy" && !busy) {
      busy = Busy{painting, column("until"), std::stoi(column("seconds_until"))};
    }
    if (const std::string position = column("line_position");
        outcome == "in_line" && !position.empty()) {
      line_positions[painting] = std::stoll(position);
    }
    if (outcome == "takeover") {
      takeover.sessions.push_back(
          {painting, column("reservation_id"), column("stripe_session_id")});
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

// A row of sql/queries/reservation_get.sql.
ReservationView ViewOf(const Column& column) {
  ReservationView v;
  v.id = column("id");
  v.state = column("state");
  v.released_reason = column("released_reason");
  v.held_until = column("held_until");
  v.hold_live = column("hold_live") == "t";
  v.holds = column("holds") == "t";
  v.amount_minor = std::stoll(column("amount_minor"));
  v.currency = column("currency");
  v.stripe_session_id = column("stripe_session_id");
  v.stripe_status = column("stripe_status");
  v.created_at = column("created_at");
  const std::string paintings = column("paintings");
  v.paintings =
      nlohmann::json::parse(paintings.empty() ? "[]" : paintings).get<std::vector<std::string>>();
  return v;
}

// What sql/queries/release.sql's one column says.
ReleaseOutcome ReleaseDecided(const Column& column) {
  const std::string state = column("state");
  if (state.empty()) return ReleaseOutcome{ReleaseResult::kNotFound, ""};
  return ReleaseOutcome{state == "released" ? ReleaseResult::kReleased : ReleaseResult::kNotHeld,
                        state};
}

std::optional<std::string> LineDigestOf(const std::optional<std::string>& line_token) {
  if (!line_token) return std::nullopt;
  return LineTokenDigest(*line_token);
}

}  // namespace

ReserveOutcome ReservationStore::Announced(const std::vector<std::string>& paintings,
                                           ReserveOutcome outcome) {
  if (std::holds_alternative<Granted>(outcome)) db_.availability().PaintingsChanged(paintings);
  return outcome;
}

DbResult<ReleaseOutcome> ReservationStore::Announced(const std::string& reservation_id,
                                                     DbResult<ReleaseOutcome> released) {
  if (const auto* o = std::get_if<ReleaseOutcome>(&released);
      o && o->result == ReleaseResult::kReleased) {
    db_.availability().ReservationChanged(reservation_id);
  }
  return released;
}

ReserveOutcome ReservationStore::Reserve(const std::vector<std::string>& paintings,
                                         const std::optional<std::string>& buyer_ref,
                                         const std::optional<std::string>& line_token) {
  const std::string cart = TextArrayLiteral(paintings);
  const std::optional<std::string> line_digest = LineDigestOf(line_token);
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
  return Announced(paintings, ReserveDecided(static_cast<int>(r.size()),
                                             [&r](int i) { return ColumnsOf(r, i); }));
}

void ReservationStore::ReserveAsync(AsyncPool& pool, ReserveStatements statements,
                                    const std::vector<std::string>& paintings,
                                    const std::optional<std::string>& buyer_ref,
                                    const std::optional<std::string>& line_token,
                                    std::function<void(ReserveOutcome)> done,
                                    std::function<bool()> wanted) {
  const std::optional<std::string> id = NewReservationId();
  pool.Submit(
      statements.reserve,
      {TextArrayLiteral(paintings), std::to_string(hold_ttl_.count()), buyer_ref, id,
       LineDigestOf(line_token)},
      [this, &pool, statements, paintings, id, done = std::move(done)](AsyncReply reply) {
        if (!reply.ok()) {
          const DbFailure failure = reply.Failure("reserve");
          if (!failure.may_have_committed || !id) return done(failure);
          return RecoverAsync(
              pool, statements.reservation_get, *id, failure,
              std::chrono::steady_clock::now() + db_.options().outcome_lookup_patience, done);
        }
        done(Announced(paintings, ReadOrFail<ReserveOutcome>("reserve", [&] {
                         return ReserveDecided(reply.rows(),
                                               [&reply](int i) { return ColumnsOf(reply, i); });
                       })));
      },
      std::move(wanted));
}

void ReservationStore::RecoverAsync(AsyncPool& pool, int statement, const std::string& id,
                                    const DbFailure& lost,
                                    std::chrono::steady_clock::time_point deadline,
                                    std::function<void(ReserveOutcome)> done) {
  // Patient as LookUp(): while the database cannot be reached, asked again
  // until the deadline. No timer is needed: a statement waits in the pool's
  // queue until a connection is back (reconnecting with back-off), or fails
  // after the pool's queue timeout.
  pool.Submit(statement, {id},
              [this, &pool, statement, id, lost, deadline, done](AsyncReply reply) {
                const auto found = ViewFrom(reply);
                if (const auto* f = std::get_if<DbFailure>(&found);
                    f && f->kind == DbFailureKind::kUnavailable &&
                    std::chrono::steady_clock::now() < deadline) {
                  return RecoverAsync(pool, statement, id, lost, deadline, done);
                }
                done(Recovered(id, lost, found));
              });
}

ReserveOutcome ReservationStore::Recover(const std::string& id, const DbFailure& lost) {
  return Recovered(id, lost, LookUp(id));
}

ReserveOutcome ReservationStore::Recovered(const std::string& id, const DbFailure& lost,
                                           const DbResult<std::optional<ReservationView>>& found) {
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
  return Announced(reservation_id, db_.RunIdempotent("release", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return ReleaseDecided(ColumnsOf(Exec1(n, "release", reservation_id, reason, actor)));
  }));
}

void ReservationStore::ReleaseAsync(AsyncPool& pool, int statement,
                                    const std::string& reservation_id, const std::string& reason,
                                    const std::string& actor,
                                    std::function<void(DbResult<ReleaseOutcome>)> done) {
  if (!LooksLikeUuid(reservation_id)) return done(ReleaseOutcome{ReleaseResult::kNotFound, ""});
  pool.Submit(statement, {reservation_id, reason, actor},
              [this, reservation_id, done = std::move(done)](AsyncReply reply) {
                done(Announced(reservation_id, FromReply<DbResult<ReleaseOutcome>>(
                                                   reply, "release", ReleaseDecided)));
              });
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
    return ViewOf(ColumnsOf(r, 0));
  });
}

DbResult<std::optional<ReservationView>> ReservationStore::ViewFrom(const AsyncReply& reply) {
  if (!reply.ok()) return reply.Failure("reservation_get");
  if (reply.rows() == 0) return std::optional<ReservationView>();
  return ReadOrFail<DbResult<std::optional<ReservationView>>>("reservation_get", [&] {
    return std::optional<ReservationView>(ViewOf(ColumnsOf(reply, 0)));
  });
}

}  // namespace paintlock::locks
