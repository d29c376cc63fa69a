#include "base/log.h"

#include <pthread.h>
#include <signal.h>
#include <spdlog/details/null_mutex.h>
#include <spdlog/logger.h>
#include <spdlog/sinks/base_sink.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <variant>
#include <vector>

#include "base/json_text.h"

namespace paintlock::base {

namespace {

// The lines waiting for stdout, and the thread that writes them. A request
// thread only appends its line under a mutex: it never writes and, for an
// info line, never wakes anyone. The writer wakes every kFlushInterval, or at
// once for a warning or error, or when kFlushBytes are pending, and puts
// everything pending on stdout in one write(2).
//
// Why not spdlog's asynchronous logger (what this was until stop 27): its
// queue wakes its worker thread for every line, one more thread switch per
// request on a 2-core machine (bench/reports/2026-12-04-1530-log-wakeups-ab.md:
// 3.6 switches a request with it, 2.9-3.0 with this sink). spdlog still
// builds and filters the lines; this sink only decides when they are written.
class StdoutBatchSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  StdoutBatchSink() {
    // The writer never takes a process signal: a process that waits for
    // SIGTERM with sigwait() must be the one to receive it.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    std::thread writer([this] { RunWriter(); });
    pthread_setname_np(writer.native_handle(), "paintlock-log");  // top -H, and the tests
    writer.detach();
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  }

  // Writes every line appended before the call (the writer's too, if it has
  // taken them already: write_mu_ keeps the order).
  void WritePending() {
    std::lock_guard<std::mutex> write_lock(write_mu_);
    WriteTaken();
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const bool urgent = msg.level >= spdlog::level::warn;
    bool wake = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (urgent) {
        // Never dropped; a caller waits while too many are unwritten.
        room_.wait(lock, [&] { return urgent_pending_ < kMaxUrgentLines; });
        ++urgent_pending_;
        wake = true;
      } else if (pending_.size() + msg.payload.size() + 1 > kMaxPendingBytes) {
        ++dropped_;  // stdout cannot keep up: the newest info lines go
        return;
      } else {
        wake = pending_.size() < kFlushBytes &&
               pending_.size() + msg.payload.size() + 1 >= kFlushBytes;
      }
      pending_.append(msg.payload.data(), msg.payload.size());
      pending_.push_back('\n');
    }
    if (wake) writer_wake_.notify_one();
  }
  void flush_() override { WritePending(); }

 private:
  static constexpr std::size_t kFlushBytes = 64 * 1024;
  static constexpr std::size_t kMaxPendingBytes = 4 * 1024 * 1024;
  static constexpr int kMaxUrgentLines = 1024;
  static constexpr auto kFlushInterval = std::chrono::milliseconds(100);

  void RunWriter() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        writer_wake_.wait_for(lock, kFlushInterval, [&] {
          return urgent_pending_ > 0 || pending_.size() >= kFlushBytes;
        });
        if (pending_.empty() && dropped_ == 0) continue;  // a quiet 100 ms
      }
      std::lock_guard<std::mutex> write_lock(write_mu_);
      WriteTaken();
    }
  }

  // Called with write_mu_ held. The lines go to `writing_` and its emptied
  // buffer to `pending_`, which keeps the capacity: appends under mu_ seldom
  // reallocate. A buffer grown by a burst is not kept.
  void WriteTaken() {
    writing_.clear();
    if (writing_.capacity() > 4 * kFlushBytes) writing_ = std::string();
    std::size_t dropped = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      writing_.swap(pending_);
      dropped = dropped_;
      dropped_ = 0;
      urgent_pending_ = 0;
    }
    room_.notify_all();
    WriteAll(writing_);
    if (dropped > 0) {
      WriteAll(FormatLogLine(LogLevel::kWarn, "log_lines_dropped", {{"lines", dropped}}) + "\n");
    }
  }

  static void WriteAll(const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(STDOUT_FILENO, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // nowhere to log to: drop rather than stall the writer
      done += static_cast<std::size_t>(n);
    }
  }

  std::mutex write_mu_;  // held while taking and writing: lines reach stdout in order
  std::mutex mu_;
  std::condition_variable writer_wake_;
  std::condition_variable room_;  // urgent lines may be appended again
  std::string pending_;           // guarded by mu_
  std::string writing_;           // guarded by write_mu_
  std::size_t dropped_ = 0;       // guarded by mu_
  int urgent_pending_ = 0;        // guarded by mu_
};

// The logger lives for the whole process (leaked on purpose: lines may be
// written while static destructors run).
struct Loggers {
  std::shared_ptr<StdoutBatchSink> sink = std::make_shared<StdoutBatchSink>();
  std::shared_ptr<spdlog::logger> logger = std::make_shared<spdlog::logger>("paintlock", sink);
  // Read by every line without a lock; names replaced by SetLogComponent
  // stay in `retired`, since a line being built may still read one.
  std::atomic<const std::string*> component{new std::string("paintlock")};
  std::mutex retired_mu;
  std::vector<std::unique_ptr<const std::string>> retired;  // guarded by retired_mu

  Loggers() {
    logger->set_level(spdlog::level::trace);  // filtering happens before a line is built
    logger->flush_on(spdlog::level::off);     // the sink decides when to write
  }
};

Loggers& L() {
  static Loggers* loggers = [] {
    auto* l = new Loggers;
    std::atexit([] { FlushLog(); });
    return l;
  }();
  return *loggers;
}

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
thread_local std::string t_request_id;

const char* LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
    case LogLevel::kOff:
      return "off";
  }
  return "info";
}

spdlog::level::level_enum SpdlogLevel(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
    case LogLevel::kOff:
      break;
  }
  return spdlog::level::off;
}

// Appends the time now, UTC, to the millisecond, as a JSON string:
// "2026-12-06T14:17:12.345Z". The part to the second is formatted once a
// second per thread.
void AppendNowUtc(std::string& out) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  thread_local std::time_t formatted_secs = -1;
  thread_local char seconds[64];  // "2026-12-06T14:17:12."
  if (secs != formatted_secs) {
    std::tm tm{};
    gmtime_r(&secs, &tm);
    std::snprintf(seconds, sizeof seconds, "%04d-%02d-%02dT%02d:%02d:%02d.", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    formatted_secs = secs;
  }
  out += '"';
  out += seconds;
  out += static_cast<char>('0' + ms / 100);
  out += static_cast<char>('0' + ms / 10 % 10);
  out += static_cast<char>('0' + ms % 10);
  out += "Z\"";
}

// Appends `v` as JSON: strings, whole numbers and booleans directly (an
// access line's fields), the rest through nlohmann's dump, whose serializer
// costs a locale lookup and a string of its own each time.
void AppendJsonValue(std::string& out, const nlohmann::json& v) {
  if (v.is_string()) {
    AppendJsonString(out, v.get_ref<const std::string&>());
  } else if (v.is_number_integer()) {  // signed and unsigned
    char digits[24];
    const auto r = v.is_number_unsigned()
                       ? std::to_chars(digits, digits + sizeof digits, v.get<std::uint64_t>())
                       : std::to_chars(digits, digits + sizeof digits, v.get<std::int64_t>());
    out.append(digits, r.ptr);
  } else if (v.is_boolean()) {
    out += v.get<bool>() ? "true" : "false";
  } else {
    out += v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
}

bool Reserved(std::string_view key) {
  return key == "ts" || key == "level" || key == "component" || key == "request_id" ||
         key == "event";
}

}  // namespace

std::string DescribeException(std::exception_ptr exception) {
  try {
    if (exception) std::rethrow_exception(exception);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
  }
  return "unknown exception";
}

namespace {

// Every line's start: its time, level, component, request id and event.
std::string LineHead(LogLevel level, std::string_view event) {
  std::string out;
  out.reserve(256);
  out += "{\"ts\":";
  AppendNowUtc(out);
  out += ",\"level\":";
  AppendJsonString(out, LevelName(level));
  out += ",\"component\":";
  AppendJsonString(out, *L().component.load(std::memory_order_acquire));
  if (!t_request_id.empty()) {
    out += ",\"request_id\":";
    AppendJsonString(out, t_request_id);
  }
  out += ",\"event\":";
  AppendJsonString(out, event);
  return out;
}

// A field's name: one of the line's own renamed field_<name>.
void AppendKey(std::string& out, std::string_view key) {
  if (Reserved(key)) {
    out += ",\"field_";
    out.append(key.data(), key.size());  // one of the reserved names: nothing to escape
    out += "\":";
  } else {
    out += ',';
    AppendJsonString(out, key);
    out += ':';
  }
}

bool Enabled(LogLevel level) {
  return level != LogLevel::kOff &&
         static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

void Write(LogLevel level, const std::string& text) {
  L().logger->log(SpdlogLevel(level), spdlog::string_view_t(text.data(), text.size()));
}

}  // namespace

std::string FormatLogLine(LogLevel level, std::string_view event, const nlohmann::json& fields) {
  // Written field by field rather than built as one json object and dumped:
  // that object (a std::map holding a copy of every field) cost most of an
  // access line. Anything to escape still goes through nlohmann, which also
  // replaces invalid UTF-8 (AppendJsonValue).
  std::string out = LineHead(level, event);
  if (fields.is_object()) {
    for (auto it = fields.begin(); it != fields.end(); ++it) {
      const std::string& key = it.key();
      if (key.rfind("field_", 0) == 0 && Reserved(key.substr(6)) &&
          fields.contains(key.substr(6))) {
        continue;  // the caller's own field_ts loses to its ts, renamed (one key each)
      }
      AppendKey(out, key);
      AppendJsonValue(out, it.value());
    }
  }
  out += '}';
  return out;
}

std::string FormatLogFields(LogLevel level, std::string_view event,
                            std::initializer_list<LogField> fields) {
  std::string out = LineHead(level, event);
  for (const LogField& field : fields) {
    AppendKey(out, field.key);
    // Text as it is (a view, no copy); numbers and booleans as Log() writes
    // them (a json of one holds them in place, no allocation).
    std::visit(
        [&out](auto value) {
          if constexpr (std::is_same_v<decltype(value), std::string_view>) {
            AppendJsonString(out, value);
          } else {
            AppendJsonValue(out, value);
          }
        },
        field.value);
  }
  out += '}';
  return out;
}

void Log(LogLevel level, std::string_view event, const nlohmann::json& fields) {
  if (Enabled(level)) Write(level, FormatLogLine(level, event, fields));
}

void LogFields(LogLevel level, std::string_view event, std::initializer_list<LogField> fields) {
  if (Enabled(level)) Write(level, FormatLogFields(level, event, fields));
}

void FlushLog() { L().sink->WritePending(); }

void SetLogComponent(std::string component) {
  const std::string* old =
      L().component.exchange(new std::string(std::move(component)), std::memory_order_acq_rel);
  std::lock_guard<std::mutex> lock(L().retired_mu);
  L().retired.emplace_back(old);
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

RequestScope::RequestScope(std::string request_id) { t_request_id = std::move(request_id); }
RequestScope::~RequestScope() { t_request_id.clear(); }

const std::string& CurrentRequestId() { return t_request_id; }
void SetCurrentRequestId(std::string request_id) { t_request_id = std::move(request_id); }

}  // namespace paintlock::base
