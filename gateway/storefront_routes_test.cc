#include "gateway/storefront_routes.h"

#include <doctest/doctest.h>

#include <map>

#include "gateway/config_test_env.h"

using namespace paintlock::gateway;
using paintlock::gateway::testing::RequiredEnvPlus;

namespace {

HttpError Reserved() {
  return {
      409, "painting_reserved", "…", {{"painting", "p7"}, {"free_at", "2026-12-02T14:05:09Z"}}, 42};
}

}  // namespace

TEST_CASE("storefront: a conflict goes to the unavailable page with painting, code and free_at") {
  CHECK(UnavailableLocation("https://shop.example/taken", Reserved()) ==
        "https://shop.example/"
        "taken?painting=p7&code=painting_reserved&free_at=2026-12-02T14%3A05%3A09Z");
  CHECK(UnavailableLocation("https://shop.example/taken?lang=fr#top", Reserved()) ==
        "https://shop.example/taken?lang=fr&painting=p7&code=painting_reserved"
        "&free_at=2026-12-02T14%3A05%3A09Z#top");
  CHECK(UnavailableLocation("https://shop.example/taken?", Reserved()) ==
        "https://shop.example/"
        "taken?painting=p7&code=painting_reserved&free_at=2026-12-02T14%3A05%3A09Z");

  HttpError sold{409, "painting_sold", "…", {{"painting", "p 1&x"}}, 0};
  CHECK(UnavailableLocation("https://shop.example/taken", sold) ==
        "https://shop.example/taken?painting=p%201%26x&code=painting_sold");
  HttpError busy{409, "painting_busy", "…", nlohmann::json::object(), 1};
  CHECK(UnavailableLocation("https://shop.example/taken", busy) ==
        "https://shop.example/taken?code=painting_busy");
}

TEST_CASE("storefront: only conflicts are redirected, and only when a URL is configured") {
  CHECK(UnavailableLocation("", Reserved()).empty());
  CHECK(
      UnavailableLocation("https://shop.example/taken", InvalidRequest("bad", "painting")).empty());
  CHECK(UnavailableLocation("https://shop.example/taken",
                            {503, "stripe_unavailable", "…", nlohmann::json::object(), 5})
            .empty());

  httplib::Response res;
  CHECK(RedirectToUnavailablePage("https://shop.example/taken", Reserved(), res));
  CHECK(res.status == 303);
  CHECK(res.get_header_value("Location").rfind("https://shop.example/taken?painting=p7", 0) == 0);
  CHECK(res.get_header_value("Retry-After") == "42");
  httplib::Response untouched;
  CHECK_FALSE(RedirectToUnavailablePage("", Reserved(), untouched));
  CHECK(untouched.status == -1);
}

TEST_CASE("storefront: the storefront settings are read and checked at start-up") {
  std::vector<std::string> problems;
  Config defaults = ParseConfig(RequiredEnvPlus({}), &problems);
  CHECK(problems.empty());
  CHECK(defaults.allowed_origins.empty());
  CHECK(defaults.unavailable_url.empty());
  CHECK(defaults.max_streams == 200);
  CHECK(defaults.stream_heartbeat == std::chrono::seconds(15));

  Config c = ParseConfig(
      RequiredEnvPlus({{"PAINTLOCK_ALLOWED_ORIGINS", "https://shop.example,http://127.0.0.1:3000"},
                       {"PAINTLOCK_UNAVAILABLE_URL", "https://shop.example/taken"},
                       {"PAINTLOCK_MAX_STREAMS", "0"},
                       {"PAINTLOCK_STREAM_HEARTBEAT_SECONDS", "1"}}),
      &problems);
  CHECK(problems.empty());
  CHECK(c.allowed_origins ==
        std::vector<std::string>{"https://shop.example", "http://127.0.0.1:3000"});
  CHECK(c.unavailable_url == "https://shop.example/taken");
  CHECK(c.max_streams == 0);
  CHECK(c.stream_heartbeat == std::chrono::seconds(1));

  ParseConfig(RequiredEnvPlus({{"PAINTLOCK_ALLOWED_ORIGINS", "https://shop.example/"},
                               {"PAINTLOCK_UNAVAILABLE_URL", "/taken"},
                               {"PAINTLOCK_MAX_STREAMS", "5000"},
                               {"PAINTLOCK_STREAM_HEARTBEAT_SECONDS", "0"}}),
              &problems);
  REQUIRE(problems.size() == 4);
  CHECK(problems[0].rfind("PAINTLOCK_ALLOWED_ORIGINS: \"https://shop.example/\" is not an origin",
                          0) == 0);
  CHECK(problems[1] == "PAINTLOCK_UNAVAILABLE_URL: must be an http(s) URL");
  CHECK(problems[2].rfind("PAINTLOCK_MAX_STREAMS:", 0) == 0);
  CHECK(problems[3].rfind("PAINTLOCK_STREAM_HEARTBEAT_SECONDS:", 0) == 0);
}

TEST_CASE("storefront: the compiled-in script is gateway/paintlock.js") {
  const std::string_view script = PaintlockScript();
  CHECK(script.rfind("/*! paintlock.js", 0) == 0);
  CHECK(script.find("data-paintlock-painting") != std::string_view::npos);
  CHECK(script.find("/v1/paintings/stream") != std::string_view::npos);
  CHECK(script.substr(script.size() - 6) == "})();\n");
}
