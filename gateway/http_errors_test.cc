// An error's body, written member by member, is the bytes nlohmann's object gave.
#include "gateway/http_errors.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/log.h"

using paintlock::gateway::HttpError;
using paintlock::gateway::WriteError;

namespace {

// What WriteError wrote before it wrote member by member: extra, then code,
// message and request_id set over it, dumped.
std::string AsDocument(const HttpError& error, const std::string& request_id) {
  nlohmann::json body = error.extra.is_object() ? error.extra : nlohmann::json::object();
  body["code"] = error.code;
  body["message"] = error.message;
  if (!request_id.empty()) body["request_id"] = request_id;
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

TEST_CASE("errors: a body is the bytes the JSON object would give, whatever extra holds") {
  using nlohmann::json;
  const std::vector<HttpError> errors = {
      {409, "painting_reserved", "Painting \"p1\" is being bought.",
       json{{"painting", "p1"}, {"free_at", "2026-12-07T06:00:00Z"}, {"line_position", 3}}, 5},
      {400, "invalid_request", "No extra at all.", json::object(), 0},
      // Keys before, between and after the three own ones, and one of them
      // (which the own member overwrites).
      {400, "mixed", "m",
       json{{"a", 1},
            {"code", "not this"},
            {"d", {1, 2}},
            {"n", nullptr},
            {"request_idx", true},
            {"z", json{{"nested", "x"}}}},
       0},
      // Bytes a message or an extra may carry from the request.
      {400, "quoted", "qu\"ote\\back \x01 ctl, ünïcödé, \xff not utf-8",
       json{{"param", "\xc3"}, {"currencies", {"eur", "usd"}}}, 0},
      // An extra that is not an object is not written.
      {500, "internal", "x", json::array({1, 2}), 0},
  };
  for (const std::string request_id : {"", "req_0123456789abcdef"}) {
    paintlock::base::SetCurrentRequestId(request_id);
    for (const HttpError& error : errors) {
      CAPTURE(error.code);
      CAPTURE(request_id);
      httplib::Response res;
      WriteError(res, error);
      CHECK(res.status == error.status);
      CHECK(res.get_header_value("Content-Type") == "application/json");
      CHECK(res.body == AsDocument(error, request_id));
      CHECK(res.has_header("Retry-After") == (error.retry_after_seconds > 0));
    }
  }
  paintlock::base::SetCurrentRequestId("");
}
