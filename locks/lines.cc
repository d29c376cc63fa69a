#include "locks/lines.h"

#include <openssl/sha.h>

#include "base/ids.h"
#include "base/log.h"
#include "locks/availability_publisher.h"
#include "locks/statements.h"

namespace paintlock::locks {

namespace {

constexpr char kTokenPrefix[] = "plt_";
constexpr std::size_t kTokenPrefixSize = sizeof kTokenPrefix - 1;

std::optional<std::int64_t> OptionalInt(const pqxx::field& f) {
  if (f.is_null()) return std::nullopt;
  return f.as<std::int64_t>();
}

LineEntryView EntryOf(const std::string& painting, const pqxx::row& row) {
  LineEntryView v;
  v.painting = painting;
  v.state = row["state"].as<std::string>();
  v.position = OptionalInt(row["entry_position"]);
  v.line_length = row["line_length"].as<std::int64_t>(0);
  v.window_from = row["window_from"].as<std::string>("");
  v.window_until = row["window_until"].as<std::string>("");
  v.starts_in_ms = OptionalInt(row["starts_in_ms"]);
  v.ends_in_ms = OptionalInt(row["ends_in_ms"]);
  v.reservation_id = row["reservation_id"].as<std::string>("");
  return v;
}

}  // namespace

bool LooksLikeLineToken(const std::string& token) {
  if (token.size() != kTokenPrefixSize + 64 || token.compare(0, kTokenPrefixSize, kTokenPrefix))
    return false;
  for (std::size_t i = kTokenPrefixSize; i < token.size(); ++i) {
    const char c = token[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string LineTokenDigest(const std::string& token) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
  return base::Hex(digest, sizeof digest);
}

LineJoinOutcome LineStore::Join(const std::string& painting, const std::string& visitor) {
  const std::optional<std::string> secret = base::RandomHex(32);
  if (!secret) return DbFailure{DbFailureKind::kInternal, "no random bytes for a line token"};
  const std::string token = kTokenPrefix + *secret;
  const std::string digest = LineTokenDigest(token);
  // Not idempotent (a second run would add a second entry), so Run().
  auto rows = db_.Run("line_join", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return Exec1(n, "line_join", painting, digest, visitor,
                 static_cast<int>(settings_.claim_window.count()), settings_.max_length,
                 settings_.per_visitor);
  });
  if (auto* f = std::get_if<DbFailure>(&rows)) return *f;
  const pqxx::row& row = std::get<pqxx::row>(rows);
  const std::string outcome = row["outcome"].as<std::string>();
  if (outcome == "joined") {
    db_.availability().PaintingsChanged({painting});
    LineJoined joined;
    joined.token = token;
    joined.entry.painting = painting;
    joined.entry.state = "waiting";
    joined.entry.position = OptionalInt(row["entry_position"]);
    joined.entry.line_length = row["line_length"].as<std::int64_t>(0);
    joined.entry.window_from = row["window_from"].as<std::string>("");
    joined.entry.window_until = row["window_until"].as<std::string>("");
    base::LogInfo("line_joined",
                  {{"painting", painting}, {"position", joined.entry.position.value_or(0)}});
    return joined;
  }
  if (outcome == "free") return PaintingFree{painting};
  if (outcome == "already_in_line") return AlreadyInLine{painting, settings_.per_visitor};
  if (outcome == "line_full") return LineFull{painting, settings_.max_length};
  if (outcome == "sold") return Sold{painting};
  if (outcome == "unknown") return Unknown{painting};
  return DbFailure{DbFailureKind::kInternal, "paintlock_line_join said " + outcome};
}

LineEntryOutcome LineStore::Entry(const std::string& painting, const std::string& token) {
  if (!LooksLikeLineToken(token)) return LineTokenInvalid{painting, ""};
  const std::string digest = LineTokenDigest(token);
  auto rows = db_.RunIdempotent("line_entry", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return Exec(n, "line_entry", painting, digest);
  });
  if (auto* f = std::get_if<DbFailure>(&rows)) return *f;
  const pqxx::result& r = std::get<pqxx::result>(rows);
  if (r.empty()) return LineTokenInvalid{painting, ""};
  return EntryOf(painting, r[0]);
}

LineLeaveOutcome LineStore::Leave(const std::string& painting, const std::string& token) {
  if (!LooksLikeLineToken(token)) return LineTokenInvalid{painting, ""};
  const std::string digest = LineTokenDigest(token);
  // Idempotent: a second run finds the entry 'left' and changes nothing.
  auto rows = db_.RunIdempotent("line_leave", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    return Exec1(n, "line_leave", painting, digest);
  });
  if (auto* f = std::get_if<DbFailure>(&rows)) return *f;
  const pqxx::row& row = std::get<pqxx::row>(rows);
  const std::string outcome = row["outcome"].as<std::string>();
  const std::string state = row["state"].as<std::string>();
  if (outcome == "left") {
    db_.availability().PaintingsChanged({painting});
    return LineLeft{painting, state};
  }
  return LineTokenInvalid{painting, outcome == "unknown" ? "" : state};
}

DbResult<std::optional<std::int64_t>> LineStore::Length(const std::string& painting) {
  return db_.RunIdempotent("line_length", [&](pqxx::connection& c) -> std::optional<std::int64_t> {
    pqxx::nontransaction n(c);
    pqxx::result r = Exec(n, "line_length", painting);
    if (r.empty()) return std::nullopt;
    return r[0]["line_length"].as<std::int64_t>();
  });
}

DbResult<std::optional<LineCleared>> LineStore::Clear(const std::string& painting,
                                                      const std::string& reason,
                                                      const std::string& actor) {
  // Not idempotent: each run writes an audit row.
  auto cleared = db_.Run("line_clear", [&](pqxx::connection& c) -> std::optional<LineCleared> {
    pqxx::nontransaction n(c);
    pqxx::row row = Exec1(n, "line_clear", painting, reason, actor);
    if (row[0].is_null()) return std::nullopt;
    return LineCleared{painting, row[0].as<std::int64_t>()};
  });
  if (const auto* c = std::get_if<std::optional<LineCleared>>(&cleared); c && *c) {
    db_.availability().PaintingsChanged({painting});
  }
  return cleared;
}

DbResult<std::vector<LineListEntry>> LineStore::List(const std::string& painting) {
  return db_.RunIdempotent("line_list", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    std::vector<LineListEntry> out;
    for (const auto& row : Exec(n, "line_list", painting)) {
      LineListEntry e;
      e.id = row["entry_id"].as<std::int64_t>();
      e.state = row["state"].as<std::string>();
      e.position = e.state == "waiting" || e.state == "your_turn"
                       ? OptionalInt(row["entry_position"])
                       : std::nullopt;
      e.visitor = row["visitor"].as<std::string>();
      e.joined_at = row["joined_at"].as<std::string>();
      e.window_from = row["window_from"].as<std::string>();
      e.window_until = row["window_until"].as<std::string>();
      e.ended_reason = row["ended_reason"].as<std::string>();
      e.reservation_id = row["reservation_id"].as<std::string>();
      out.push_back(std::move(e));
    }
    return out;
  });
}

}  // namespace paintlock::locks
