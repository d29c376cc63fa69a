// What the gateway last read of the catalogue, kept in memory so that a
// checkout can still be priced while the database is down
// (PAINTLOCK_ON_DATABASE_DOWN=sell; Checkout::Start). Prices, titles and
// currencies only ever come from here or from the database, never from a
// request.
//
// Where it comes from:
//   * Refresh(): a full read (locks::Catalogue::List): every painting's
//     entry and state. The gateway refreshes at start-up and then every
//     PAINTLOCK_AVAILABILITY_FULL_READ_SECONDS on a thread of its own
//     (StartRefreshing); a failed read keeps what it had.
//   * Note(): every read of the availability feed (states, no prices), so a
//     sale or a hold reaches the snapshot as soon as the live stream hears
//     of it. A full read that began before such news does not undo it.
//   * HoldOffline(): a cart this gateway sold while the database was down is
//     held here until its session expires, so one gateway does not sell a
//     painting twice during an outage. Another gateway may: that sale is
//     refunded when the database is back (README.md, "When the database is
//     down").
// A painting held by a reservation counts as held until its free_at by the
// gateway's clock (the database's clock is out of reach exactly when this is
// used): after that it may be sold offline, as a lapsed hold may be taken
// over.
//
// Thread-safe: every member may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "locks/availability_feed.h"
#include "locks/catalogue.h"
#include "locks/reservations.h"

namespace paintlock::checkout {

// The snapshot was never read (the gateway has not read the catalogue yet).
struct SnapshotEmpty {};

using SnapshotPricing = std::variant<std::vector<locks::CatalogueEntry>, locks::Busy, locks::Sold,
                                     locks::Withdrawn, locks::Unknown, SnapshotEmpty>;

class CatalogueSnapshot {
 public:
  using Clock = std::chrono::system_clock;

  CatalogueSnapshot() = default;
  ~CatalogueSnapshot();  // StopRefreshing()
  CatalogueSnapshot(const CatalogueSnapshot&) = delete;
  CatalogueSnapshot& operator=(const CatalogueSnapshot&) = delete;

  // Reads the whole catalogue now; false (and nothing changes) when the
  // database could not say.
  bool Refresh(locks::Catalogue& catalogue);
  // Refresh() every `interval` on a thread of its own until StopRefreshing.
  void StartRefreshing(locks::Catalogue& catalogue, std::chrono::seconds interval);
  void StopRefreshing();  // idempotent

  // Takes the states of an availability read (prices stay as they were).
  void Note(const std::vector<locks::PaintingAvailability>& read);
  // Holds `paintings` for a session sold offline until `until`.
  void HoldOffline(const std::vector<std::string>& paintings, Clock::time_point until);

  // True once a full read succeeded.
  bool Loaded() const;

  // The cart's entries, sorted by id, when everything in it may be sold at
  // `now`; else what stands in the way, in the reservation's precedence
  // (unknown, then sold, then held).
  SnapshotPricing ForCart(const std::vector<std::string>& cart, Clock::time_point now) const;

 private:
  struct Painting {
    locks::CatalogueEntry entry;
    bool priced = false;        // entry comes from a full read (Note() may know only the state)
    std::string state;          // available | reserved | sold
    Clock::time_point free_at;  // while reserved
    std::chrono::steady_clock::time_point noted_at;  // when Note() last set the state
  };

  mutable std::mutex mu_;
  std::map<std::string, Painting> paintings_;  // guarded by mu_
  // Paintings sold offline by this gateway: until when.  Guarded by mu_.
  std::map<std::string, Clock::time_point> offline_holds_;
  bool read_ = false;  // guarded by mu_: a full read succeeded

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // guarded by stop_mu_
  std::thread refresher_;
};

// "2026-12-03T08:00:00Z" as a time point; nullopt when it is not that form.
std::optional<CatalogueSnapshot::Clock::time_point> ParseRfc3339(const std::string& text);

}  // namespace paintlock::checkout
