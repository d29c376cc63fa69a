// Tells every gateway's availability feed which paintings a committed write
// may have changed (sql/migrations/0007_availability_after_commit.sql).
//
// Why after commit, and not in the writer's transaction: PostgreSQL
// serialises the commits of transactions that ran NOTIFY (a database-wide
// lock held through the commit's WAL flush), so notifying inside the buyer's
// transaction made every buyer's commit wait for every other's. Here the
// writer commits as usual and hands the ids to this publisher, whose own
// thread sends them in one statement (its own transaction) per batch with
// synchronous_commit off: no buyer's request waits for it, and the notify
// lock is held only while the commit record is written, never through an
// fsync. Batches begin at most one per kBatchInterval: ids queued meanwhile,
// and while a batch is being sent, go out together in the next, so a burst
// of writes costs at most 50 notifying commits a second, not one each (each
// also wakes every gateway's listener).
//
// A publish can be lost: the process dies between commit and publish, the
// database is unreachable when the batch is sent (the batch is logged and
// dropped, never retried or queued without bound), or a crash loses the
// asynchronous commit. The feeds converge anyway through their periodic full
// read and lapse re-reads (locks/availability_feed.h).
//
// Thread-safe. Owned by locks::Database; the destructor sends what is queued,
// so a short-lived process (paintlockctl) publishes before it exits.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace paintlock::locks {

class Database;

class AvailabilityPublisher {
 public:
  // The least time between two batches' starts; a change reaches the
  // listeners at most this much later than it would unbatched.
  static constexpr std::chrono::milliseconds kBatchInterval{20};

  explicit AvailabilityPublisher(Database& db);
  ~AvailabilityPublisher();
  AvailabilityPublisher(const AvailabilityPublisher&) = delete;
  AvailabilityPublisher& operator=(const AvailabilityPublisher&) = delete;

  // Call only after the write committed. Painting ids are published as
  // given; a reservation id stands for every painting of that reservation
  // (ids that are not UUIDs are ignored).
  void PaintingsChanged(const std::vector<std::string>& painting_ids);
  void ReservationChanged(const std::string& reservation_id);

  // Blocks until everything queued before the call has been sent (or its
  // batch failed).
  void Flush();

 private:
  // Runs add (which queues ids) under mu_, waking the thread for a batch's first id.
  template <typename Add>
  void Queue(Add add);
  void Run();

  Database& db_;
  std::mutex mu_;
  std::condition_variable wake_;           // work queued, or stopping
  std::condition_variable sent_;           // a batch finished
  std::set<std::string> paintings_;        // guarded by mu_
  std::set<std::string> reservations_;     // guarded by mu_
  unsigned long long queued_batches_ = 0;  // guarded by mu_: batches begun
  unsigned long long sent_batches_ = 0;    // guarded by mu_: batches finished
  bool stopping_ = false;                  // guarded by mu_

  std::chrono::steady_clock::time_point last_batch_;  // the thread's own
  std::thread thread_;
};

}  // namespace paintlock::locks
