// What every painting's availability is, kept current from PostgreSQL: one
// dedicated connection per process LISTENs on paintlock_availability, whose
// payloads are painting ids sent after commit by every writer
// (locks/availability_publisher.h), and re-reads paintlock_availability()
// (sql/queries/availability_read.sql) for them. Every gateway instance has
// one, so a change made through any one of them (or by paintlockctl, or by a
// webhook) reaches the browsers of all.
//
// How the reads stay true:
//   * On every (re)connect: LISTEN first, then read every painting. A change
//     committed after the LISTEN is notified; one before it is in the read;
//     changes missed while disconnected are in the read too.
//   * On notifications: re-read just those paintings. Notifications are sent
//     after commit, so the read sees the change (or a later one).
//   * These partial reads (notified and lapsing paintings) come at most one
//     per `read_interval`: what is notified or lapses meanwhile waits and is
//     read together. A burst of sales costs one read, not one per publish, and
//     a stream hears of a change at most `read_interval` later than it would.
//   * A hold that lapses changes no row, so nothing notifies. Each read gives
//     every reserved painting's milliseconds until it is free, by the
//     database clock; the feed re-reads those paintings when the earliest
//     comes due (its own clock only measures the interval, so clock skew
//     between gateway and database does not matter).
//   * Every `full_read_interval` it reads everything again: this heals a
//     publish that was lost (a writer that died between commit and publish),
//     catches changes nothing publishes (a 24 h sale window running out), and
//     probes the connection, which also has TCP keepalives and
//     TCP_USER_TIMEOUT set.
//   * A lost connection is dropped and reopened with backoff (250 ms,
//     doubling, at most 2 s, so a failover's new primary is found within 2 s of
//     taking writes); meanwhile the sink hears nothing.
//   * Reads only for someone (given `watched`): while nobody has watched for
//     `idle_after` (and from the start, if nobody watches then), the feed
//     reads nothing, neither what is notified nor lapses nor the full read,
//     and says so (current(false)). Nor does it listen (UNLISTEN), so
//     PostgreSQL delivers no notification for it to drop. Once watched again
//     (Wake()), it listens, then reads everything before anything else, then
//     says current(true). Each notified painting's read cost PostgreSQL
//     12-15 µs and the gateway 7 µs, about two a reservation, for no one when
//     no stream is open (bench/reports/2026-12-07-0100-idle-feed.md); taking
//     the notifications only to drop them was still 2% of the gateway's CPU
//     under the reserve load.
// The connection has the pool's session settings (statement_timeout,
// lock_timeout, idle_in_transaction_session_timeout). libpqxx exceptions
// never leave this class: they are logged and end the connection.
//
// Thread-safe: Start() and Stop() may be called from any thread; the work,
// and every call of the sink, happens on one thread of its own.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "locks/database.h"

namespace paintlock::locks {

// One waiting entry of a painting's line, as its member's stream tells it.
struct LinePlace {
  std::string token_sha256;  // LineTokenDigest (locks/lines.h) of the entry's token
  bool your_turn = false;    // its claim window runs (by the database clock at the read)
  std::string window_from;   // RFC 3339
  std::string window_until;
  bool operator==(const LinePlace& o) const {
    return token_sha256 == o.token_sha256 && your_turn == o.your_turn &&
           window_from == o.window_from && window_until == o.window_until;
  }
};

// What painting_states says of one painting.
struct PaintingAvailability {
  std::string painting;
  std::string state;          // available | reserved | sold
  std::string free_at;        // RFC 3339 while reserved, else empty
  long long line_length = 0;  // entries waiting in its line: all a non-member sees of it
  // The line in order (position 1 first): only for the streams of its
  // members, each of which is told its own place and nothing of the others.
  std::vector<LinePlace> line = {};
  bool operator==(const PaintingAvailability& o) const {
    return painting == o.painting && state == o.state && free_at == o.free_at &&
           line_length == o.line_length && line == o.line;
  }
  bool operator!=(const PaintingAvailability& o) const { return !(*this == o); }
};

struct AvailabilityFeedOptions {
  // url and timeouts; pool_size and statements are not used (its reads are
  // unnamed statements, planned for their ids: availability_feed.cc, Read).
  DatabaseOptions database;
  std::chrono::seconds full_read_interval{30};
  // The least time between two partial reads (see above). Unbatched, every
  // publish and every lapse could cost the database a read of its own. 50 ms
  // is well under what a person watching a painting's badge can notice.
  std::chrono::milliseconds read_interval{50};
  std::chrono::milliseconds first_backoff{250};
  std::chrono::milliseconds max_backoff{2000};
  // How long `watched` must have said false before the feed stops reading:
  // a visitor going from page to page closes one stream and opens the next,
  // and should not cost a full read each time.
  std::chrono::milliseconds idle_after{30000};
};

class AvailabilityFeed {
 public:
  // Gets every read: all paintings after a (re)connect or a full read, the
  // re-read ones otherwise.
  using Sink = std::function<void(const std::vector<PaintingAvailability>& read)>;
  // Whether anyone wants the reads now; asked on the feed's thread whenever
  // it wakes. Null: always (the feed never idles).
  using Watched = std::function<bool()>;
  // Told on the feed's thread: false when it stops keeping its reads current
  // (nobody watches; also on connecting unwatched), true after the full read
  // that makes them current again.
  using Current = std::function<void(bool current)>;

  AvailabilityFeed(AvailabilityFeedOptions options, Sink sink, Watched watched = nullptr,
                   Current current = nullptr);
  ~AvailabilityFeed();  // Stop()
  AvailabilityFeed(const AvailabilityFeed&) = delete;
  AvailabilityFeed& operator=(const AvailabilityFeed&) = delete;

  // Starts the listening thread; it connects in the background. Call once.
  void Start();
  // Wakes the thread and joins it. Idempotent.
  void Stop();
  // Has the thread ask `watched` again now (call when its answer changed).
  void Wake();

  // Notifications taken from the connection so far, read or dropped (tests
  // await one).
  std::uint64_t NotificationsHeard() const { return heard_.load(); }

 private:
  void Run();
  // One connection's life: returns when it breaks (after logging why) or on
  // Stop(). `connected` is set once it is connected and, if watched, has
  // listened and made its first read.
  void Listen(bool* connected);
  // Reads `ids` (empty: every painting), feeds the sink, updates the lapse
  // schedule.
  void Read(pqxx::connection_base& c, const std::set<std::string>& ids);
  // Sleeps `d` unless Stop() comes first; false when stopping.
  bool Pause(std::chrono::milliseconds d);
  // Reads from the wake eventfd what Wake() and Stop() wrote to it.
  void DrainWakes();

  const AvailabilityFeedOptions options_;
  const Sink sink_;
  const Watched watched_;
  const Current current_;
  std::atomic<std::uint64_t> heard_{0};
  std::mutex stop_mu_;  // serialises the join in Stop()
  std::thread thread_;  // joined under stop_mu_
  int wake_fd_ = -1;    // an eventfd: Stop() and Wake() write it to interrupt a wait
  std::atomic<bool> stopping_{false};

  // When each reserved painting a read returned is free again, by painting
  // and in time order, kept in step: the listener asks for the due ones and
  // for the next on every wake-up (a notification's), which must not cost a
  // walk over every hold (make bench: 21% of the gateway's CPU, with
  // thousands of holds, when it did).
  class LapseSchedule {
   public:
    using Time = std::chrono::steady_clock::time_point;
    void Set(const std::string& painting, Time at);
    void Forget(const std::string& painting);
    void Clear();
    // Moves every painting due by `now` into `*due`.
    void TakeDue(Time now, std::set<std::string>* due);
    // The earliest lapse still scheduled; Time::max() when none.
    Time Next() const;

   private:
    std::unordered_map<std::string, Time> at_;  // by painting: found by hash, not by compare
    std::set<std::pair<Time, std::string>> order_;
  };

  // Used by the listening thread only.
  LapseSchedule lapses_;
};

}  // namespace paintlock::locks
