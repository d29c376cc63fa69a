// Structured logs: one JSON object per line on stdout, e.g.
//   {"ts":"2026-12-02T12:00:00.123Z","level":"info","component":"gateway",
//    "request_id":"7f3a…","event":"reservation_granted","reservation_id":"…"}
//
// The request id of the request a thread is serving is kept thread-locally
// (RequestScope) and added to every line that thread writes, so a request's
// lines can be found together. Secrets must never be passed as fields. The
// fields ts, level, component, request_id and event are the logger's own: a
// caller field with one of those names is written as "field_<name>" instead.
//
// Built by spdlog into a sink of our own (base/log.cc), so no request thread
// ever waits on stdout or wakes a thread for its line: a line is appended to
// a buffer, and a writer thread puts the buffer on stdout in one write(2)
// every 100 ms, when 64 KB are pending, or at once for a warning or error.
// While stdout cannot keep up, info and debug lines beyond 4 MB pending are
// dropped (counted, and reported in a "log_lines_dropped" warning); warnings
// and errors are never dropped (a caller waits when 1,024 are unwritten).
// FlushLog() and process exit write everything pending. Thread-safe: lines
// never interleave, and reach stdout in the order they were logged.
#pragma once

#include <cstdint>
#include <exception>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>

namespace paintlock::base {

enum class LogLevel { kDebug, kInfo, kWarn, kError, kOff };

// Names the process in every line ("gateway", "paintlockctl", "fake-stripe").
void SetLogComponent(std::string component);
// Lines below `level` are dropped. Default: info (PAINTLOCK_LOG_LEVEL).
void SetLogLevel(LogLevel level);
bool ParseLogLevel(std::string_view text, LogLevel* out);

void Log(LogLevel level, std::string_view event,
         const nlohmann::json& fields = nlohmann::json::object());
inline void LogInfo(std::string_view event,
                    const nlohmann::json& fields = nlohmann::json::object()) {
  Log(LogLevel::kInfo, event, fields);
}
inline void LogWarn(std::string_view event,
                    const nlohmann::json& fields = nlohmann::json::object()) {
  Log(LogLevel::kWarn, event, fields);
}
inline void LogError(std::string_view event,
                     const nlohmann::json& fields = nlohmann::json::object()) {
  Log(LogLevel::kError, event, fields);
}

// A field of a line written without building a json object first: text, a
// whole number, a number or a yes/no. Views: used within the call.
struct LogField {
  std::string_view key;
  std::variant<std::string_view, std::int64_t, double, bool> value;
};
// Log() for the lines every request writes (the access line): its fields in
// the order given, each as Log() would write it, with no object built.
void LogFields(LogLevel level, std::string_view event, std::initializer_list<LogField> fields);

// Sets the calling thread's request id for its lifetime.
class RequestScope {
 public:
  explicit RequestScope(std::string request_id);
  ~RequestScope();
  RequestScope(const RequestScope&) = delete;
  RequestScope& operator=(const RequestScope&) = delete;
};

// What a caught exception says (its what(), or "unknown exception"), for the
// last-resort handlers that log it and answer 500.
std::string DescribeException(std::exception_ptr exception);

// The JSON line Log() would write (without the newline), for tests.
std::string FormatLogLine(LogLevel level, std::string_view event, const nlohmann::json& fields);
// Likewise for LogFields().
std::string FormatLogFields(LogLevel level, std::string_view event,
                            std::initializer_list<LogField> fields);

// Returns once every line logged before the call is on stdout (bounded wait,
// about 1 s at most); for harnesses that wait for a line, and before an exit
// that skips atexit handlers.
void FlushLog();

const std::string& CurrentRequestId();
// For servers whose request start and end are separate callbacks.
void SetCurrentRequestId(std::string request_id);

}  // namespace paintlock::base
