#include "gateway/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <thread>
#include <unistd.h>

namespace paintlock::gateway {

namespace {

// Leaked on purpose: the flusher thread may run while static destructors do.
std::mutex& g_mu = *new std::mutex;
std::string& g_component = *new std::string("paintlock");  // guarded by g_mu
// Lines not yet written to stdout; guarded by g_mu. Info and debug lines wait
// here for at most kFlushInterval so that a busy gateway makes one write(2)
// per batch instead of one per request, with no thread waiting on another's
// write; warnings and errors are written at once.
std::string& g_pending = *new std::string;
constexpr auto kFlushInterval = std::chrono::milliseconds(100);
constexpr size_t kFlushBytes = 64 * 1024;
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
thread_local std::string t_request_id;

const char* LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
    case LogLevel::kOff: return "off";
  }
  return "info";
}

std::string NowUtc() {
  auto now = std::chrono::system_clock::now();
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

void WriteLocked() {
  size_t done = 0;
  while (done < g_pending.size()) {
    ssize_t n = ::write(STDOUT_FILENO, g_pending.data() + done, g_pending.size() - done);
    if (n <= 0) break;  // nowhere to log to: drop rather than block the server
    done += static_cast<size_t>(n);
  }
  g_pending.clear();
}

void FlushAtExit() {
  std::lock_guard<std::mutex> lock(g_mu);
  WriteLocked();
}

void StartFlusher() {
  static std::once_flag once;
  std::call_once(once, [] {
    std::atexit(FlushAtExit);
    std::thread([] {
      for (;;) {
        std::this_thread::sleep_for(kFlushInterval);
        std::lock_guard<std::mutex> lock(g_mu);
        if (!g_pending.empty()) WriteLocked();
      }
    }).detach();
  });
}

}  // namespace

void FlushLog() {
  std::lock_guard<std::mutex> lock(g_mu);
  WriteLocked();
}

void SetLogComponent(std::string component) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_component = std::move(component);
}

void SetLogLevel(LogLevel level) { g_level = static_cast<int>(level); }

bool ParseLogLevel(std::string_view text, LogLevel* out) {
  for (LogLevel l : {LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarn, LogLevel::kError}) {
    if (text == LevelName(l)) {
      *out = l;
      return true;
    }
  }
  return false;
}

void Log(LogLevel level, std::string_view event, const nlohmann::json& fields) {
  if (static_cast<int>(level) < g_level.load(std::memory_order_relaxed)) return;
  nlohmann::json line = nlohmann::json::object();
  line["ts"] = NowUtc();
  line["level"] = LevelName(level);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    line["component"] = g_component;
  }
  if (!t_request_id.empty()) line["request_id"] = t_request_id;
  line["event"] = std::string(event);
  if (fields.is_object()) {
    for (auto it = fields.begin(); it != fields.end(); ++it) line[it.key()] = it.value();
  }
  std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  text.push_back('\n');
  StartFlusher();
  std::lock_guard<std::mutex> lock(g_mu);
  g_pending += text;
  if (level >= LogLevel::kWarn || g_pending.size() >= kFlushBytes) WriteLocked();
}

RequestScope::RequestScope(std::string request_id) { t_request_id = std::move(request_id); }
RequestScope::~RequestScope() { t_request_id.clear(); }

const std::string& CurrentRequestId() { return t_request_id; }
void SetCurrentRequestId(std::string request_id) { t_request_id = std::move(request_id); }

}  // namespace paintlock::gateway
