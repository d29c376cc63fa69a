#include "base/log.h"

#include <doctest/doctest.h>

namespace paintlock::base {
namespace {

TEST_CASE("A caller field cannot overwrite the logger's own fields") {
  RequestScope scope("req-12345678");
  auto line = nlohmann::json::parse(FormatLogLine(
      LogLevel::kInfo, "reservation_granted",
      {{"ts", "forged"}, {"level", "error"}, {"event", "other"}, {"request_id", "x"}, {"n", 1}}));
  CHECK(line["event"] == "reservation_granted");
  CHECK(line["level"] == "info");
  CHECK(line["request_id"] == "req-12345678");
  CHECK(line["ts"] != "forged");
  CHECK(line["field_ts"] == "forged");
  CHECK(line["field_level"] == "error");
  CHECK(line["field_event"] == "other");
  CHECK(line["field_request_id"] == "x");
  CHECK(line["n"] == 1);
}

}  // namespace
}  // namespace paintlock::base
