#include "gateway/cors.h"

#include <doctest/doctest.h>

using namespace paintlock::gateway;

namespace {

const std::vector<std::string> kAllowed = {"https://shop.example", "http://localhost:3000"};

httplib::Request Req(const std::string& method, const std::string& path,
                     const std::string& origin) {
  httplib::Request req;
  req.method = method;
  req.path = path;
  if (!origin.empty()) req.headers.emplace("Origin", origin);
  return req;
}

}  // namespace

TEST_CASE("storefront: allowed origins are exact origins, normalised as browsers send them") {
  std::string problem;
  auto origins = ParseAllowedOrigins(
      " https://Shop.Example:443, http://localhost:3000 ,,http://[::1]:8080,"
      "https://shop.example",
      &problem);
  REQUIRE(origins);
  CHECK(*origins == std::vector<std::string>{"https://shop.example", "http://localhost:3000",
                                             "http://[::1]:8080"});
  for (const char* bad : {"https://shop.example/", "https://shop.example/path", "*", "shop.example",
                          "ftp://shop.example", "https://*.example", "http://x:99999"}) {
    CAPTURE(bad);
    CHECK_FALSE(ParseAllowedOrigins(bad, &problem));
    CHECK(problem.find("is not an origin") != std::string::npos);
  }
}

TEST_CASE("storefront: public paths are the storefront's endpoints only") {
  for (const char* p : {"/v1/checkout", "/v1/paintings", "/v1/paintings/p7", "/v1/paintings/stream",
                        "/paintlock.js"}) {
    CHECK(IsPublicPath(p));
  }
  for (const char* p : {"/v1/reservations", "/v1/checkout/success", "/v1/webhooks/stripe",
                        "/readyz", "/shop/", "/v1/checkouts"}) {
    CHECK_FALSE(IsPublicPath(p));
  }
}

TEST_CASE(
    "storefront: an allowed origin gets CORS headers on a public path, and nothing else does") {
  httplib::Response res;
  CHECK_FALSE(ApplyCors(kAllowed, Req("GET", "/v1/paintings", "https://shop.example"), res));
  CHECK(res.get_header_value("Access-Control-Allow-Origin") == "https://shop.example");
  CHECK(res.get_header_value("Vary") == "Origin");
  CHECK(res.get_header_value("Access-Control-Expose-Headers").find("Retry-After") !=
        std::string::npos);
  CHECK_FALSE(res.has_header("Access-Control-Allow-Credentials"));

  httplib::Response other;
  CHECK_FALSE(ApplyCors(kAllowed, Req("POST", "/v1/checkout", "https://evil.example"), other));
  CHECK_FALSE(other.has_header("Access-Control-Allow-Origin"));
  CHECK(other.get_header_value("Vary") == "Origin");

  httplib::Response private_path;
  CHECK_FALSE(
      ApplyCors(kAllowed, Req("GET", "/v1/reservations/x", "https://shop.example"), private_path));
  CHECK_FALSE(private_path.has_header("Access-Control-Allow-Origin"));
  CHECK_FALSE(private_path.has_header("Vary"));
}

TEST_CASE("storefront: preflights: 204 for an allowed origin, 403 for any other") {
  httplib::Response ok;
  auto req = Req("OPTIONS", "/v1/checkout", "http://localhost:3000");
  req.headers.emplace("Access-Control-Request-Method", "POST");
  req.headers.emplace("Access-Control-Request-Headers", "content-type");
  REQUIRE(ApplyCors(kAllowed, req, ok));
  CHECK(ok.status == 204);
  CHECK(ok.get_header_value("Access-Control-Allow-Origin") == "http://localhost:3000");
  CHECK(ok.get_header_value("Access-Control-Allow-Methods") == "POST, OPTIONS");
  CHECK(ok.get_header_value("Access-Control-Allow-Headers").find("Content-Type") !=
        std::string::npos);
  CHECK(ok.get_header_value("Access-Control-Max-Age") == "600");

  httplib::Response refused;
  REQUIRE(
      ApplyCors(kAllowed, Req("OPTIONS", "/v1/paintings/stream", "https://evil.example"), refused));
  CHECK(refused.status == 403);
  CHECK(refused.body.find("\"code\":\"origin_not_allowed\"") != std::string::npos);
  CHECK_FALSE(refused.has_header("Access-Control-Allow-Origin"));

  // No origins configured: every cross-origin preflight is refused.
  httplib::Response none;
  REQUIRE(ApplyCors({}, Req("OPTIONS", "/v1/checkout", "https://shop.example"), none));
  CHECK(none.status == 403);

  // OPTIONS without an Origin is not a preflight: it says what is allowed.
  httplib::Response plain;
  REQUIRE(ApplyCors(kAllowed, Req("OPTIONS", "/v1/paintings", ""), plain));
  CHECK(plain.status == 204);
  CHECK(plain.get_header_value("Allow") == "GET, OPTIONS");

  // Preflights for other paths are not ours to answer.
  httplib::Response elsewhere;
  CHECK_FALSE(
      ApplyCors(kAllowed, Req("OPTIONS", "/v1/reservations", "https://shop.example"), elsewhere));
}
