#include "base/log.h"

#include <dirent.h>
#include <doctest/doctest.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

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

TEST_CASE("A line of fields is the line Log() writes for the same object, without building it") {
  RequestScope scope("req-fields");
  const std::string bad = "x\xff\xfey";
  const std::string fields_line = FormatLogFields(LogLevel::kInfo, "request",
                                                  {{"duration_ms", 12.34},
                                                   {"level", "forged"},
                                                   {"method", "POST"},
                                                   {"path", "/a\"b\\c\n\x01"},
                                                   {"raw", std::string_view(bad)},
                                                   {"status", std::int64_t{-9223372036854775807LL}},
                                                   {"yes", true}});
  const std::string object_line = FormatLogLine(LogLevel::kInfo, "request",
                                                {{"duration_ms", 12.34},
                                                 {"level", "forged"},
                                                 {"method", "POST"},
                                                 {"path", "/a\"b\\c\n\x01"},
                                                 {"raw", bad},
                                                 {"status", -9223372036854775807LL},
                                                 {"yes", true}});
  // The same bytes after the time, which moves between the two calls.
  const std::size_t after_ts = std::string("{\"ts\":\"2026-12-06T14:17:12.345Z\"").size();
  CHECK(fields_line.substr(after_ts) == object_line.substr(after_ts));
  CHECK(nlohmann::json::parse(fields_line)["field_level"] == "forged");
}

TEST_CASE("A log line starts with its time and escapes what it is given") {
  RequestScope scope("req-abc");
  const std::string text = FormatLogLine(LogLevel::kWarn, "odd \"event\"",
                                         {{"path", "/a\"b\\c\n\x01"},
                                          {"bad_utf8", std::string("x\xff\xfey")},
                                          {"k\"ey", 2},
                                          {"nested", {{"a", {1, 2}}, {"b", nullptr}}},
                                          {"numbers", nlohmann::json::array()},
                                          {"negative", -42},
                                          {"big", 18446744073709551615ULL},
                                          {"ratio", 0.25},
                                          {"yes", true},
                                          {"no", false},
                                          {"ts", "forged"},
                                          {"field_ts", "also forged"}});
  CHECK(text.rfind("{\"ts\":\"", 0) == 0);
  CHECK(text.find('\n') == std::string::npos);
  const auto line = nlohmann::json::parse(text);  // throws on anything but valid JSON
  CHECK(line["level"] == "warn");
  CHECK(line["request_id"] == "req-abc");
  CHECK(line["event"] == "odd \"event\"");
  CHECK(line["path"] == "/a\"b\\c\n\x01");
  CHECK(line["bad_utf8"] == "x\xef\xbf\xbd\xef\xbf\xbdy");  // U+FFFD for each bad byte
  CHECK(line["k\"ey"] == 2);
  CHECK(line["nested"]["a"][1] == 2);
  CHECK(line["nested"]["b"].is_null());
  CHECK(line["numbers"].empty());
  CHECK(line["negative"] == -42);
  CHECK(line["big"] == 18446744073709551615ULL);
  CHECK(line["ratio"] == 0.25);
  CHECK(line["yes"] == true);
  CHECK(line["no"] == false);
  const std::string ts = line["ts"];  // 2026-12-06T14:17:12.345Z
  CHECK(ts.size() == 24);
  CHECK(ts[10] == 'T');
  CHECK(ts[19] == '.');
  CHECK(ts.back() == 'Z');
  CHECK(ts.find_first_not_of("0123456789-T:.Z") == std::string::npos);
  // One field_ts: the caller's ts, renamed (a key twice would be ambiguous).
  CHECK(line["field_ts"] == "forged");
  std::size_t count = 0;
  for (std::size_t at = text.find("\"field_ts\""); at != std::string::npos;
       at = text.find("\"field_ts\"", at + 1)) {
    ++count;
  }
  CHECK(count == 1);
}

// The writer thread's context switches so far (voluntary and not), from
// /proc; -1 if it cannot be found.
long LogWriterSwitches() {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  long switches = -1;
  while (dirent* e = readdir(dir)) {
    const std::string task = std::string("/proc/self/task/") + e->d_name;
    std::ifstream comm(task + "/comm");
    std::string name;
    if (!std::getline(comm, name) || name != "paintlock-log") continue;
    std::ifstream status(task + "/status");
    std::string line;
    switches = 0;
    while (std::getline(status, line)) {
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0 ||
          line.rfind("nonvoluntary_ctxt_switches:", 0) == 0) {
        switches += std::stol(line.substr(line.find(':') + 1));
      }
    }
  }
  closedir(dir);
  return switches;
}

// Points stdout at `fd` for the scope's life, then back.
class StdoutTo {
 public:
  explicit StdoutTo(int fd) : saved_(dup(STDOUT_FILENO)) {
    FlushLog();
    std::fflush(stdout);
    dup2(fd, STDOUT_FILENO);
  }
  ~StdoutTo() {
    FlushLog();
    dup2(saved_, STDOUT_FILENO);
    close(saved_);
  }

 private:
  int saved_;
};

// Lines logged by `threads` threads, `per_thread` each, with their thread
// and sequence number in the fields.
void LogFrom(int threads, int per_thread, const std::string& padding) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([=] {
      for (int i = 0; i < per_thread; ++i) {
        LogInfo("log_test_line", {{"thread", t}, {"seq", i}, {"padding", padding}});
      }
    });
  }
  for (auto& t : pool) t.join();
}

TEST_CASE("Info lines reach stdout whole and in order, and no thread is woken per line") {
  char path[] = "/tmp/paintlock-log-test-XXXXXX";
  const int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  unlink(path);
  constexpr int kThreads = 4, kPerThread = 2500;
  long before = -1, after = -1;
  {
    StdoutTo redirect(fd);
    LogInfo("log_test_start");  // the writer exists from the first line on
    FlushLog();
    before = LogWriterSwitches();
    LogFrom(kThreads, kPerThread, "");
    FlushLog();
    after = LogWriterSwitches();
  }
  REQUIRE(before >= 0);
  // spdlog's asynchronous logger, which this replaced, woke its worker for
  // about every line; the writer wakes per 100 ms or per 64 KB.
  CHECK(after - before < kThreads * kPerThread / 20);

  lseek(fd, 0, SEEK_SET);
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  close(fd);
  std::vector<int> next(kThreads, 0);
  int lines = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto json = nlohmann::json::parse(line);  // whole lines only: this throws otherwise
    if (json["event"] != "log_test_line") continue;
    const int t = json["thread"], seq = json["seq"];
    CHECK(seq == next[t]);
    next[t] = seq + 1;
    ++lines;
  }
  CHECK(lines == kThreads * kPerThread);
}

TEST_CASE("While stdout is stuck, info lines are dropped and counted, and warnings are kept") {
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  constexpr int kThreads = 2, kPerThread = 8000;
  std::string text;
  std::thread reader;
  {
    StdoutTo redirect(pipe_fds[1]);
    // Nobody reads the pipe yet: the writer blocks once it is full (64 KB)
    // with at most 4 MB in hand, and the 4 MB behind it fill with ~1 KB
    // lines (16 MB are logged).
    LogFrom(kThreads, kPerThread, std::string(1000, 'x'));
    LogWarn("log_test_warning");
    reader = std::thread([&] {
      char buf[65536];
      for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) > 0;) {
        text.append(buf, static_cast<size_t>(n));
      }
    });
    FlushLog();
    LogInfo("log_test_after");  // once stdout drains, lines are kept again
  }                             // flushed, and stdout restored
  close(pipe_fds[1]);
  reader.join();
  close(pipe_fds[0]);

  int kept = 0, dropped = 0;
  bool warning = false, after = false;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto json = nlohmann::json::parse(line);
    if (json["event"] == "log_test_line") ++kept;
    if (json["event"] == "log_lines_dropped") dropped += json["lines"].get<int>();
    if (json["event"] == "log_test_warning") warning = true;
    if (json["event"] == "log_test_after") after = true;
  }
  CHECK(dropped > 0);
  CHECK(kept + dropped == kThreads * kPerThread);
  CHECK(kept * 1000 < 8 * 1024 * 1024 + 65536);  // the buffer, a batch in hand, the pipe
  CHECK(warning);
  CHECK(after);
}

}  // namespace
}  // namespace paintlock::base
