// Credit holds under real concurrency: real PostgreSQL, real gateway
// processes, real concurrent HTTP clients (locks/CREDITS.md).
#include <doctest/doctest.h>

#include <set>

#include "tests/support/admin_fixture.h"
#include "tests/support/harness.h"
#include "tests/support/outcome_tally.h"

using namespace paintlock::testing;
using nlohmann::json;

namespace {

httplib::Headers WithKey(const std::string& idempotency_key) {
  httplib::Headers h = ApiKeyHeader();
  h.emplace("Idempotency-Key", idempotency_key);
  return h;
}

Reply TopUp(const std::string& base, const std::string& account, json amount,
            const std::string& key) {
  return PostJson(base, "/v1/accounts/" + account + "/credits", {{"amount", amount}}, WithKey(key));
}

Reply Hold(const std::string& base, const std::string& account, json amount, json ttl = 300) {
  return PostJson(base, "/v1/accounts/" + account + "/holds",
                  {{"amount", amount}, {"ttl_seconds", ttl}}, ApiKeyHeader());
}

Reply Commit(const std::string& base, const std::string& hold) {
  return Request(base, "POST", "/v1/holds/" + hold + "/commit", "", "application/json",
                 ApiKeyHeader());
}

Reply Release(const std::string& base, const std::string& hold) {
  return Request(base, "POST", "/v1/holds/" + hold + "/release", "", "application/json",
                 ApiKeyHeader());
}

json Account(const std::string& base, const std::string& account) {
  Reply r = Request(base, "GET", "/v1/accounts/" + account, "", "", ApiKeyHeader());
  REQUIRE_MESSAGE(r.status == 200, r.body);
  return r.json;
}

// Ages a hold in the database: only the clock changes, as if its TTL passed.
void AgeHold(TestDatabase& db, const std::string& hold) {
  db.Exec(
      "UPDATE credit_holds SET expires_at = now() - interval '1 millisecond', "
      "created_at = created_at - interval '1 hour' WHERE id = '" +
      hold + "'");
}

// Every hold is accounted for: the balance is what top-ups put in minus what
// committed holds took out, and no account has more held than it has.
void CheckCreditInvariants(TestDatabase& db) {
  CHECK(db.Scalar(
            "SELECT count(*) FROM credit_accounts a WHERE a.balance <> "
            "(SELECT coalesce(sum(t.amount), 0) FROM credit_topups t WHERE t.account_id = a.id) - "
            "(SELECT coalesce(sum(h.amount), 0) FROM credit_holds h "
            "  WHERE h.account_id = a.id AND h.state = 'committed')") == "0");
  CHECK(db.Scalar("SELECT count(*) FROM credit_accounts a "
                  "WHERE a.balance < paintlock_credit_held(a.id)") == "0");
  CheckInvariants(db);
}

}  // namespace

TEST_CASE(
    "credits: two concurrent holds on credit for one: one 201, one 409, round after round, two "
    "gateways") {
  TestDatabase db({{"p1", 1000}});
  Gateway one(db, kNoStripe);
  Gateway two(db, kNoStripe);
  for (int round = 0; round < 25; ++round) {
    const std::string account = "race-" + std::to_string(round);
    REQUIRE(TopUp(one.base(), account, 100, "seed").status == 200);
    std::vector<Reply> replies(2);
    RunConcurrently(2, [&](int i) { replies[i] = Hold(i ? one.base() : two.base(), account, 60); });
    int created = 0, refused = 0;
    for (const auto& r : replies) {
      if (r.status == 201) ++created;
      if (r.status == 409 && r.json["code"] == "insufficient_credits") {
        ++refused;
        CHECK(r.json["available"] == 40);
        CHECK(r.json["requested"] == 60);
      }
    }
    CHECK(created == 1);
    CHECK(refused == 1);
    json a = Account(one.base(), account);
    CHECK(a["balance"] == 100);  // a hold never moves the balance
    CHECK(a["held"] == 60);
    CHECK(a["available"] == 40);
  }
  CheckCreditInvariants(db);
}

TEST_CASE("credits: many small holds at once never hold more than the balance") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe);
  REQUIRE(TopUp(gw.base(), "crowd", 55, "seed").status == 200);
  OutcomeTally tally;
  RunConcurrently(20, [&](int) {
    const Reply r = Hold(gw.base(), "crowd", 10);
    tally.Add(HoldOutcome(r), r);
  });
  CHECK(tally.granted() == 5);
  CHECK(tally.refused() == 15);
  CHECK_MESSAGE(tally.other() == 0, tally.others());
  CHECK(Account(gw.base(), "crowd")["available"] == 5);
  CheckCreditInvariants(db);
}

TEST_CASE(
    "credits: a crashed client's hold stops counting the instant its TTL passes, no sweep run") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe);
  REQUIRE(TopUp(gw.base(), "acct", 100, "k1").status == 200);
  Reply held = Hold(gw.base(), "acct", 100, 3600);
  REQUIRE(held.status == 201);
  CHECK(held.json["available"] == 0);
  CHECK(held.Header("Location") == "/v1/holds/" + held.json["hold_id"].get<std::string>());
  CHECK(Hold(gw.base(), "acct", 1).status == 409);

  // The client crashed: it never commits or releases. Its TTL passes.
  AgeHold(db, held.json["hold_id"]);
  json a = Account(gw.base(), "acct");
  CHECK(a["balance"] == 100);
  CHECK(a["held"] == 0);
  CHECK(a["available"] == 100);
  Reply again = Hold(gw.base(), "acct", 100);
  CHECK(again.status == 201);
  // Nothing swept: the lapsed row is still 'held' in the table; only the clock decided.
  CHECK(db.Scalar("SELECT state FROM credit_holds WHERE id = '" +
                  held.json["hold_id"].get<std::string>() + "'") == "held");
  Reply view = Request(gw.base(), "GET", "/v1/holds/" + held.json["hold_id"].get<std::string>(), "",
                       "", ApiKeyHeader());
  CHECK(view.json["state"] == "expired");
  CheckCreditInvariants(db);
}

TEST_CASE(
    "credits: commit moves the balance once, a second commit returns the same result and moves "
    "nothing") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe);
  REQUIRE(TopUp(gw.base(), "acct", 100, "k1").status == 200);
  const std::string hold = Hold(gw.base(), "acct", 30).json["hold_id"];

  Reply first = Commit(gw.base(), hold);
  REQUIRE(first.status == 200);
  CHECK(first.json["state"] == "committed");
  CHECK(first.json["late"] == false);
  CHECK(first.json["amount"] == 30);
  CHECK(first.json["balance_after"] == 70);
  CHECK(first.Header("Idempotent-Replayed").empty());

  Reply second = Commit(gw.base(), hold);
  CHECK(second.status == 200);
  CHECK(second.json == first.json);
  CHECK(second.Header("Idempotent-Replayed") == "true");

  // And many at once, on a fresh hold: one moves, all answer alike.
  const std::string hold2 = Hold(gw.base(), "acct", 20).json["hold_id"];
  std::vector<Reply> replies(8);
  RunConcurrently(8, [&](int i) { replies[i] = Commit(gw.base(), hold2); });
  int replayed = 0;
  for (const auto& r : replies) {
    CHECK(r.status == 200);
    CHECK(r.json == replies[0].json);
    replayed += r.Header("Idempotent-Replayed") == "true";
  }
  CHECK(replayed == 7);
  json a = Account(gw.base(), "acct");
  CHECK(a["balance"] == 50);
  CHECK(a["available"] == 50);
  CHECK(db.Scalar("SELECT count(*) FROM credit_holds WHERE state = 'committed'") == "2");
  CheckCreditInvariants(db);
}

TEST_CASE(
    "credits: commit racing release, many rounds on two gateways: the balance moves at most once") {
  TestDatabase db({{"p1", 1000}});
  Gateway one(db, kNoStripe);
  Gateway two(db, kNoStripe);
  REQUIRE(TopUp(one.base(), "acct", 1000000, "k1").status == 200);
  long long expected_balance = 1000000;
  int commits_won = 0, releases_won = 0;
  for (int round = 0; round < 40; ++round) {
    const std::string hold = Hold(one.base(), "acct", 7).json["hold_id"];
    std::vector<Reply> replies(2);
    RunConcurrently(2, [&](int i) {
      const std::string& base = (round + i) % 2 ? one.base() : two.base();
      replies[i] = i == 0 ? Commit(base, hold) : Release(base, hold);
    });
    const Reply& commit = replies[0];
    const Reply& release = replies[1];
    if (commit.status == 200) {
      ++commits_won;
      expected_balance -= 7;
      CHECK(release.status == 409);
      CHECK(release.json["code"] == "hold_committed");
    } else {
      ++releases_won;
      CHECK(commit.status == 409);
      CHECK(commit.json["code"] == "hold_released");
      CHECK(release.status == 200);
    }
    // Whoever lost, repeating either changes nothing.
    Commit(two.base(), hold);
    Release(one.base(), hold);
    REQUIRE(Account(one.base(), "acct")["balance"] == expected_balance);
  }
  // Every round's winner is what the database holds, hold by hold.
  CHECK(db.Scalar("SELECT count(*) FROM credit_holds WHERE state = 'committed'") ==
        std::to_string(commits_won));
  CHECK(db.Scalar("SELECT count(*) FROM credit_holds WHERE state = 'released'") ==
        std::to_string(releases_won));
  MESSAGE("commits won " << commits_won << ", releases won " << releases_won);
  CHECK(Account(two.base(), "acct")["available"] == expected_balance);
  CheckCreditInvariants(db);
}

TEST_CASE(
    "credits: commit of an expired hold: late if its credits are still free, refused if not") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe);
  REQUIRE(TopUp(gw.base(), "acct", 100, "k1").status == 200);

  // Still free: committed, and it says so.
  const std::string late = Hold(gw.base(), "acct", 40).json["hold_id"];
  AgeHold(db, late);
  Reply ok = Commit(gw.base(), late);
  REQUIRE(ok.status == 200);
  CHECK(ok.json["late"] == true);
  CHECK(ok.json["balance_after"] == 60);
  CHECK(Commit(gw.base(), late).json == ok.json);

  // Taken by someone else meanwhile: refused, nothing moves.
  const std::string lapsed = Hold(gw.base(), "acct", 50).json["hold_id"];
  AgeHold(db, lapsed);
  REQUIRE(Hold(gw.base(), "acct", 20).status == 201);  // 40 left of 60
  Reply refused = Commit(gw.base(), lapsed);
  CHECK(refused.status == 409);
  CHECK(refused.json["code"] == "hold_expired");
  CHECK(refused.json["available"] == 40);
  CHECK(refused.json["amount"] == 50);
  CHECK(refused.json["message"].get<std::string>().find("Nothing was committed") !=
        std::string::npos);
  CHECK(Account(gw.base(), "acct")["balance"] == 60);

  // The sweep changes no answer: the swept hold still commits late once free.
  db.Exec("SELECT paintlock_credit_sweep(1000)");
  CHECK(db.Scalar("SELECT state FROM credit_holds WHERE id = '" + lapsed + "'") == "expired");
  CHECK(Commit(gw.base(), lapsed).json["code"] == "hold_expired");
  db.Exec("UPDATE credit_holds SET expires_at = now() - interval '1 ms' WHERE state = 'held'");
  Reply after_sweep = Commit(gw.base(), lapsed);
  CHECK(after_sweep.status == 200);
  CHECK(after_sweep.json["late"] == true);
  CHECK(after_sweep.json["balance_after"] == 10);
  CheckCreditInvariants(db);
}

TEST_CASE("credits: release cancels a hold once, committed holds stay committed") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe);
  REQUIRE(TopUp(gw.base(), "acct", 100, "k1").status == 200);
  const std::string hold = Hold(gw.base(), "acct", 80).json["hold_id"];
  CHECK(Account(gw.base(), "acct")["available"] == 20);

  Reply released = Release(gw.base(), hold);
  CHECK(released.status == 200);
  CHECK(released.json["state"] == "released");
  CHECK(Account(gw.base(), "acct")["available"] == 100);
  Reply again = Release(gw.base(), hold);
  CHECK(again.status == 200);
  CHECK(again.json == released.json);
  CHECK(again.Header("Idempotent-Replayed") == "true");
  Reply commit = Commit(gw.base(), hold);
  CHECK(commit.status == 409);
  CHECK(commit.json["code"] == "hold_released");

  const std::string committed = Hold(gw.base(), "acct", 10).json["hold_id"];
  REQUIRE(Commit(gw.base(), committed).status == 200);
  Reply too_late = Release(gw.base(), committed);
  CHECK(too_late.status == 409);
  CHECK(too_late.json["code"] == "hold_committed");
  CHECK(Account(gw.base(), "acct")["balance"] == 90);
  CheckCreditInvariants(db);
}

TEST_CASE("credits: top-ups are idempotent by Idempotency-Key, the first one creates the account") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe);
  CHECK(Request(gw.base(), "GET", "/v1/accounts/new-acct", "", "", ApiKeyHeader()).status == 404);

  Reply no_key =
      PostJson(gw.base(), "/v1/accounts/new-acct/credits", {{"amount", 5}}, ApiKeyHeader());
  CHECK(no_key.status == 400);
  CHECK(no_key.json["code"] == "idempotency_key_required");
  CHECK(db.Scalar("SELECT count(*) FROM credit_accounts") == "0");

  Reply first = TopUp(gw.base(), "new-acct", 250, "order-1");
  REQUIRE(first.status == 200);
  CHECK(first.json["balance_after"] == 250);
  Reply replay = TopUp(gw.base(), "new-acct", 250, "order-1");
  CHECK(replay.status == 200);
  CHECK(replay.json == first.json);
  CHECK(replay.Header("Idempotent-Replayed") == "true");

  Reply reused = TopUp(gw.base(), "new-acct", 999, "order-1");
  CHECK(reused.status == 422);
  CHECK(reused.json["code"] == "idempotency_key_reused");
  CHECK(reused.json["original_amount"] == 250);
  CHECK(Account(gw.base(), "new-acct")["balance"] == 250);

  // One key sent by eight retrying clients at once credits once.
  std::vector<Reply> replies(8);
  RunConcurrently(8, [&](int i) { replies[i] = TopUp(gw.base(), "new-acct", 50, "order-2"); });
  for (const auto& r : replies) {
    CHECK(r.status == 200);
    CHECK(r.json["balance_after"] == 300);
  }
  // A key is scoped to its account.
  CHECK(TopUp(gw.base(), "other", 1, "order-1").json["balance_after"] == 1);
  CHECK(Account(gw.base(), "new-acct")["balance"] == 300);
  CheckCreditInvariants(db);
}

TEST_CASE("credits: bad credit input gets a clear 4xx JSON error and changes nothing") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe);
  REQUIRE(TopUp(gw.base(), "acct", 100, "k1").status == 200);
  const std::string hold = Hold(gw.base(), "acct", 10).json["hold_id"];
  auto state = [&] {
    return db.Scalar("SELECT string_agg(id || balance, ',' ORDER BY id) FROM credit_accounts") +
           "|" + db.Scalar("SELECT count(*) || ':' || string_agg(state, ',') FROM credit_holds") +
           "|" + db.Scalar("SELECT count(*) FROM credit_topups");
  };
  const std::string before = state();

  struct Case {
    Reply reply;
    int status;
    std::string code;
    std::string param;
  };
  const std::string big = "1000000000001";  // one over the most a hold or top-up may be
  std::vector<Case> cases = {
      {Hold(gw.base(), "acct", -5), 400, "invalid_request", "amount"},
      {Hold(gw.base(), "acct", 0), 400, "invalid_request", "amount"},
      {Hold(gw.base(), "acct", 1.5), 400, "invalid_request", "amount"},
      {Hold(gw.base(), "acct", "10"), 400, "invalid_request", "amount"},
      {Hold(gw.base(), "acct", json::parse(big)), 400, "invalid_request", "amount"},
      {Hold(gw.base(), "acct", 1, 0), 400, "invalid_request", "ttl_seconds"},
      {Hold(gw.base(), "acct", 1, 86401), 400, "invalid_request", "ttl_seconds"},
      {Hold(gw.base(), "acct", 1, 1e12), 400, "invalid_request", "ttl_seconds"},
      {Hold(gw.base(), "acct", 1, 2.5), 400, "invalid_request", "ttl_seconds"},
      {Hold(gw.base(), "acct", 1, nullptr), 400, "invalid_request", "ttl_seconds"},
      {Hold(gw.base(), "nobody", 1), 404, "account_not_found", ""},
      {Hold(gw.base(), "bad%20id", 1), 404, "account_not_found", ""},
      {Hold(gw.base(), "acct", 1000), 409, "insufficient_credits", ""},
      {Request(gw.base(), "POST", "/v1/accounts/acct/holds", "amount=5",
               "application/x-www-form-urlencoded", ApiKeyHeader()),
       415, "unsupported_media_type", ""},
      {Request(gw.base(), "POST", "/v1/accounts/acct/holds", "{\"amount\":", "application/json",
               ApiKeyHeader()),
       400, "invalid_request", ""},
      {Request(gw.base(), "POST", "/v1/accounts/acct/holds", "[5]", "application/json",
               ApiKeyHeader()),
       400, "invalid_request", ""},
      {TopUp(gw.base(), "acct", -1, "k2"), 400, "invalid_request", "amount"},
      {TopUp(gw.base(), "acct", 0.5, "k2"), 400, "invalid_request", "amount"},
      {TopUp(gw.base(), "acct", json::parse(big), "k2"), 400, "invalid_request", "amount"},
      {TopUp(gw.base(), "-bad", 5, "k2"), 400, "invalid_request", "account_id"},
      {TopUp(gw.base(), "acct", 5, std::string(256, 'k')), 400, "invalid_request",
       "Idempotency-Key"},
      {Commit(gw.base(), "00000000-0000-0000-0000-000000000000"), 404, "hold_not_found", ""},
      {Commit(gw.base(), "not-a-uuid"), 404, "hold_not_found", ""},
      {Release(gw.base(), "00000000-0000-0000-0000-000000000000"), 404, "hold_not_found", ""},
      {Request(gw.base(), "GET", "/v1/holds/nope", "", "", ApiKeyHeader()), 404, "hold_not_found",
       ""},
      {Request(gw.base(), "GET", "/v1/accounts/nobody", "", "", ApiKeyHeader()), 404,
       "account_not_found", ""},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    INFO("case " << i << ": " << c.reply.body);
    CHECK(c.reply.status == c.status);
    CHECK(c.reply.json.is_object());
    CHECK(c.reply.json.value("code", "") == c.code);
    CHECK(!c.reply.json.value("message", "").empty());
    CHECK(!c.reply.json.value("request_id", "").empty());
    if (!c.param.empty()) CHECK(c.reply.json.value("param", "") == c.param);
  }
  CHECK(state() == before);
  CHECK(Commit(gw.base(), hold).status == 200);  // the good hold was untouched
  CheckCreditInvariants(db);
}

TEST_CASE("credits: the credit API needs the API key") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe);
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/v1/accounts/acct"},
           {"POST", "/v1/accounts/acct/credits"},
           {"POST", "/v1/accounts/acct/holds"},
           {"GET", "/v1/holds/00000000-0000-0000-0000-000000000000"},
           {"POST", "/v1/holds/00000000-0000-0000-0000-000000000000/commit"},
           {"POST", "/v1/holds/00000000-0000-0000-0000-000000000000/release"}}) {
    Reply r = Request(gw.base(), method, path, "{\"amount\": 5}", "application/json",
                      {{"Idempotency-Key", "k"}});
    const std::string where = path;  // doctest's message lambda cannot capture a binding (clang 14)
    CHECK_MESSAGE(r.status == 401, where);
    CHECK(r.json["code"] == "unauthorized");
  }
  CHECK(db.Scalar("SELECT count(*) FROM credit_accounts") == "0");
}

TEST_CASE(
    "credits: a connection that first ran on an empty table reads holds by key once it has grown") {
  // sql/migrations/0021_credit_plans_once.sql: with the default plan cache, a
  // connection's plans for the credit functions, made while credit_holds was
  // empty, scanned the whole table on every hold, commit and release long after
  // it had grown. pg_stat_xact_user_tables counts the scans this connection
  // has not reported yet: this transaction's, and maybe those just before.
  TestDatabase db({{"p1", 1000}});
  db.Exec(
      "INSERT INTO credit_accounts (id, balance) SELECT 'a' || i, 1000000 "
      "FROM generate_series(1, 2000) i");
  db.Exec("ANALYZE credit_holds");  // the statistics say: empty

  pqxx::connection c(db.url());  // one connection throughout: its plans stay cached
  // One hold committed and one released in a transaction; the scans of
  // credit_holds it took.
  struct Scans {
    long long seq, idx;
  };
  auto hold_commit_release = [&c] {
    pqxx::work w(c);
    const auto hold = [&w] {
      return w.exec1("SELECT hold_id FROM paintlock_credit_hold('a7', 1, interval '1 minute')")[0]
          .as<std::string>();
    };
    const pqxx::row committed =
        w.exec1("SELECT outcome FROM paintlock_credit_commit(" + w.quote(hold()) + "::uuid)");
    const pqxx::row released =
        w.exec1("SELECT outcome FROM paintlock_credit_release(" + w.quote(hold()) + "::uuid)");
    CHECK(committed[0].as<std::string>() == "committed");
    CHECK(released[0].as<std::string>() == "released");
    const pqxx::row scans = w.exec1(
        "SELECT seq_scan, idx_scan FROM pg_stat_xact_user_tables WHERE relname = 'credit_holds'");
    w.commit();
    return Scans{scans[0].as<long long>(), scans[1].as<long long>()};
  };
  for (int i = 0; i < 8; ++i) {  // past the plan cache's five custom plans
    INFO("transaction " << i << " on a nearly empty table");
    CHECK(hold_commit_release().seq == 0);
  }
  // Other accounts' holds arrive; nothing analyzes the table.
  db.Exec(
      "INSERT INTO credit_holds (account_id, amount, expires_at) "
      "SELECT 'a' || (i % 2000 + 1), 1, now() + interval '1 hour' FROM generate_series(1, 40000) "
      "i");
  const Scans grown = hold_commit_release();
  CHECK(grown.seq == 0);
  CHECK(grown.idx > 0);  // it did read credit_holds, by index
  CHECK(db.Scalar("SELECT paintlock_credit_held('a7')") == "20");
}

TEST_CASE("credits: paintlockctl credits topup, show, holds and sweep") {
  TestDatabase db({{"p1", 1000}});
  Gateway gw(db, kNoStripe);

  CompletedProcess topup =
      Ctl(db, kNoStripe,
          {"credits", "topup", "acct", "100", "--key", "ticket-1", "--reason", "opening balance"});
  CHECK(topup.exit_code == 0);
  CHECK(topup.out.find("credited 100 to acct") != std::string::npos);
  CompletedProcess replay =
      Ctl(db, kNoStripe, {"credits", "topup", "acct", "100", "--key", "ticket-1", "--json"});
  CHECK(replay.exit_code == 0);
  CHECK(replay.Json()["replayed"] == true);
  CHECK(replay.Json()["balance_after"] == 100);
  CompletedProcess reused =
      Ctl(db, kNoStripe, {"credits", "topup", "acct", "5", "--key", "ticket-1"});
  CHECK(reused.exit_code == 1);
  CHECK(reused.out.empty());
  CHECK(reused.err.find("already credited 100") != std::string::npos);
  CHECK(Account(gw.base(), "acct")["balance"] == 100);
  CHECK(
      db.Scalar(
          "SELECT count(*) || ' ' || min(reason) FROM audit_log WHERE action = 'credits_topup'") ==
      "1 opening balance");

  const std::string live = Hold(gw.base(), "acct", 30, 600).json["hold_id"];
  const std::string lapsed = Hold(gw.base(), "acct", 20, 600).json["hold_id"];
  AgeHold(db, lapsed);

  CompletedProcess show = Ctl(db, kNoStripe, {"credits", "show", "acct", "--json"});
  CHECK(show.exit_code == 0);
  CHECK(show.Json()["balance"] == 100);
  CHECK(show.Json()["held"] == 30);
  CHECK(show.Json()["available"] == 70);
  REQUIRE(show.Json()["live_holds"].size() == 1);
  CHECK(show.Json()["live_holds"][0]["hold_id"] == live);
  CompletedProcess table = Ctl(db, kNoStripe, {"credits", "show", "acct"});
  CHECK(table.exit_code == 0);
  CHECK(table.out.find("available") != std::string::npos);
  CHECK(table.out.find(live) != std::string::npos);

  CompletedProcess all = Ctl(db, kNoStripe, {"credits", "holds", "acct", "--all", "--json"});
  REQUIRE(all.Json()["holds"].size() == 2);
  CHECK(all.Json()["holds"][0]["hold_id"] == live);
  CHECK(all.Json()["holds"][1]["state"] == "expired");
  CHECK(Ctl(db, kNoStripe, {"credits", "holds", "acct"}).out.find(lapsed) == std::string::npos);

  CompletedProcess sweep = Ctl(db, kNoStripe, {"credits", "sweep", "--json"});
  CHECK(sweep.exit_code == 0);
  CHECK(sweep.Json()["expired_holds_closed"] == 1);
  CHECK(Ctl(db, kNoStripe, {"credits", "sweep"}).out == "closed 0 lapsed hold(s) as expired\n");
  CHECK(Account(gw.base(), "acct")["available"] == 70);  // the sweep changed no answer

  // Usage errors: exit 2, one line on stderr, nothing on stdout, nothing changed.
  for (const auto& args :
       std::vector<std::vector<std::string>>{{"credits", "show"},
                                             {"credits", "topup", "acct", "-5", "--key", "k"},
                                             {"credits", "topup", "acct", "1.5", "--key", "k"},
                                             {"credits", "topup", "acct", "5"},
                                             {"credits", "topup", "-bad", "5", "--key", "k"},
                                             {"credits", "holds", "acct", "--bogus"},
                                             {"credits", "nope"}}) {
    CompletedProcess bad = Ctl(db, kNoStripe, args);
    CHECK(bad.exit_code == 2);
    CHECK(bad.out.empty());
    CHECK(bad.err.find('\n') == bad.err.size() - 1);
  }
  CompletedProcess missing = Ctl(db, kNoStripe, {"credits", "show", "nobody"});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err == "paintlockctl: there is no account \"nobody\"\n");
  for (const char* name : {"show", "topup", "holds", "sweep"}) {
    CompletedProcess help = Ctl(db, kNoStripe, {"credits", name, "--help"});
    CHECK(help.exit_code == 0);
    CHECK(help.out.rfind(std::string("Usage: paintlockctl credits ") + name, 0) == 0);
  }
  CHECK(Account(gw.base(), "acct")["balance"] == 100);
  CheckCreditInvariants(db);
}
