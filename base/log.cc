#include "base/log.h"

#include <pthread.h>
#include <signal.h>
#include <spdlog/async.h>
#include <spdlog/async_logger.h>
#include <spdlog/details/thread_pool.h>
#include <spdlog/sinks/base_sink.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <mutex>
#include <thread>

namespace paintlock::base {

namespace {

// Appends lines to a buffer and writes it to stdout in one write(2) when a
// warning or error arrives, when the buffer is large, or on flush. Called only
// from spdlog's worker threads (and FlushLog), never from a request thread.
class StdoutBatchSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  // Writes what is pending now, from outside spdlog's workers.
  void WritePending() {
    std::lock_guard<std::mutex> lock(mutex_);
    WriteLocked();
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    pending_.append(msg.payload.data(), msg.payload.size());
    pending_.push_back('\n');
    if (msg.level >= spdlog::level::warn || pending_.size() >= kFlushBytes) WriteLocked();
  }
  void flush_() override { WriteLocked(); }

 private:
  static constexpr std::size_t kFlushBytes = 64 * 1024;

  void WriteLocked() {
    std::size_t done = 0;
    while (done < pending_.size()) {
      ssize_t n = ::write(STDOUT_FILENO, pending_.data() + done, pending_.size() - done);
      if (n <= 0) break;  // nowhere to log to: drop rather than stall the logger
      done += static_cast<std::size_t>(n);
    }
    pending_.clear();
  }

  std::string pending_;  // guarded by mutex_
};

constexpr auto kFlushInterval = std::chrono::milliseconds(100);
constexpr std::size_t kInfoQueueLines = 16384;
constexpr std::size_t kWarnQueueLines = 1024;

// The loggers live for the whole process (leaked on purpose: lines may be
// written while static destructors run).
struct Loggers {
  std::shared_ptr<StdoutBatchSink> sink = std::make_shared<StdoutBatchSink>();
  std::shared_ptr<spdlog::details::thread_pool> info_pool =
      std::make_shared<spdlog::details::thread_pool>(kInfoQueueLines, 1);
  std::shared_ptr<spdlog::details::thread_pool> warn_pool =
      std::make_shared<spdlog::details::thread_pool>(kWarnQueueLines, 1);
  std::shared_ptr<spdlog::async_logger> info = std::make_shared<spdlog::async_logger>(
      "paintlock.info", sink, info_pool, spdlog::async_overflow_policy::overrun_oldest);
  std::shared_ptr<spdlog::async_logger> warn = std::make_shared<spdlog::async_logger>(
      "paintlock.warn", sink, warn_pool, spdlog::async_overflow_policy::block);
  std::mutex component_mu;
  std::string component = "paintlock";  // guarded by component_mu
  std::atomic<std::size_t> reported_drops{0};

  Loggers() {
    for (auto* l : {info.get(), warn.get()}) {
      l->set_level(spdlog::level::trace);  // filtering happens before a line is built
      l->flush_on(spdlog::level::off);     // the sink decides when to write
    }
  }
};

Loggers& L() {
  static Loggers* loggers = [] {
    // The logger's threads never take a process signal: a process that waits
    // for SIGTERM with sigwait() must be the one to receive it, whenever the
    // first line was logged.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    auto* l = new Loggers;
    std::thread([] {
      for (;;) {
        std::this_thread::sleep_for(kFlushInterval);
        L().info->flush();  // posted behind the queued lines: writes them in order
      }
    }).detach();
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
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

std::string NowUtc() {
  auto now = std::chrono::system_clock::now();
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

bool Reserved(const std::string& key) {
  return key == "ts" || key == "level" || key == "component" || key == "request_id" ||
         key == "event";
}

// Info lines dropped since the last report become one warning.
void ReportDrops() {
  const std::size_t dropped = L().info_pool->overrun_counter();
  std::size_t reported = L().reported_drops.load();
  if (dropped > reported && L().reported_drops.compare_exchange_strong(reported, dropped)) {
    Log(LogLevel::kWarn, "log_lines_dropped", {{"lines", dropped - reported}});
  }
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

std::string FormatLogLine(LogLevel level, std::string_view event, const nlohmann::json& fields) {
  nlohmann::json line = nlohmann::json::object();
  line["ts"] = NowUtc();
  line["level"] = LevelName(level);
  {
    std::lock_guard<std::mutex> lock(L().component_mu);
    line["component"] = L().component;
  }
  if (!t_request_id.empty()) line["request_id"] = t_request_id;
  line["event"] = std::string(event);
  if (fields.is_object()) {
    for (auto it = fields.begin(); it != fields.end(); ++it) {
      line[Reserved(it.key()) ? "field_" + it.key() : it.key()] = it.value();
    }
  }
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void Log(LogLevel level, std::string_view event, const nlohmann::json& fields) {
  if (level == LogLevel::kOff) return;
  if (static_cast<int>(level) < g_level.load(std::memory_order_relaxed)) return;
  const std::string text = FormatLogLine(level, event, fields);
  if (level >= LogLevel::kWarn) {
    L().warn->log(SpdlogLevel(level), spdlog::string_view_t(text.data(), text.size()));
  } else {
    L().info->log(SpdlogLevel(level), spdlog::string_view_t(text.data(), text.size()));
    if (L().info_pool->overrun_counter() != L().reported_drops.load(std::memory_order_relaxed)) {
      ReportDrops();
    }
  }
}

void FlushLog() {
  // Both queues drained means every line logged before this call has reached
  // the sink (each pool has one worker, which handles its queue in order).
  for (int i = 0; i < 200; ++i) {
    if (L().info_pool->queue_size() == 0 && L().warn_pool->queue_size() == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  L().sink->WritePending();
}

void SetLogComponent(std::string component) {
  std::lock_guard<std::mutex> lock(L().component_mu);
  L().component = std::move(component);
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
