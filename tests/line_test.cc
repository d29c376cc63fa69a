// The waiting line (locks/lines.h, sql/migrations/0009_waiting_line.sql)
// under real concurrency: real PostgreSQL, real gateway processes, the fake
// Stripe, real concurrent HTTP clients, each visitor its own address (the
// gateways trust X-Forwarded-For from loopback).
#include <doctest/doctest.h>

#include <map>
#include <set>

#include "tests/support/admin_fixture.h"
#include "tests/support/harness.h"
#include "tests/support/stream_client.h"

using namespace paintlock::testing;
using nlohmann::json;

namespace {

constexpr const char* kVisitorKey = "line-test-visitor-key-0123456789";

std::map<std::string, std::string> LineEnv(std::map<std::string, std::string> extra = {}) {
  std::map<std::string, std::string> env = {{"PAINTLOCK_TRUSTED_PROXIES", "127.0.0.1"},
                                            {"PAINTLOCK_VISITOR_KEY", kVisitorKey}};
  for (auto& [k, v] : extra) env[k] = v;
  return env;
}

httplib::Headers From(const std::string& ip, const std::string& token = "") {
  httplib::Headers h = {{"X-Forwarded-For", ip}};
  if (!token.empty()) h.emplace("Paintlock-Line-Token", token);
  return h;
}

std::string Visitor(int i) { return "203.0.113." + std::to_string(i + 1); }

Reply Join(const std::string& base, const std::string& painting, const std::string& ip) {
  return Request(base, "POST", "/v1/paintings/" + painting + "/line", "", "application/json",
                 From(ip));
}

Reply Place(const std::string& base, const std::string& painting, const std::string& token) {
  return Request(base, "GET", "/v1/paintings/" + painting + "/line", "", "",
                 From("192.0.2.1", token));
}

Reply Leave(const std::string& base, const std::string& painting, const std::string& token) {
  return Request(base, "DELETE", "/v1/paintings/" + painting + "/line", "", "",
                 From("192.0.2.1", token));
}

Reply Buy(const std::string& base, const std::string& painting, const std::string& ip,
          const std::string& token = "") {
  json body = {{"paintings", {painting}}};
  if (!token.empty()) body["line_token"] = token;
  return PostJson(base, "/v1/checkout", body, From(ip));
}

// Waits until the entry of `token` is in `state` (the clock decides; nothing
// is written for it to happen).
bool WaitForState(const std::string& base, const std::string& painting, const std::string& token,
                  const std::string& state) {
  return Eventually([&] { return Place(base, painting, token).json.value("state", "") == state; },
                    std::chrono::milliseconds(30000));
}

// Moves the painting's clock forward by `seconds`: every stored time of its
// hold and line goes that far back, which is what waiting would do.
void Advance(TestDatabase& db, const std::string& painting, int seconds) {
  const std::string by = "interval '" + std::to_string(seconds) + " seconds'";
  db.Exec("UPDATE reservations r SET held_until = r.held_until - " + by +
          " FROM painting_locks l WHERE l.holder = r.id AND l.painting_id = '" + painting + "'");
  db.Exec("UPDATE painting_locks SET held_until = held_until - " + by +
          ", line_turn_from = line_turn_from - " + by + " WHERE painting_id = '" + painting + "'");
}

std::string SessionOf(TestDatabase& db, const std::string& reservation) {
  return db.Scalar("SELECT stripe_session_id FROM reservations WHERE id = '" + reservation + "'");
}

// The whole story on one painting, through `bases` in turn: twenty visitors
// queue behind a holder; when the hold lapses only the first may buy; when
// the first's own hold lapses unpaid the second's turn comes; the second pays
// and the line closes.
void TwentyInLine(TestDatabase& db, Shop& shop, const std::vector<std::string>& bases) {
  constexpr int kVisitors = 20;
  auto base = [&](int i) { return bases[i % bases.size()]; };
  Reply holder = Buy(base(0), "p1", "198.51.100.1");
  REQUIRE(holder.status == 201);

  std::vector<Reply> joined(kVisitors);
  RunConcurrently(kVisitors, [&](int i) { joined[i] = Join(base(i), "p1", Visitor(i)); });
  std::vector<std::string> tokens(kVisitors);
  std::map<int, int> by_position;  // position → visitor
  for (int i = 0; i < kVisitors; ++i) {
    REQUIRE_MESSAGE(joined[i].status == 201, joined[i].body);
    tokens[i] = joined[i].json["line_token"];
    CHECK(tokens[i].rfind("plt_", 0) == 0);
    CHECK(!joined[i].json["expires_at"].get<std::string>().empty());
    by_position[joined[i].json["position"].get<int>()] = i;
  }
  REQUIRE(by_position.size() == kVisitors);  // every place given once: 1..20
  CHECK(by_position.begin()->first == 1);
  CHECK(by_position.rbegin()->first == kVisitors);
  // The secret is not stored, only its hash.
  CHECK(db.Scalar("SELECT count(*) FROM line_entries WHERE token_sha256 = '" + tokens[0] + "'") ==
        "0");
  CHECK(Request(base(0), "GET", "/v1/paintings/p1/line").json["line_length"] == kVisitors);

  const int first = by_position[1], second = by_position[2], third = by_position[3];
  // The hold lapses by the clock alone; then the first visitor's window runs.
  REQUIRE(WaitForState(base(0), "p1", tokens[first], "your_turn"));
  CHECK(Place(base(1), "p1", tokens[second]).json["state"] == "waiting");
  Reply painting = Request(base(0), "GET", "/v1/paintings/p1");
  CHECK(painting.json["state"] == "reserved");  // for the claimant, until its window ends

  // Everyone presses Buy at once, with their tokens; a stranger too.
  std::vector<Reply> bought(kVisitors + 1);
  RunConcurrently(kVisitors + 1, [&](int i) {
    bought[i] = i < kVisitors ? Buy(base(i), "p1", Visitor(i), tokens[i])
                              : Buy(base(i), "p1", "198.51.100.7");
  });
  std::string claim;
  for (int i = 0; i <= kVisitors; ++i) {
    if (i == first) {
      REQUIRE_MESSAGE(bought[i].status == 201, bought[i].body);
      claim = bought[i].json["reservation_id"];
      continue;
    }
    CHECK_MESSAGE(bought[i].status == 409, bought[i].body);
    CHECK(bought[i].json["code"] == "painting_reserved");
    CHECK(!bought[i].json["free_at"].get<std::string>().empty());
    if (i == kVisitors) {
      CHECK(!bought[i].json.contains("line_position"));
      continue;
    }
    // Their place: counted before or after the first claimed, whichever ran first.
    const int place = joined[i].json["position"];
    REQUIRE(bought[i].json.contains("line_position"));
    const int told = bought[i].json["line_position"];
    CHECK((told == place || told == place - 1));
  }
  CHECK(db.Scalar("SELECT state || ' ' || reservation_id FROM line_entries WHERE token_sha256 = "
                  "encode(sha256('" +
                  tokens[first] + "'::bytea), 'hex')") == "claimed " + claim);
  CHECK(Place(base(0), "p1", tokens[first]).json["state"] == "claimed");
  CHECK(Place(base(1), "p1", tokens[second]).json["position"] == 1);

  // The first never pays: when its hold lapses the second's turn comes, with
  // no job having run (the entries' rows are as the claim left them).
  REQUIRE(WaitForState(base(1), "p1", tokens[second], "your_turn"));
  CHECK(db.Scalar("SELECT count(*) FROM line_entries WHERE state = 'waiting'") ==
        std::to_string(kVisitors - 1));
  CHECK(Buy(base(0), "p1", Visitor(third), tokens[third]).json["line_position"] == 2);
  Reply second_buys = Buy(base(1), "p1", Visitor(second), tokens[second]);
  REQUIRE_MESSAGE(second_buys.status == 201, second_buys.body);
  const std::string second_claim = second_buys.json["reservation_id"];
  // The first's session was expired at Stripe before the painting passed on.
  CHECK(db.Scalar("SELECT state FROM reservations WHERE id = '" + claim + "'") == "released");

  // The second pays: sold, and the line is closed for everyone in it.
  Pay(shop, SessionOf(db, second_claim));
  REQUIRE(Eventually([&] { return PaintingState(db, "p1") == "sold"; }));
  REQUIRE(WaitForState(base(0), "p1", tokens[third], "closed"));
  CHECK(db.Scalar("SELECT count(*) FROM line_entries WHERE state = 'waiting'") == "0");
  CHECK(db.Scalar("SELECT count(*) FROM line_entries WHERE state = 'closed' AND ended_reason = "
                  "'sold'") == std::to_string(kVisitors - 2));
  CHECK(Place(base(1), "p1", tokens[second]).json["state"] == "claimed");
  Reply late = Join(base(0), "p1", "198.51.100.9");
  CHECK(late.status == 409);
  CHECK(late.json["code"] == "painting_sold");
  CheckInvariants(db);
}

}  // namespace

TEST_CASE("line: twenty wait, the first claims, a lapse hands the turn on, a sale closes it") {
  TestDatabase db;
  Shop shop(db, LineEnv({{"PAINTLOCK_HOLD_SECONDS", "3"}, {"PAINTLOCK_LINE_CLAIM_SECONDS", "60"}}));
  TwentyInLine(db, shop, {shop.gateway.base()});
}

TEST_CASE("line: the same story across two gateway processes on one database") {
  TestDatabase db;
  const auto env =
      LineEnv({{"PAINTLOCK_HOLD_SECONDS", "3"}, {"PAINTLOCK_LINE_CLAIM_SECONDS", "60"}});
  Shop shop(db, env);
  Gateway other(db, shop.stripe.base(), GatewayOptions{env, 0});
  TwentyInLine(db, shop, {shop.gateway.base(), other.base()});
}

TEST_CASE(
    "line: each member's stream tells it its own place and turn, others see only the length") {
  TestDatabase db;
  Shop shop(db, LineEnv({{"PAINTLOCK_HOLD_SECONDS", "3"}, {"PAINTLOCK_LINE_CLAIM_SECONDS", "60"}}));
  const std::string base = shop.gateway.base();
  const int port = shop.gateway.port();
  REQUIRE(Buy(base, "p4", "198.51.100.1").status == 201);
  std::vector<std::string> tokens;
  for (int i = 0; i < 3; ++i) {
    Reply j = Join(base, "p4", Visitor(i));
    REQUIRE(j.status == 201);
    tokens.push_back(j.json["line_token"]);
  }
  auto line_event = [](const std::string& state, int position) {
    return [state, position](const SseEvent& e) {
      if (e.event != "line") return false;
      const json j = e.Json();
      return j.value("id", "") == "p4" && j.value("state", "") == state &&
             (position == 0 || j.value("position", 0) == position);
    };
  };
  StreamClient first(port, "", "?line_token=" + tokens[0]);
  StreamClient second(port, "", "?line_token=" + tokens[1]);
  StreamClient third(port, "", "?line_token=" + tokens[2]);
  StreamClient stranger(port);
  REQUIRE(first.Status() == 200);
  REQUIRE(second.Status() == 200);

  // Each is told its own place as soon as it connects (the board may not have
  // read the last join yet: then the length grows in a later event).
  auto waiting = second.WaitFor([&](const SseEvent& e) {
    return line_event("waiting", 2)(e) && e.Json().value("line_length", 0) == 3;
  });
  REQUIRE(waiting);
  CHECK(!waiting->Json()["window_from"].get<std::string>().empty());
  REQUIRE(third.WaitFor(line_event("waiting", 3)));
  // The hold lapses (3 s, by the clock; nothing is written): the first is
  // told its turn, with the window to buy in.
  auto turn = first.WaitFor(line_event("your_turn", 1));
  REQUIRE(turn);
  const std::string until = turn->Json()["window_until"];
  CHECK(!until.empty());
  CHECK(Place(base, "p4", tokens[0]).json["window_until"] == until);

  // The first leaves: the second's turn starts now, the third moves up.
  CHECK(Leave(base, "p4", tokens[0]).status == 200);
  REQUIRE(first.WaitFor(line_event("ended", 0)));
  REQUIRE(second.WaitFor(line_event("your_turn", 1)));
  REQUIRE(third.WaitFor(line_event("waiting", 2)));

  // The second buys and pays: sold, and the third is told the line closed.
  Reply bought = Buy(base, "p4", Visitor(1), tokens[1]);
  REQUIRE_MESSAGE(bought.status == 201, bought.body);
  REQUIRE(second.WaitFor(line_event("ended", 0)));
  Pay(shop, SessionOf(db, bought.json["reservation_id"]));
  REQUIRE(third.WaitFor(line_event("closed", 0)));
  REQUIRE(stranger.WaitFor("p4", "sold"));

  // No stream was told anything of another member: each line event names
  // only the stream's own place, and the stranger had none, only lengths.
  for (const auto& e : stranger.events()) CHECK(e.event != "line");
  CHECK(std::any_of(stranger.events().begin(), stranger.events().end(), [](const SseEvent& e) {
    return e.event == "painting" && e.Json().value("line_length", 0) == 3;
  }));
  for (const StreamClient* s : {&first, &second, &third, &stranger}) {
    for (const std::string& token : tokens) CHECK(s->body().find(token) == std::string::npos);
    CHECK(s->body().find(db.Scalar("SELECT token_sha256 FROM line_entries LIMIT 1")) ==
          std::string::npos);
  }

  // A stream asked to follow something that is not a line token is refused.
  Reply forged = Request(base, "GET", "/v1/paintings/stream?line_token=plt_not-a-token");
  CHECK(forged.status == 400);
  CHECK(forged.json["code"] == "invalid_request");
  CHECK(forged.json["param"] == "line_token");
  CheckInvariants(db);
}

TEST_CASE("line: a turn left unused passes to the next by the clock alone") {
  TestDatabase db;
  Shop shop(db, LineEnv({{"PAINTLOCK_LINE_CLAIM_SECONDS", "60"}}));
  const std::string base = shop.gateway.base();
  const std::string hold = Reserve(db, "p2");
  std::vector<std::string> tokens;
  for (int i = 0; i < 3; ++i) {
    Reply j = Join(base, "p2", Visitor(i));
    REQUIRE(j.status == 201);
    CHECK(j.json["position"] == i + 1);
    tokens.push_back(j.json["line_token"]);
  }
  Age(db, hold);
  CHECK(Place(base, "p2", tokens[0]).json["state"] == "your_turn");
  Reply early = Buy(base, "p2", Visitor(1), tokens[1]);
  CHECK(early.status == 409);
  CHECK(early.json["line_position"] == 2);

  // The first lets its whole window pass.
  Advance(db, "p2", 61);
  CHECK(Place(base, "p2", tokens[0]).json["state"] == "passed");
  Reply now_second = Place(base, "p2", tokens[1]);
  CHECK(now_second.json["state"] == "your_turn");
  CHECK(now_second.json["position"] == 1);
  CHECK(now_second.json["line_length"] == 2);
  // Nothing wrote that: the first's row still says waiting.
  CHECK(db.Scalar("SELECT state FROM line_entries ORDER BY id LIMIT 1") == "waiting");

  Reply too_late = Buy(base, "p2", Visitor(0), tokens[0]);
  CHECK(too_late.status == 409);
  CHECK(too_late.json["code"] == "painting_reserved");
  CHECK(too_late.json["free_at"] == now_second.json["window_until"]);
  // That reserve settled what the clock had decided.
  CHECK(db.Scalar("SELECT state FROM line_entries ORDER BY id LIMIT 1") == "passed");
  // The server-to-server API takes the token too.
  Reply bought = PostJson(base, "/v1/reservations",
                          {{"paintings", {"p2"}}, {"line_token", tokens[1]}}, ApiKeyHeader());
  CHECK_MESSAGE(bought.status == 201, bought.body);
  CHECK(Place(base, "p2", tokens[1]).json["reservation_id"] == bought.json["reservation_id"]);
  CheckInvariants(db);
}

TEST_CASE(
    "line: leaving moves those behind up, and the claimant leaving starts the next turn now") {
  TestDatabase db;
  Shop shop(db, LineEnv({{"PAINTLOCK_LINE_CLAIM_SECONDS", "60"}}));
  const std::string base = shop.gateway.base();
  const std::string hold = Reserve(db, "p3");
  std::vector<std::string> tokens;
  for (int i = 0; i < 3; ++i) tokens.push_back(Join(base, "p3", Visitor(i)).json["line_token"]);

  Reply left = Leave(base, "p3", tokens[1]);
  CHECK(left.status == 200);
  CHECK(left.json["state"] == "left");
  CHECK(Place(base, "p3", tokens[2]).json["position"] == 2);
  CHECK(Place(base, "p3", tokens[1]).json["state"] == "left");
  Reply again = Leave(base, "p3", tokens[1]);
  CHECK(again.status == 409);
  CHECK(again.json["code"] == "line_token_invalid");
  CHECK(again.json["state"] == "left");

  Age(db, hold);
  Advance(db, "p3", 30);  // the first has used half its window
  REQUIRE(Place(base, "p3", tokens[0]).json["state"] == "your_turn");
  CHECK(Leave(base, "p3", tokens[0]).status == 200);
  Reply next = Place(base, "p3", tokens[2]);
  CHECK(next.json["state"] == "your_turn");
  // A whole window from the leave, not the half the first left over.
  CHECK(next.json["ends_in_ms"].get<long long>() > 45000);
  CheckInvariants(db);
}

TEST_CASE("line: bad input gets a clear error and changes nothing") {
  TestDatabase db;
  Shop shop(db, LineEnv({{"PAINTLOCK_LINE_MAX", "2"}}));
  const std::string base = shop.gateway.base();
  auto entries = [&] { return db.Scalar("SELECT count(*) FROM line_entries"); };
  auto reservations = [&] { return db.Scalar("SELECT count(*) FROM reservations"); };

  // A free painting: buy it, do not queue.
  Reply free = Join(base, "p4", Visitor(0));
  CHECK(free.status == 409);
  CHECK(free.json["code"] == "painting_free");
  CHECK(entries() == "0");

  Reserve(db, "p4");
  Reply first = Join(base, "p4", Visitor(0));
  REQUIRE(first.status == 201);
  const std::string token = first.json["line_token"];

  Reply twice = Join(base, "p4", Visitor(0));
  CHECK(twice.status == 409);
  CHECK(twice.json["code"] == "already_in_line");
  CHECK(!twice.json.contains("line_token"));
  CHECK(entries() == "1");

  REQUIRE(Join(base, "p4", Visitor(1)).status == 201);
  Reply full = Join(base, "p4", Visitor(2));
  CHECK(full.status == 409);
  CHECK(full.json["code"] == "line_full");
  CHECK(full.json["max_length"] == 2);
  CHECK(entries() == "2");

  // A forged token (well-formed, never issued), a malformed one, none.
  const std::string forged = "plt_" + std::string(64, 'a');
  Reply unknown = Place(base, "p4", forged);
  CHECK(unknown.status == 404);
  CHECK(unknown.json["code"] == "line_token_invalid");
  CHECK(Leave(base, "p4", forged).json["code"] == "line_token_invalid");
  Reply malformed = Place(base, "p4", "plt_<script>");
  CHECK(malformed.status == 400);
  CHECK(malformed.json["param"] == "line_token");
  CHECK(Leave(base, "p4", "").status == 400);
  // A token of another painting's line is unknown there.
  CHECK(Place(base, "p5", token).status == 404);
  // The token of one line does not buy through another's window, and a
  // forged or malformed one at checkout reserves nothing.
  Reply bad_buy = Buy(base, "p4", Visitor(5), "plt_zz");
  CHECK(bad_buy.status == 400);
  CHECK(bad_buy.json["param"] == "line_token");
  Reply form = Request(base, "POST", "/v1/checkout", "painting=p4&line_token=nope",
                       "application/x-www-form-urlencoded", From(Visitor(5)));
  CHECK(form.status == 400);
  CHECK(Buy(base, "p4", Visitor(5), forged).status == 409);
  CHECK(reservations() == "1");

  // An expired token: its turn came and went.
  Age(db, db.Scalar("SELECT holder FROM painting_locks WHERE painting_id = 'p4'"));
  Advance(db, "p4", 121);
  Reply expired = Place(base, "p4", token);
  CHECK(expired.json["state"] == "passed");
  Reply expired_leave = Leave(base, "p4", token);
  CHECK(expired_leave.status == 409);
  CHECK(expired_leave.json["code"] == "line_token_invalid");
  CHECK(expired_leave.json["state"] == "passed");

  // Unknown and sold paintings.
  CHECK(Join(base, "nope", Visitor(0)).json["code"] == "painting_not_found");
  CHECK(Join(base, "bad%20id", Visitor(0)).status == 404);
  db.Exec("UPDATE paintings SET sold_at = now() WHERE id = 'p6'");
  CHECK(Join(base, "p6", Visitor(0)).json["code"] == "painting_sold");
  CheckInvariants(db);
}

TEST_CASE("line: paintlockctl line shows the line and line clear empties it, audited") {
  TestDatabase db;
  Shop shop(db, LineEnv());
  const std::string stripe = shop.stripe.base();
  const std::string base = shop.gateway.base();
  Reserve(db, "p7");
  std::vector<std::string> tokens;
  for (int i = 0; i < 3; ++i) tokens.push_back(Join(base, "p7", Visitor(i)).json["line_token"]);

  CompletedProcess shown = Ctl(db, stripe, {"line", "p7"});
  CHECK(shown.exit_code == 0);
  CHECK(shown.out.find("p7: 3 waiting") != std::string::npos);
  CHECK(shown.out.find("POS") != std::string::npos);
  for (const auto& t : tokens) CHECK(shown.out.find(t) == std::string::npos);
  json listed = Ctl(db, stripe, {"line", "p7", "--json"}).Json();
  REQUIRE(listed["entries"].size() == 3);
  CHECK(listed["entries"][0]["position"] == 1);
  CHECK(listed["entries"][2]["state"] == "waiting");

  CompletedProcess no_reason = Ctl(db, stripe, {"line", "clear", "p7"});
  CHECK(no_reason.exit_code == 2);
  CHECK(db.Scalar("SELECT count(*) FROM line_entries WHERE state = 'waiting'") == "3");
  CHECK(Ctl(db, stripe, {"line", "nope"}).exit_code == 1);

  CompletedProcess cleared = Ctl(db, stripe, {"line", "clear", "p7", "--reason", "withdrawn"});
  CHECK(cleared.exit_code == 0);
  CHECK(cleared.out == "p7: line cleared, 3 waiting entries closed\n");
  CHECK(db.Scalar("SELECT count(*) FROM line_entries WHERE state = 'waiting'") == "0");
  CHECK(db.Scalar("SELECT reason || ' ' || (details->>'closed') FROM audit_log WHERE action = "
                  "'line_clear' AND painting_id = 'p7'") == "withdrawn 3");
  CHECK(Place(base, "p7", tokens[0]).json["state"] == "closed");
  CheckInvariants(db);
}
