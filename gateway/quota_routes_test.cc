#include "gateway/quota_routes.h"

#include <doctest/doctest.h>

#include <map>

#include "gateway/config_test_env.h"

using namespace paintlock::gateway;
using paintlock::gateway::testing::RequiredEnvPlus;

namespace {

httplib::Request WithHeaders(std::initializer_list<std::pair<const char*, std::string>> headers,
                             std::string body = "", std::string content_type = "") {
  httplib::Request req;
  for (const auto& [k, v] : headers) req.headers.emplace(k, v);
  if (!content_type.empty()) req.headers.emplace("Content-Type", content_type);
  req.body = std::move(body);
  return req;
}

const std::string kKey = "plk_" + std::string(64, 'a');

}  // namespace

TEST_CASE("quota: a licence key comes from Authorization: License or X-License-Key") {
  std::optional<std::string> key;
  HttpError error;
  CHECK(LicenseKeyOf(WithHeaders({}), &key, &error));
  CHECK(!key);
  CHECK(LicenseKeyOf(WithHeaders({{"Authorization", "License " + kKey}}), &key, &error));
  CHECK(key == kKey);
  CHECK(LicenseKeyOf(WithHeaders({{"Authorization", "license  " + kKey + " "}}), &key, &error));
  CHECK(key == kKey);
  CHECK(LicenseKeyOf(WithHeaders({{"X-License-Key", kKey}}), &key, &error));
  CHECK(key == kKey);
  CHECK(LicenseKeyOf(WithHeaders({{"Authorization", "Bearer some-api-key"}}), &key, &error));
  CHECK(!key);
  // The API key in Authorization and a licence in X-License-Key go together.
  CHECK(LicenseKeyOf(WithHeaders({{"Authorization", "Bearer k"}, {"X-License-Key", kKey}}), &key,
                     &error));
  CHECK(key == kKey);
  CHECK(LicenseKeyOf(WithHeaders({{"Authorization", "License " + kKey}, {"X-License-Key", kKey}}),
                     &key, &error));
}

TEST_CASE("quota: unusable licence headers are refused before anything is looked up") {
  std::optional<std::string> key;
  HttpError error;
  CHECK(
      !LicenseKeyOf(WithHeaders({{"X-License-Key", std::string(kMaxLicenseHeaderBytes + 1, 'a')}}),
                    &key, &error));
  CHECK(error.status == 431);
  CHECK(error.code == "header_too_large");
  CHECK(!LicenseKeyOf(WithHeaders({{"Authorization", "License " + kKey},
                                   {"X-License-Key", "plk_" + std::string(64, 'b')}}),
                      &key, &error));
  CHECK(error.status == 400);
}

TEST_CASE("quota: a consume body is empty or {\"subject\": …} and nothing else") {
  std::optional<std::string> subject;
  HttpError error;
  CHECK(ParseConsumeBody(WithHeaders({}), &subject, &error));
  CHECK(!subject);
  CHECK(ParseConsumeBody(WithHeaders({}, "{}", "application/json"), &subject, &error));
  CHECK(!subject);
  CHECK(ParseConsumeBody(
      WithHeaders({}, R"({"subject": "user-42"})", "application/json; charset=utf-8"), &subject,
      &error));
  CHECK(subject == "user-42");

  auto refused = [&](const std::string& body, const std::string& type, int status) {
    error = HttpError{};
    CHECK_FALSE(ParseConsumeBody(WithHeaders({}, body, type), &subject, &error));
    CHECK(error.status == status);
  };
  refused(R"({"subject": "x"})", "text/plain", 415);
  refused("[1]", "application/json", 400);
  refused("{not json", "application/json", 400);
  refused(R"({"subjet": "typo"})", "application/json", 400);
  refused(R"({"subject": 42})", "application/json", 400);
  refused(R"({"subject": ""})", "application/json", 400);
  refused(R"({"subject": "line\nbreak"})", "application/json", 400);
  refused("{\"subject\": \"" + std::string(129, 'x') + "\"}", "application/json", 400);
  refused("{\"subject\": \"" + std::string(kMaxQuotaBodyBytes, 'x') + "\"}", "application/json",
          413);
}

// A field name is quoted back in the error; cut at 64 bytes through a
// multi-byte character it was invalid UTF-8, and the JSON answer could not be
// written (500 instead of 400). Found by fuzz/quota_request_fuzz.cc.
TEST_CASE("quota: an unknown field is named in printable ASCII, cut to 64 bytes") {
  std::string name;
  for (int i = 0; i < 40; ++i) name += "\xC3\xA9";
  std::optional<std::string> subject;
  HttpError error;
  CHECK_FALSE(ParseConsumeBody(WithHeaders({}, "{\"" + name + "\": 1}", "application/json"),
                               &subject, &error));
  CHECK(error.status == 400);
  CHECK(error.extra["param"] == std::string(64, '?'));
  CHECK_NOTHROW((void)error.extra.dump());
  CHECK_NOTHROW((void)nlohmann::json(error.message).dump());
}

TEST_CASE("quota: quota and licence settings are read at start-up with a line per problem") {
  std::vector<std::string> problems;
  Config c = ParseConfig(RequiredEnvPlus({}), &problems);
  CHECK(problems.empty());
  REQUIRE(c.quotas.size() == 1);
  CHECK(c.quotas[0].name == "downloads");
  CHECK(c.quotas[0].limit == 5);
  CHECK(c.quotas[0].time_zone == "UTC");
  CHECK(c.license_secret.empty());
  CHECK(c.license_cache_max_age == std::chrono::seconds(45));

  c = ParseConfig(RequiredEnvPlus({{"PAINTLOCK_QUOTAS", "downloads:5:UTC,exports:20:Europe/Paris"},
                                   {"PAINTLOCK_LICENSE_SECRET", std::string(32, 's')},
                                   {"PAINTLOCK_LICENSE_CACHE_SECONDS", "1"}}),
                  &problems);
  CHECK(problems.empty());
  CHECK(c.quotas.size() == 2);
  CHECK(c.quotas[1].time_zone == "Europe/Paris");
  CHECK(c.license_cache_max_age == std::chrono::seconds(1));

  ParseConfig(RequiredEnvPlus({{"PAINTLOCK_QUOTAS", "downloads:five:UTC,exports:20"},
                               {"PAINTLOCK_LICENSE_SECRET", "short-secret"},
                               {"PAINTLOCK_LICENSE_CACHE_SECONDS", "-1"}}),
              &problems);
  REQUIRE(problems.size() == 4);
  CHECK(problems[0].rfind("PAINTLOCK_QUOTAS: downloads: the limit", 0) == 0);
  CHECK(problems[1].rfind("PAINTLOCK_QUOTAS: \"exports:20\" must be NAME:LIMIT:TIME_ZONE", 0) == 0);
  CHECK(problems[2].rfind("PAINTLOCK_LICENSE_SECRET: must be at least 32", 0) == 0);
  CHECK(problems[2].find("short-secret") == std::string::npos);
  CHECK(problems[3].rfind("PAINTLOCK_LICENSE_CACHE_SECONDS:", 0) == 0);
}
