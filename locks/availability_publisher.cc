#include "locks/availability_publisher.h"

#include "base/log.h"
#include "locks/database.h"
#include "locks/reservations.h"
#include "locks/statements.h"

namespace paintlock::locks {

AvailabilityPublisher::AvailabilityPublisher(Database& db) : db_(db) {
  thread_ = std::thread([this] { Run(); });
}

AvailabilityPublisher::~AvailabilityPublisher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

template <typename Add>
void AvailabilityPublisher::Queue(Add add) {
  bool first;
  {
    std::lock_guard<std::mutex> lock(mu_);
    first = paintings_.empty() && reservations_.empty();
    add();
  }
  // Only a batch's first id wakes the thread (Run): under load, waking it
  // for every write found the interval not yet up, a thread switch a write.
  if (first) wake_.notify_one();
}

void AvailabilityPublisher::PaintingsChanged(const std::vector<std::string>& painting_ids) {
  if (painting_ids.empty()) return;
  Queue([&] { paintings_.insert(painting_ids.begin(), painting_ids.end()); });
}

void AvailabilityPublisher::ReservationChanged(const std::string& reservation_id) {
  if (!LooksLikeUuid(reservation_id)) return;
  Queue([&] { reservations_.insert(reservation_id); });
}

void AvailabilityPublisher::Flush() {
  std::unique_lock<std::mutex> lock(mu_);
  // What is queued now goes out in the batch after the one in flight.
  const unsigned long long target =
      queued_batches_ + (paintings_.empty() && reservations_.empty() ? 0 : 1);
  sent_.wait(lock, [&] { return sent_batches_ >= target; });
}

void AvailabilityPublisher::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !paintings_.empty() || !reservations_.empty(); });
    if (paintings_.empty() && reservations_.empty()) return;  // stopping, nothing left
    // What is queued until the interval is up goes in this batch too; a
    // stop sends at once; ids queued meanwhile do not wake this wait (Queue).
    wake_.wait_until(lock, last_batch_ + kBatchInterval, [&] { return stopping_; });
    last_batch_ = std::chrono::steady_clock::now();
    std::set<std::string> paintings, reservations;
    paintings.swap(paintings_);
    reservations.swap(reservations_);
    ++queued_batches_;
    lock.unlock();
    const std::vector<std::string> painting_list(paintings.begin(), paintings.end());
    const std::vector<std::string> reservation_list(reservations.begin(), reservations.end());
    auto sent = db_.Run("availability_publish", [&](pqxx::connection& c) {
      // One statement in its own transaction, committed without waiting for
      // its flush (see the query): one round trip per batch.
      pqxx::nontransaction n(c);
      Exec(n, "availability_publish", TextArrayLiteral(painting_list),
           TextArrayLiteral(reservation_list));
      return true;
    });
    if (const auto* f = std::get_if<DbFailure>(&sent)) {
      base::LogWarn("availability_publish_lost", {{"paintings", painting_list.size()},
                                                  {"reservations", reservation_list.size()},
                                                  {"error", f->detail}});
    }
    lock.lock();
    ++sent_batches_;
    sent_.notify_all();
  }
}

}  // namespace paintlock::locks
