#include "locks/reservations.h"

#include <doctest/doctest.h>

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

TEST_CASE("connection strings lose their passwords before they are logged") {
  CHECK(RedactConnectionString("postgresql://alice:s3cret@db:5432/shop") ==
        "postgresql://alice:***@db:5432/shop");
  CHECK(RedactConnectionString("host=db password=s3cret dbname=shop") ==
        "host=db password=*** dbname=shop");
  CHECK(RedactConnectionString("postgresql:///shop?host=/run/pg") ==
        "postgresql:///shop?host=/run/pg");
}
