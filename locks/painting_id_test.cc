#include "locks/painting_id.h"

#include <doctest/doctest.h>

#include <string>

namespace paintlock::locks {

TEST_CASE("painting ids are short, plain and start with a letter or digit") {
  CHECK(IsPaintingId("p1"));
  CHECK(IsPaintingId("Harbour_at-Dawn.2"));
  CHECK(IsPaintingId(std::string(64, 'a')));
  CHECK(!IsPaintingId(""));
  CHECK(!IsPaintingId("-p1"));
  CHECK(!IsPaintingId(".hidden"));
  CHECK(!IsPaintingId("../etc"));
  CHECK(!IsPaintingId("p 1"));
  CHECK(!IsPaintingId("p1:100"));
  CHECK(!IsPaintingId(std::string("p\0", 2)));
  CHECK(!IsPaintingId(std::string(65, 'a')));
}

}  // namespace paintlock::locks
