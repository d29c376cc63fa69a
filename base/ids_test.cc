#include "base/ids.h"

#include <doctest/doctest.h>

#include <set>
#include <thread>
#include <vector>

namespace paintlock::base {
namespace {

TEST_CASE("RandomHex gives no bytes when the source fails") {
  const RandomSource failing = [](unsigned char*, std::size_t) { return false; };
  CHECK_FALSE(RandomHex(32, failing).has_value());
  auto ok = RandomHex(16);
  REQUIRE(ok.has_value());
  CHECK(ok->size() == 32);
}

TEST_CASE("NewRequestId is 24 hex characters and does not repeat") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string id = NewRequestId();
    CHECK(id.size() == 24);
    CHECK(id.find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(id);
  }
  CHECK(seen.size() == 1000);
}

TEST_CASE("NewRequestId does not repeat across threads") {
  constexpr int kThreads = 8, kEach = 2000;
  std::vector<std::vector<std::string>> ids(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&ids, t] {
      for (int i = 0; i < kEach; ++i) ids[t].push_back(NewRequestId());
    });
  }
  for (auto& thread : threads) thread.join();
  std::set<std::string> seen;
  for (const auto& some : ids) seen.insert(some.begin(), some.end());
  CHECK(seen.size() == static_cast<size_t>(kThreads * kEach));
}

}  // namespace
}  // namespace paintlock::base
