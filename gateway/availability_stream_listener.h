// Feeds an AvailabilityStream from PostgreSQL: one dedicated connection per
// gateway LISTENs on paintlock_availability (sql/migrations/0004_…), whose
// payloads are painting ids, and re-reads paintlock_availability() for them.
// Every gateway instance listens, so a change made through any one of them
// (or by paintlockctl, or by a webhook) reaches the browsers of all.
//
// How the board stays true:
//   * On every (re)connect: LISTEN first, then read every painting. A change
//     committed after the LISTEN is notified; one before it is in the read;
//     changes missed while disconnected are in the read too.
//   * On notifications: re-read just those paintings. NOTIFY is delivered
//     after commit, so the read sees the change (or a later one).
//   * A hold that lapses changes no row, so nothing notifies. Each read gives
//     every reserved painting's milliseconds until it is free, by the
//     database clock; the listener re-reads those paintings when the earliest
//     comes due (its own clock only measures the interval, so clock skew
//     between gateway and database does not matter).
//   * Every `full_read_interval` (30 s) it reads everything again: a safety
//     net for changes no trigger sees (a 24 h sale window running out on a
//     painting without its catalogue flag), and a liveness probe of the
//     connection, which also has TCP keepalives and TCP_USER_TIMEOUT set.
//   * A lost connection is dropped and reopened with backoff (250 ms,
//     doubling, at most 30 s); meanwhile streams stay open and quiet.
// libpqxx exceptions never leave this class: they are logged and end the
// connection.
//
// Thread-safe: Start() and Stop() may be called from any thread; the work
// happens on one thread of its own.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gateway/availability_stream.h"

namespace pqxx {
class connection_base;
}

namespace paintlock::gateway {

struct AvailabilityListenerOptions {
  std::string database_url;  // may hold a password: never logged
  std::chrono::milliseconds statement_timeout{5000};
  std::chrono::seconds full_read_interval{30};
  std::chrono::milliseconds first_backoff{250};
  std::chrono::milliseconds max_backoff{30000};
};

class AvailabilityListener {
 public:
  AvailabilityListener(AvailabilityListenerOptions options, AvailabilityStream& stream);
  ~AvailabilityListener();  // Stop()
  AvailabilityListener(const AvailabilityListener&) = delete;
  AvailabilityListener& operator=(const AvailabilityListener&) = delete;

  // Starts the listening thread; it connects in the background. Call once.
  void Start();
  // Wakes the thread and joins it. Idempotent.
  void Stop();

 private:
  void Run();
  // One connection's life: returns when it breaks (after logging why) or on
  // Stop(). `connected` is set once LISTEN and the first read succeeded.
  void Listen(bool* connected);
  // Reads `ids` (empty: every painting), updates the stream and the lapse
  // schedule.
  void Read(pqxx::connection_base& c, const std::set<std::string>& ids);
  // Sleeps `d` unless Stop() comes first; false when stopping.
  bool Pause(std::chrono::milliseconds d);

  const AvailabilityListenerOptions options_;
  AvailabilityStream& stream_;
  std::mutex stop_mu_;  // serialises the join in Stop()
  std::thread thread_;  // joined under stop_mu_
  int wake_fd_ = -1;  // an eventfd: Stop() writes it to interrupt a wait
  std::atomic<bool> stopping_{false};

  // Used by the listening thread only.
  std::map<std::string, std::chrono::steady_clock::time_point> lapse_due_;
};

}  // namespace paintlock::gateway
