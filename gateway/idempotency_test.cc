// What the Idempotency-Key layer decides without a database: which keys are
// keys, what makes two requests the same request, which answers are kept.
#include "gateway/idempotency.h"

#include <doctest/doctest.h>

#include <string>

using namespace paintlock::gateway;

namespace {

httplib::Request Post(const std::string& path, const std::string& body) {
  httplib::Request req;
  req.method = "POST";
  req.path = path;
  req.body = body;
  return req;
}

httplib::Response Answer(int status, bool retry_after = false) {
  httplib::Response res;
  res.status = status;
  if (retry_after) res.set_header("Retry-After", "3");
  return res;
}

}  // namespace

TEST_CASE("idempotency: a key is 1 to 255 printable ASCII characters") {
  CHECK(IdempotencyKeyProblem("a").empty());
  CHECK(IdempotencyKeyProblem(std::string(255, 'k')).empty());
  CHECK(IdempotencyKeyProblem("order 42/retry:~!").empty());
  CHECK_FALSE(IdempotencyKeyProblem("").empty());
  CHECK_FALSE(IdempotencyKeyProblem(std::string(256, 'k')).empty());
  CHECK_FALSE(IdempotencyKeyProblem("tab\there").empty());
  CHECK_FALSE(IdempotencyKeyProblem("del\x7f").empty());
  CHECK_FALSE(IdempotencyKeyProblem("caf\xc3\xa9").empty());
  CHECK_FALSE(IdempotencyKeyProblem(std::string("nul\0x", 5)).empty());
}

TEST_CASE("idempotency: the fingerprint is SHA-256 of the request, stable and lowercase hex") {
  const std::string f = RequestFingerprint(Post("/v1/reservations", R"({"paintings":["p1"]})"));
  CHECK(f.size() == 64);
  CHECK(f.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(RequestFingerprint(Post("/v1/reservations", R"({"paintings":["p1"]})")) == f);
}

TEST_CASE("idempotency: method, path, query and body each change the fingerprint") {
  const httplib::Request base = Post("/v1/holds/h1/commit", "{}");
  const std::string f = RequestFingerprint(base);

  httplib::Request other_method = base;
  other_method.method = "PUT";
  CHECK(RequestFingerprint(other_method) != f);
  CHECK(RequestFingerprint(Post("/v1/holds/h2/commit", "{}")) != f);
  CHECK(RequestFingerprint(Post("/v1/holds/h1/commit", "{ }")) != f);
  httplib::Request with_query = base;
  with_query.params.emplace("holder", "w1");
  CHECK(RequestFingerprint(with_query) != f);
  httplib::Request other_query = base;
  other_query.params.emplace("holder", "w2");
  CHECK(RequestFingerprint(other_query) != RequestFingerprint(with_query));
}

TEST_CASE("idempotency: parts are length-prefixed, so moving bytes between them changes it") {
  CHECK(RequestFingerprint(Post("/v1/a", "b/c")) != RequestFingerprint(Post("/v1/ab", "/c")));
  CHECK(RequestFingerprint(Post("/v1/a", "")) != RequestFingerprint(Post("/v1/", "a")));
}

TEST_CASE("idempotency: answers that acted or refused for good are kept, retry-laters are not") {
  for (int kept : {200, 201, 400, 401, 404, 409, 415, 422}) {
    INFO("status " << kept);
    CHECK(KeepsAnswer(Answer(kept)));
  }
  for (int dropped : {429, 500, 502, 503}) {
    INFO("status " << dropped);
    CHECK_FALSE(KeepsAnswer(Answer(dropped)));
  }
  // 409 painting_reserved and lease_held say when to come back: nothing acted.
  CHECK_FALSE(KeepsAnswer(Answer(409, /*retry_after=*/true)));
}
