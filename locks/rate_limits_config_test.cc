#include "locks/rate_limits_config.h"

#include <doctest/doctest.h>

using namespace paintlock::locks;

TEST_CASE("rate limits: rate-limit buckets parse as name:capacity:refill, exactly as written") {
  std::string error;
  auto buckets = ParseRateBuckets(" api:100:10 , checkout:10:0.2,,tiny:5:0.000001", &error);
  REQUIRE(buckets);
  REQUIRE(buckets->size() == 3);
  CHECK((*buckets)[0].name == "api");
  CHECK((*buckets)[0].capacity == 100);
  CHECK((*buckets)[0].refill_per_second == "10");
  CHECK((*buckets)[1].refill_per_second == "0.2");  // sent to SQL as written: no 0.2000000001
  CHECK((*buckets)[1].refill == doctest::Approx(0.2));
  CHECK((*buckets)[2].refill_per_second == "0.000001");
  CHECK(ParseRateBuckets("", &error)->empty());
}

TEST_CASE("rate limits: malformed bucket lists are refused with the bad item named") {
  for (const char* bad :
       {"api", "api:10", "api:10:0", "api:0:1", "api:-1:1", "API:1:1", "api:1:1e3", "api:1:.5",
        "api:1:1,api:2:2", "a b:1:1", "api:1:0.0000000001", "api:2000000000:1"}) {
    std::string error;
    CHECK_MESSAGE(!ParseRateBuckets(bad, &error), bad);
    CHECK_MESSAGE(!error.empty(), bad);
  }
  std::string error;
  ParseRateBuckets("ok:1:1, nope", &error);
  CHECK(error.find("\"nope\"") != std::string::npos);
  ParseRateBuckets("api:1:1,api:2:2", &error);
  CHECK(error.find("twice") != std::string::npos);
}

TEST_CASE(
    "rate limits: the checkout bucket always exists, a configured one wins over the default") {
  auto defaults = WithDefaultBuckets({});
  REQUIRE(defaults.size() == 1);
  CHECK(defaults[0].name == kCheckoutBucket);
  CHECK(defaults[0].capacity == 120);

  std::string error;
  auto mine = WithDefaultBuckets(*ParseRateBuckets("checkout:3:0.01,api:5:1", &error));
  REQUIRE(mine.size() == 2);
  CHECK(mine[0].capacity == 3);
  CHECK(mine[1].name == "api");
}

TEST_CASE(
    "rate limits: a key finds its bucket by the bucket field or its prefix, and both name one "
    "row") {
  std::string error;
  auto buckets = *ParseRateBuckets("api:100:10,checkout:10:0.2", &error);
  BucketKeyProblem problem{};
  std::string name;

  auto by_prefix = ResolveBucketKey(buckets, "api:u42", "", &problem, &name);
  REQUIRE(by_prefix);
  CHECK(by_prefix->bucket->name == "api");
  CHECK(by_prefix->key == "api:u42");

  auto by_field = ResolveBucketKey(buckets, "u42", "api", &problem, &name);
  REQUIRE(by_field);
  CHECK(by_field->key == "api:u42");  // the same row as by prefix

  auto already = ResolveBucketKey(buckets, "api:u42", "api", &problem, &name);
  REQUIRE(already);
  CHECK(already->key == "api:u42");

  // The field wins: the whole key becomes a subject of that bucket.
  auto field_wins = ResolveBucketKey(buckets, "api:u42", "checkout", &problem, &name);
  REQUIRE(field_wins);
  CHECK(field_wins->bucket->name == "checkout");
  CHECK(field_wins->key == "checkout:api:u42");

  CHECK(!ResolveBucketKey(buckets, "u42", "", &problem, &name));
  CHECK(problem == BucketKeyProblem::kNoBucket);
  CHECK(!ResolveBucketKey(buckets, ":u42", "", &problem, &name));
  CHECK(problem == BucketKeyProblem::kNoBucket);
  CHECK(!ResolveBucketKey(buckets, "nope:u42", "", &problem, &name));
  CHECK(problem == BucketKeyProblem::kUnknownBucket);
  CHECK(name == "nope");
  CHECK(!ResolveBucketKey(buckets, "u42", "other", &problem, &name));
  CHECK(problem == BucketKeyProblem::kUnknownBucket);
  CHECK(name == "other");
}

TEST_CASE("rate limits: rate-limit keys are short and plain") {
  CHECK(IsValidRateKey("api:user-42@example.com"));
  CHECK(IsValidRateKey(std::string(200, 'k')));
  CHECK(!IsValidRateKey(std::string(201, 'k')));
  CHECK(!IsValidRateKey(""));
  CHECK(!IsValidRateKey("api:a b"));
  CHECK(!IsValidRateKey("api:a/b"));
  CHECK(!IsValidRateKey("api:\xc3\xa9"));
}
