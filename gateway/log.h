// Structured logs: one JSON object per line on stdout, e.g.
//   {"ts":"2026-12-02T12:00:00.123Z","level":"info","component":"gateway",
//    "request_id":"7f3a…","event":"reservation_granted","reservation_id":"…"}
//
// The request id of the request a thread is serving is kept thread-locally
// (RequestScope) and added to every line that thread writes, so a request's
// lines can be found together. Secrets must never be passed as fields.
// Info and debug lines reach stdout within 100 ms (batched: one write per
// batch, not per request); warnings and errors at once; FlushLog() and process
// exit write what is pending. Thread-safe: lines never interleave.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace paintlock::gateway {

enum class LogLevel { kDebug, kInfo, kWarn, kError, kOff };

// Names the process in every line ("gateway", "paintlockctl", "fake-stripe").
void SetLogComponent(std::string component);
// Lines below `level` are dropped. Default: info (PAINTLOCK_LOG_LEVEL).
void SetLogLevel(LogLevel level);
bool ParseLogLevel(std::string_view text, LogLevel* out);

void Log(LogLevel level, std::string_view event, const nlohmann::json& fields = nlohmann::json::object());
inline void LogInfo(std::string_view event, const nlohmann::json& fields = nlohmann::json::object()) {
  Log(LogLevel::kInfo, event, fields);
}
inline void LogWarn(std::string_view event, const nlohmann::json& fields = nlohmann::json::object()) {
  Log(LogLevel::kWarn, event, fields);
}
inline void LogError(std::string_view event, const nlohmann::json& fields = nlohmann::json::object()) {
  Log(LogLevel::kError, event, fields);
}

// Sets the calling thread's request id for its lifetime.
class RequestScope {
 public:
  explicit RequestScope(std::string request_id);
  ~RequestScope();
  RequestScope(const RequestScope&) = delete;
  RequestScope& operator=(const RequestScope&) = delete;
};

// Writes every pending line now (before an exit that skips atexit handlers).
void FlushLog();

const std::string& CurrentRequestId();
// For servers whose request start and end are separate callbacks.
void SetCurrentRequestId(std::string request_id);

}  // namespace paintlock::gateway
