#include "locks/reservations.h"

#include <doctest/doctest.h>

#include <set>

#include "locks/database.h"

using namespace paintlock::locks;

TEST_CASE("text array literals quote every element") {
  CHECK(TextArrayLiteral({"p1", "p2"}) == R"({"p1","p2"})");
  CHECK(TextArrayLiteral({R"(a"b)", R"(c\d)", "e,f"}) == R"({"a\"b","c\\d","e,f"})");
  CHECK(TextArrayLiteral({}) == "{}");
}

TEST_CASE("reservation ids are canonical UUIDs") {
  CHECK(LooksLikeUuid("c679944e-9e0c-4d9d-afad-311cf022db35"));
  CHECK(!LooksLikeUuid("c679944e9e0c4d9dafad311cf022db35"));
  CHECK(!LooksLikeUuid("c679944e-9e0c-4d9d-afad-311cf022db3g"));
  CHECK(!LooksLikeUuid("'; DROP TABLE x; --"));
}

TEST_CASE("a new reservation id is a random version-4 UUID in lowercase") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const std::optional<std::string> id = NewReservationId();
    REQUIRE(id.has_value());
    CAPTURE(*id);
    CHECK(LooksLikeUuid(*id));
    CHECK(id->find_first_not_of("0123456789abcdef-") == std::string::npos);
    CHECK((*id)[14] == '4');
    CHECK(std::string("89ab").find((*id)[19]) != std::string::npos);
    seen.insert(*id);
  }
  CHECK(seen.size() == 1000);
}

TEST_CASE("connection strings lose their passwords before they are logged") {
  CHECK(RedactConnectionString("postgresql://alice:s3cret@db:5432/shop") ==
        "postgresql://alice:***@db:5432/shop");
  CHECK(RedactConnectionString("host=db password=s3cret dbname=shop") ==
        "host=db password=*** dbname=shop");
  CHECK(RedactConnectionString("postgresql:///shop?host=/run/pg") ==
        "postgresql:///shop?host=/run/pg");
}
