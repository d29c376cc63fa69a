#include "locks/credits.h"

#include <doctest/doctest.h>

using namespace paintlock::locks;

TEST_CASE(
    "credits: account ids are what the schema's CHECK allows, so a bad one never reaches SQL") {
  CHECK(IsValidAccountId("acct_42"));
  CHECK(IsValidAccountId("org:team.7-a"));
  CHECK(IsValidAccountId(std::string(64, 'a')));
  CHECK(!IsValidAccountId(std::string(65, 'a')));
  CHECK(!IsValidAccountId(""));
  CHECK(!IsValidAccountId("-leading"));
  CHECK(!IsValidAccountId("has space"));
  CHECK(!IsValidAccountId("semi;colon"));
  CHECK(!IsValidAccountId("a'b"));
}

TEST_CASE("credits: credit limits leave room below bigint so sums cannot overflow") {
  // A balance is at most kMaxCreditBalance and every hold at most
  // kMaxCreditAmount; even a million maximal holds sum far below 2^63.
  CHECK(kMaxCreditBalance < INT64_MAX / 1000);
  CHECK(kMaxCreditAmount * 1000000 < INT64_MAX);
  CHECK(kMaxHoldTtl == std::chrono::hours(24));
}
