#include "base/ids.h"

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
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

TEST_CASE("SystemRandom's small draws do not repeat, across refills and threads") {
  constexpr int kThreads = 4, kEach = 4000;  // 16 bytes each: 4 fills of the buffer a thread
  std::vector<std::vector<std::string>> drawn(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&drawn, t] {
      for (int i = 0; i < kEach; ++i) {
        unsigned char bytes[16];
        if (SystemRandom(bytes, sizeof bytes)) drawn[t].push_back(Hex(bytes, sizeof bytes));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::set<std::string> seen;
  for (const auto& some : drawn) {
    CHECK(some.size() == static_cast<size_t>(kEach));
    seen.insert(some.begin(), some.end());
  }
  CHECK(seen.size() == static_cast<size_t>(kThreads * kEach));
  // A draw larger than the buffered ones comes straight from the generator.
  unsigned char large[4096];
  CHECK(SystemRandom(large, sizeof large));
}

TEST_CASE("a forked child does not hand out the bytes its parent's buffer holds") {
  unsigned char first[16];
  REQUIRE(SystemRandom(first, sizeof first));  // the buffer now holds what comes next
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    unsigned char next[16];
    const bool ok = SystemRandom(next, sizeof next) &&
                    write(pipe_fds[1], next, sizeof next) == static_cast<ssize_t>(sizeof next);
    _exit(ok ? 0 : 1);
  }
  close(pipe_fds[1]);
  unsigned char in_child[16];
  const ssize_t got = read(pipe_fds[0], in_child, sizeof in_child);
  close(pipe_fds[0]);
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  REQUIRE(got == static_cast<ssize_t>(sizeof in_child));
  unsigned char in_parent[16];
  REQUIRE(SystemRandom(in_parent, sizeof in_parent));
  CHECK(std::memcmp(in_child, in_parent, sizeof in_parent) != 0);
}

}  // namespace
}  // namespace paintlock::base
