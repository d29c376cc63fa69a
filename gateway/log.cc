#include "gateway/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace paintlock::gateway {

namespace {

std::mutex g_mu;
std::string g_component = "paintlock";          // guarded by g_mu
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

}  // namespace

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
  std::lock_guard<std::mutex> lock(g_mu);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

RequestScope::RequestScope(std::string request_id) { t_request_id = std::move(request_id); }
RequestScope::~RequestScope() { t_request_id.clear(); }

const std::string& CurrentRequestId() { return t_request_id; }
void SetCurrentRequestId(std::string request_id) { t_request_id = std::move(request_id); }

}  // namespace paintlock::gateway
