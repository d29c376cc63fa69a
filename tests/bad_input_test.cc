// Bad input as data: every row is a request that must be refused with a given
// status and stable `code` while writing nothing — checked on every table the
// gateway writes, before and after each row, against one real gateway, fake
// Stripe and PostgreSQL. The rows cover README's error tables (API, quotas,
// credits, rate limits, leases, webhooks) and every malformed input the
// fuzzers found (fuzz/, fixtures/fuzz/). A new refusal adds a row.
//
// Not here: answers that depend on timing or on an outside fault rather than
// on the request (409 painting_busy, 502 stripe_error, 503 unavailable), and
// refusals that are not "nothing written" by design (429 quota_exceeded and
// rate_limited count nothing, but they are state, not bad input).
#include <doctest/doctest.h>

#include <ctime>
#include <map>
#include <regex>

#include "tests/support/harness.h"
#include "webhooks/signature.h"

using namespace paintlock::testing;
using nlohmann::json;

namespace {

// Every table a request could write, as one fingerprint per table.
constexpr const char* kTables[] = {
    "paintings",     "painting_locks",     "reservations", "reservation_items", "stripe_events",
    "audit_log",     "quota_usage",        "licenses",     "credit_accounts",   "credit_holds",
    "credit_topups", "rate_limit_buckets", "leases",       "line_entries"};

std::map<std::string, std::string> Fingerprints(TestDatabase& db) {
  std::string sql;
  for (const char* table : kTables) {
    if (!sql.empty()) sql += " UNION ALL ";
    sql += std::string("SELECT '") + table + "', count(*)::text || ':' || " +
           "md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) FROM " + table + " t";
  }
  std::map<std::string, std::string> out;
  for (const auto& row : db.Exec(sql)) out[row[0].c_str()] = row[1].c_str();
  return out;
}

struct Row {
  const char* what;  // why this input is bad, for the failure message
  std::string method;
  std::string path;
  std::string body;
  std::string content_type;
  httplib::Headers headers;
  int status;
  std::string code;
};

httplib::Headers Key() { return ApiKeyHeader(); }
httplib::Headers KeyAnd(const std::string& name, const std::string& value) {
  httplib::Headers h = ApiKeyHeader();
  h.emplace(name, value);
  return h;
}
httplib::Headers Just(const std::string& name, const std::string& value) { return {{name, value}}; }

// The stable code of an answer: the JSON `code`, or for a form post's HTML
// page its data-code attribute.
std::string CodeOf(const Reply& r) {
  if (r.json.is_object() && r.json.contains("code")) return r.json["code"].get<std::string>();
  std::smatch m;
  static const std::regex data_code(R"re(data-code="([a-z_]+)")re");
  if (std::regex_search(r.body, m, data_code)) return m[1];
  return "";
}

std::string Signed(const std::string& body, std::int64_t at) {
  return paintlock::webhooks::SignatureHeader(kWebhookSecret, at, body);
}

const std::string kJson = "application/json";
const std::string kForm = "application/x-www-form-urlencoded";

std::string CartOf(int n) {
  json ids = json::array();
  for (int i = 0; i < n; ++i) ids.push_back("x" + std::to_string(i));
  return json{{"paintings", ids}}.dump();
}

std::string TwoByteChars(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += "\xC3\xA9";  // é
  return s;
}

}  // namespace

TEST_CASE("bad input: every row is refused with its status and code, and writes nothing") {
  TestDatabase db({{"p1", 1000}, {"p2", 2000}, {"p3", 3000}, {"p4", 4000}, {"p5", 5000}});
  db.Exec("UPDATE paintings SET currency = 'usd' WHERE id = 'p5'");
  db.Exec("UPDATE paintings SET sold_at = now() WHERE id = 'p4'");
  // The per-visitor checkout limit counts every attempt, bad ones included, by
  // design (it is what stops a flood of them); it is off here so that a
  // refused checkout must leave rate_limit_buckets untouched too.
  Shop shop(db, {{"PAINTLOCK_CHECKOUT_RATE_LIMIT", "off"},
                 {"PAINTLOCK_MAX_BODY_BYTES", "2048"},
                 {"PAINTLOCK_RATE_LIMITS", "api:10:1"}});
  const std::string base = shop.gateway.base();

  // State the conflict rows need: p3 reserved, an account with 100 credits,
  // lease "job-1" held by w1.
  REQUIRE(PostJson(base, "/v1/reservations", {{"paintings", {"p3"}}}, Key()).status == 201);
  REQUIRE(PostJson(base, "/v1/accounts/acct-1/credits", {{"amount", 100}},
                   KeyAnd("Idempotency-Key", "setup-1"))
              .status == 200);
  Reply lease = PostJson(base, "/v1/leases/job-1", {{"holder", "w1"}, {"ttl_seconds", 600}}, Key());
  REQUIRE(lease.status == 200);
  const std::string token = std::to_string(lease.json["token"].get<std::int64_t>());
  // This test's address waits in p3's line.
  REQUIRE(Request(base, "POST", "/v1/paintings/p3/line").status == 201);
  const std::string forged = "plt_" + std::string(64, 'f');
  const std::int64_t now = std::time(nullptr);
  const std::string completed =
      R"({"id":"evt_bad_1","type":"checkout.session.completed","data":{"object":{"object":"checkout.session","id":"cs_unknown","payment_status":"paid"}}})";

  const std::vector<Row> rows = {
      // ---- waiting lines (README "Waiting in line")
      {"join the line of a free painting",
       "POST",
       "/v1/paintings/p1/line",
       "",
       kJson,
       {},
       409,
       "painting_free"},
      {"join the line of a sold painting",
       "POST",
       "/v1/paintings/p4/line",
       "",
       kJson,
       {},
       409,
       "painting_sold"},
      {"join the line of an unknown painting",
       "POST",
       "/v1/paintings/nope/line",
       "",
       kJson,
       {},
       404,
       "painting_not_found"},
      {"join a line twice", "POST", "/v1/paintings/p3/line", "", kJson, {}, 409, "already_in_line"},
      {"a forged line token", "GET", "/v1/paintings/p3/line", "", "",
       Just("Paintlock-Line-Token", forged), 404, "line_token_invalid"},
      {"leave with a forged line token", "DELETE", "/v1/paintings/p3/line", "", "",
       Just("Paintlock-Line-Token", forged), 404, "line_token_invalid"},
      {"a malformed line token",
       "GET",
       "/v1/paintings/p3/line?token=plt_1",
       "",
       "",
       {},
       400,
       "invalid_request"},
      {"leave without a line token",
       "DELETE",
       "/v1/paintings/p3/line",
       "",
       "",
       {},
       400,
       "invalid_request"},
      {"checkout with a malformed line token",
       "POST",
       "/v1/checkout",
       R"({"paintings": ["p1"], "line_token": "plt_nope"})",
       kJson,
       {},
       400,
       "invalid_request"},
      {"checkout with a line token that is not a string",
       "POST",
       "/v1/checkout",
       R"({"paintings": ["p1"], "line_token": 7})",
       kJson,
       {},
       400,
       "invalid_request"},
      {"checkout form with two line tokens",
       "POST",
       "/v1/checkout",
       "painting=p1&line_token=" + forged + "&line_token=" + forged,
       kForm,
       {},
       400,
       "invalid_request"},
      {"checkout of a held painting with a forged line token",
       "POST",
       "/v1/checkout",
       R"({"paintings": ["p3"], "line_token": ")" + forged + R"("})",
       kJson,
       {},
       409,
       "painting_reserved"},
      // ---- POST /v1/checkout (README "API")
      {"empty cart",
       "POST",
       "/v1/checkout",
       R"({"paintings": []})",
       kJson,
       {},
       400,
       "invalid_request"},
      {"no paintings field",
       "POST",
       "/v1/checkout",
       R"({"painting": ["p1"]})",
       kJson,
       {},
       400,
       "invalid_request"},
      {"duplicate painting",
       "POST",
       "/v1/checkout",
       R"({"paintings": ["p1", "p1"]})",
       kJson,
       {},
       400,
       "invalid_request"},
      {"101 paintings", "POST", "/v1/checkout", CartOf(101), kJson, {}, 400, "invalid_request"},
      {"malformed JSON",
       "POST",
       "/v1/checkout",
       R"({"paintings": ["p1")",
       kJson,
       {},
       400,
       "invalid_request"},
      {"JSON that is not an object",
       "POST",
       "/v1/checkout",
       R"(["p1"])",
       kJson,
       {},
       400,
       "invalid_request"},
      {"ids that are not strings",
       "POST",
       "/v1/checkout",
       R"({"paintings": [1]})",
       kJson,
       {},
       400,
       "invalid_request"},
      {"an id with a path in it",
       "POST",
       "/v1/checkout",
       R"({"paintings": ["../p1"]})",
       kJson,
       {},
       400,
       "invalid_request"},
      {"buyer on the storefront route",
       "POST",
       "/v1/checkout",
       R"({"paintings": ["p1"], "buyer": "b"})",
       kJson,
       {},
       400,
       "invalid_request"},
      {"mixed currencies",
       "POST",
       "/v1/checkout",
       R"({"paintings": ["p1", "p5"]})",
       kJson,
       {},
       400,
       "invalid_request"},
      {"malformed form escape",
       "POST",
       "/v1/checkout",
       "painting=%zz",
       kForm,
       {},
       400,
       "invalid_request"},
      {"empty form", "POST", "/v1/checkout", "", kForm, {}, 400, "invalid_request"},
      {"fuzz: form id of non-UTF-8 bytes (was 500)",
       "POST",
       "/v1/checkout",
       "painting=%FF%FE",
       kForm,
       {},
       400,
       "invalid_request"},
      {"fuzz: 80-byte cut through a UTF-8 character (was 500)",
       "POST",
       "/v1/checkout",
       json{{"paintings", {TwoByteChars(41)}}}.dump(),
       kJson,
       {},
       400,
       "invalid_request"},
      {"unknown painting",
       "POST",
       "/v1/checkout",
       R"({"paintings": ["nope"]})",
       kJson,
       {},
       404,
       "painting_not_found"},
      {"reserved painting",
       "POST",
       "/v1/checkout",
       R"({"paintings": ["p1", "p3"]})",
       kJson,
       {},
       409,
       "painting_reserved"},
      {"sold painting",
       "POST",
       "/v1/checkout",
       R"({"paintings": ["p4"]})",
       kJson,
       {},
       409,
       "painting_sold"},
      {"body over PAINTLOCK_MAX_BODY_BYTES",
       "POST",
       "/v1/checkout",
       R"({"paintings": ["p1"], "pad": ")" + std::string(4096, 'x') + "\"}",
       kJson,
       {},
       413,
       "request_too_large"},
      {"text/plain",
       "POST",
       "/v1/checkout",
       R"({"paintings": ["p1"]})",
       "text/plain",
       {},
       415,
       "unsupported_media_type"},
      // ---- /v1/paintings and /v1/reservations
      {"fuzz: painting id of non-UTF-8 bytes in the path (was 500)",
       "GET",
       "/v1/paintings/%FF%FE",
       "",
       "",
       {},
       404,
       "painting_not_found"},
      {"reservation without the API key",
       "POST",
       "/v1/reservations",
       R"({"paintings": ["p1"]})",
       kJson,
       {},
       401,
       "unauthorized"},
      {"reservation with a wrong API key", "POST", "/v1/reservations", R"({"paintings": ["p1"]})",
       kJson, Just("Authorization", "Bearer wrong-key-0123456789"), 401, "unauthorized"},
      {"buyer too long", "POST", "/v1/reservations",
       json{{"paintings", {"p1"}}, {"buyer", std::string(201, 'b')}}.dump(), kJson, Key(), 400,
       "invalid_request"},
      {"buyer not a string", "POST", "/v1/reservations", R"({"paintings": ["p1"], "buyer": 7})",
       kJson, Key(), 400, "invalid_request"},
      {"reservation as a form", "POST", "/v1/reservations", "painting=p1", kForm, Key(), 415,
       "unsupported_media_type"},
      {"unknown reservation", "GET", "/v1/reservations/r-nope", "", "", Key(), 404,
       "reservation_not_found"},
      {"release of an unknown reservation", "DELETE", "/v1/reservations/r-nope", "", "", Key(), 404,
       "reservation_not_found"},
      // ---- POST /v1/webhooks/stripe
      {"webhook without a signature",
       "POST",
       "/v1/webhooks/stripe",
       completed,
       kJson,
       {},
       400,
       "invalid_signature"},
      {"webhook signed with another secret", "POST", "/v1/webhooks/stripe", completed, kJson,
       Just("Stripe-Signature",
            paintlock::webhooks::SignatureHeader("whsec_other", now, completed)),
       400, "invalid_signature"},
      {"webhook signed 10 minutes ago", "POST", "/v1/webhooks/stripe", completed, kJson,
       Just("Stripe-Signature", Signed(completed, now - 600)), 400, "invalid_signature"},
      {"webhook signature over another body", "POST", "/v1/webhooks/stripe", completed + " ", kJson,
       Just("Stripe-Signature", Signed(completed, now)), 400, "invalid_signature"},
      {"signed webhook that is not JSON", "POST", "/v1/webhooks/stripe", "{not json", kJson,
       Just("Stripe-Signature", Signed("{not json", now)), 400, "invalid_request"},
      {"signed checkout event without a session", "POST", "/v1/webhooks/stripe",
       R"({"id":"evt_x","type":"checkout.session.expired","data":{"object":{"object":"charge"}}})",
       kJson,
       Just(
           "Stripe-Signature",
           Signed(
               R"({"id":"evt_x","type":"checkout.session.expired","data":{"object":{"object":"charge"}}})",
               now)),
       400, "invalid_request"},
      // ---- quotas (README "Daily quotas and licences", Errors)
      {"quota: unknown field",
       "POST",
       "/v1/quotas/downloads/consume",
       R"({"subjet": "x"})",
       kJson,
       {},
       400,
       "invalid_request"},
      {"fuzz: unknown field cut through a UTF-8 character (was 500)",
       "POST",
       "/v1/quotas/downloads/consume",
       "{\"" + TwoByteChars(40) + "\": 1}",
       kJson,
       {},
       400,
       "invalid_request"},
      {"quota: subject not a string", "POST", "/v1/quotas/downloads/consume", R"({"subject": 4})",
       kJson, Key(), 400, "invalid_request"},
      {"quota: subject with a control character", "POST", "/v1/quotas/downloads/consume",
       R"({"subject": "a\nb"})", kJson, Key(), 400, "invalid_request"},
      {"quota: two different licence keys", "POST", "/v1/quotas/downloads/consume", "", "",
       httplib::Headers{{"Authorization", "License plk_a"}, {"X-License-Key", "plk_b"}}, 400,
       "invalid_request"},
      {"quota: subject without the API key",
       "POST",
       "/v1/quotas/downloads/consume",
       R"({"subject": "user-1"})",
       kJson,
       {},
       401,
       "unauthorized"},
      {"quota: wrong API key", "POST", "/v1/quotas/downloads/consume", "", "",
       Just("Authorization", "Bearer wrong-key-0123456789"), 401, "unauthorized"},
      {"quota: forged licence key", "POST", "/v1/quotas/downloads/consume", "", "",
       Just("X-License-Key", "plk_forged"), 401, "license_invalid"},
      {"licence check without a key", "GET", "/v1/license", "", "", {}, 401, "license_missing"},
      {"licence not found", "GET", "/v1/licenses/plk_nope", "", "", {}, 404, "license_not_found"},
      {"quota: unknown quota",
       "POST",
       "/v1/quotas/uploads/consume",
       "",
       "",
       {},
       404,
       "quota_not_found"},
      {"fuzz: quota name of non-UTF-8 bytes (was 500)",
       "GET",
       "/v1/quotas/%FF%C3",
       "",
       "",
       {},
       404,
       "quota_not_found"},
      {"quota: body over 1 KiB", "POST", "/v1/quotas/downloads/consume",
       json{{"subject", std::string(1100, 's')}}.dump(), kJson, Key(), 413, "request_too_large"},
      {"quota: form body", "POST", "/v1/quotas/downloads/consume", "subject=x", kForm, Key(), 415,
       "unsupported_media_type"},
      {"quota: X-License-Key over 256 bytes", "POST", "/v1/quotas/downloads/consume", "", "",
       Just("X-License-Key", std::string(300, 'k')), 431, "header_too_large"},
      {"quota: Authorization over 1 KiB", "POST", "/v1/quotas/downloads/consume", "", "",
       Just("Authorization", "License " + std::string(1100, 'k')), 431, "header_too_large"},
      // ---- credits (README "Credit holds")
      {"top-up without the API key", "POST", "/v1/accounts/acct-1/credits", R"({"amount": 5})",
       kJson, Just("Idempotency-Key", "k-1"), 401, "unauthorized"},
      {"top-up without an Idempotency-Key", "POST", "/v1/accounts/acct-1/credits",
       R"({"amount": 5})", kJson, Key(), 400, "idempotency_key_required"},
      {"top-up with a 256-character Idempotency-Key", "POST", "/v1/accounts/acct-1/credits",
       R"({"amount": 5})", kJson, KeyAnd("Idempotency-Key", std::string(256, 'k')), 400,
       "invalid_request"},
      {"top-up amount 5.0", "POST", "/v1/accounts/acct-1/credits", R"({"amount": 5.0})", kJson,
       KeyAnd("Idempotency-Key", "k-2"), 400, "invalid_request"},
      {"top-up amount \"5\"", "POST", "/v1/accounts/acct-1/credits", R"({"amount": "5"})", kJson,
       KeyAnd("Idempotency-Key", "k-3"), 400, "invalid_request"},
      {"top-up amount -1", "POST", "/v1/accounts/acct-1/credits", R"({"amount": -1})", kJson,
       KeyAnd("Idempotency-Key", "k-4"), 400, "invalid_request"},
      {"top-up amount 1e30", "POST", "/v1/accounts/acct-1/credits", R"({"amount": 1e30})", kJson,
       KeyAnd("Idempotency-Key", "k-5"), 400, "invalid_request"},
      {"top-up amount past uint64", "POST", "/v1/accounts/acct-1/credits",
       R"({"amount": 18446744073709551616})", kJson, KeyAnd("Idempotency-Key", "k-6"), 400,
       "invalid_request"},
      {"top-up amount true", "POST", "/v1/accounts/acct-1/credits", R"({"amount": true})", kJson,
       KeyAnd("Idempotency-Key", "k-7"), 400, "invalid_request"},
      {"top-up with the same key and another amount", "POST", "/v1/accounts/acct-1/credits",
       R"({"amount": 7})", kJson, KeyAnd("Idempotency-Key", "setup-1"), 422,
       "idempotency_key_reused"},
      {"hold without ttl", "POST", "/v1/accounts/acct-1/holds", R"({"amount": 5})", kJson, Key(),
       400, "invalid_request"},
      {"hold ttl 0", "POST", "/v1/accounts/acct-1/holds", R"({"amount": 5, "ttl_seconds": 0})",
       kJson, Key(), 400, "invalid_request"},
      {"hold ttl over a day", "POST", "/v1/accounts/acct-1/holds",
       R"({"amount": 5, "ttl_seconds": 86401})", kJson, Key(), 400, "invalid_request"},
      {"hold amount over 10^12", "POST", "/v1/accounts/acct-1/holds",
       R"({"amount": 1000000000001, "ttl_seconds": 60})", kJson, Key(), 400, "invalid_request"},
      {"hold body not JSON", "POST", "/v1/accounts/acct-1/holds", "amount=5", kForm, Key(), 415,
       "unsupported_media_type"},
      {"hold on an unknown account", "POST", "/v1/accounts/acct-nope/holds",
       R"({"amount": 5, "ttl_seconds": 60})", kJson, Key(), 404, "account_not_found"},
      {"hold over the balance", "POST", "/v1/accounts/acct-1/holds",
       R"({"amount": 101, "ttl_seconds": 60})", kJson, Key(), 409, "insufficient_credits"},
      // ---- rate limits (README "Rate limits")
      {"take with a key of bad characters", "POST", "/v1/ratelimits/api%20x/take", "", kJson, Key(),
       400, "invalid_request"},
      {"take with cost 0", "POST", "/v1/ratelimits/api:u1/take", R"({"cost": 0})", kJson, Key(),
       400, "invalid_request"},
      {"take with cost 1.5", "POST", "/v1/ratelimits/api:u1/take", R"({"cost": 1.5})", kJson, Key(),
       400, "invalid_request"},
      {"take with a bucket that is not a string", "POST", "/v1/ratelimits/u1/take",
       R"({"bucket": 1})", kJson, Key(), 400, "invalid_request"},
      {"take from an unknown bucket", "POST", "/v1/ratelimits/nobucket:u1/take", "", kJson, Key(),
       400, "unknown_bucket"},
      {"take more than the capacity", "POST", "/v1/ratelimits/api:u1/take", R"({"cost": 11})",
       kJson, Key(), 422, "cost_over_capacity"},
      {"take without the API key",
       "POST",
       "/v1/ratelimits/api:u1/take",
       "",
       kJson,
       {},
       401,
       "unauthorized"},
      // ---- leases (README "Leases")
      {"lease name starting with a dash", "POST", "/v1/leases/-job",
       R"({"holder": "w2", "ttl_seconds": 5})", kJson, Key(), 400, "invalid_request"},
      {"lease holder with a space", "POST", "/v1/leases/job-2",
       R"({"holder": "w 2", "ttl_seconds": 5})", kJson, Key(), 400, "invalid_request"},
      {"lease ttl as a string", "POST", "/v1/leases/job-2",
       R"({"holder": "w2", "ttl_seconds": "5"})", kJson, Key(), 400, "invalid_request"},
      {"lease body as a form", "POST", "/v1/leases/job-2", "holder=w2", kForm, Key(), 415,
       "unsupported_media_type"},
      {"lease held by another", "POST", "/v1/leases/job-1", R"({"holder": "w2", "ttl_seconds": 5})",
       kJson, Key(), 409, "lease_held"},
      {"renew without a token", "POST", "/v1/leases/job-1/renew",
       R"({"holder": "w1", "ttl_seconds": 5})", kJson, Key(), 400, "invalid_request"},
      {"renew with token 0", "POST", "/v1/leases/job-1/renew",
       R"({"holder": "w1", "ttl_seconds": 5, "token": 0})", kJson, Key(), 400, "invalid_request"},
      {"renew by a stale holder", "POST", "/v1/leases/job-1/renew",
       R"({"holder": "w2", "ttl_seconds": 5, "token": )" + token + "}", kJson, Key(), 409,
       "lease_lost"},
      {"renew of an unknown lease", "POST", "/v1/leases/job-nope/renew",
       R"({"holder": "w1", "ttl_seconds": 5, "token": 1})", kJson, Key(), 404, "lease_not_found"},
      {"release without a holder", "DELETE", "/v1/leases/job-1?token=" + token, "", "", Key(), 400,
       "invalid_request"},
      {"release with a token that is not a number", "DELETE", "/v1/leases/job-1?holder=w1&token=1x",
       "", "", Key(), 400, "invalid_request"},
      {"release by a stale holder", "DELETE", "/v1/leases/job-1?holder=w2&token=" + token, "", "",
       Key(), 409, "lease_lost"},
  };

  int checked = 0;
  for (const Row& row : rows) {
    INFO("row: " << row.what << " (" << row.method << " " << row.path << ")");
    const auto before = Fingerprints(db);
    const std::size_t sessions_before = shop.stripe.Sessions().size();
    const Reply r = Request(base, row.method, row.path, row.body, row.content_type, row.headers);
    CHECK(r.status == row.status);
    CHECK(CodeOf(r) == row.code);
    if (r.json.is_object()) CHECK(r.json.value("message", "") != "");
    const auto after = Fingerprints(db);
    for (const char* table : kTables) {
      INFO("table " << table << " changed");
      CHECK(before.at(table) == after.at(table));
    }
    CHECK(shop.stripe.Sessions().size() == sessions_before);
    ++checked;
  }
  CHECK(checked == static_cast<int>(rows.size()));
  CHECK(shop.gateway.process().Running());
  CheckInvariants(db);
}
