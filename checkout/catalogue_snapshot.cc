#include "checkout/catalogue_snapshot.h"

#include <algorithm>
#include <ctime>

#include "base/log.h"

namespace paintlock::checkout {

namespace {

using Clock = CatalogueSnapshot::Clock;

std::string FormatRfc3339(Clock::time_point t) {
  const std::time_t secs = Clock::to_time_t(t + std::chrono::milliseconds(999));  // round up
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

std::optional<Clock::time_point> ParseRfc3339(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (end == nullptr || *end != '\0') return std::nullopt;
  return Clock::from_time_t(timegm(&tm));
}

CatalogueSnapshot::~CatalogueSnapshot() { StopRefreshing(); }

bool CatalogueSnapshot::Refresh(locks::Catalogue& catalogue) {
  const auto started = std::chrono::steady_clock::now();
  auto listed = catalogue.List();
  if (std::holds_alternative<locks::DbFailure>(listed)) return false;
  const Clock::time_point now = Clock::now();
  std::map<std::string, Painting> fresh;
  for (const auto& v : std::get<std::vector<locks::PaintingView>>(listed)) {
    Painting p{v.entry, true, v.state, now + std::chrono::seconds(v.retry_after_seconds), {}};
    fresh.emplace(v.entry.id, std::move(p));
  }
  std::lock_guard<std::mutex> lock(mu_);
  // The feed may have told of a change after this read began: the newer
  // state wins, the read's prices stay.
  for (auto& [id, p] : fresh) {
    auto old = paintings_.find(id);
    if (old != paintings_.end() && old->second.noted_at > started) {
      p.state = old->second.state;
      p.free_at = old->second.free_at;
      p.noted_at = old->second.noted_at;
    }
  }
  paintings_ = std::move(fresh);
  read_ = true;
  return true;
}

void CatalogueSnapshot::StartRefreshing(locks::Catalogue& catalogue,
                                        std::chrono::seconds interval) {
  refresher_ = std::thread([this, &catalogue, interval] {
    std::unique_lock<std::mutex> lock(stop_mu_);
    while (!stop_cv_.wait_for(lock, interval, [this] { return stopping_; })) {
      lock.unlock();
      if (!Refresh(catalogue)) {
        base::Log(base::LogLevel::kDebug, "catalogue_snapshot_not_refreshed",
                  {{"why", "the database could not be read; the snapshot keeps its last read"}});
      }
      lock.lock();
    }
  });
}

void CatalogueSnapshot::StopRefreshing() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (refresher_.joinable()) refresher_.join();
}

void CatalogueSnapshot::Note(const std::vector<locks::PaintingAvailability>& read) {
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point now = Clock::now();
  for (const auto& a : read) {
    Painting& p = paintings_[a.painting];
    p.entry.id = a.painting;
    p.state = a.state;
    if (a.state == "reserved") p.free_at = ParseRfc3339(a.free_at).value_or(now);
    p.noted_at = std::chrono::steady_clock::now();
  }
}

void CatalogueSnapshot::HoldOffline(const std::vector<std::string>& paintings,
                                    Clock::time_point until) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& id : paintings) {
    Clock::time_point& held = offline_holds_[id];
    held = std::max(held, until);
  }
}

bool CatalogueSnapshot::Loaded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return read_;
}

SnapshotPricing CatalogueSnapshot::ForCart(const std::vector<std::string>& cart,
                                           Clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!read_) return SnapshotEmpty{};
  std::vector<const Painting*> found;
  for (const auto& id : cart) {
    auto it = paintings_.find(id);
    if (it == paintings_.end() || !it->second.priced) return locks::Unknown{id};
    found.push_back(&it->second);
  }
  for (const Painting* p : found) {
    if (p->state == "sold") return locks::Sold{p->entry.id};
    if (p->state == "withdrawn") return locks::Withdrawn{p->entry.id};
  }
  for (const Painting* p : found) {
    Clock::time_point free_at = p->state == "reserved" ? p->free_at : Clock::time_point{};
    if (auto held = offline_holds_.find(p->entry.id); held != offline_holds_.end()) {
      free_at = std::max(free_at, held->second);
    }
    if (free_at > now) {
      const auto wait = std::chrono::ceil<std::chrono::seconds>(free_at - now);
      return locks::Busy{p->entry.id, FormatRfc3339(free_at),
                         static_cast<int>(std::max<long long>(1, wait.count()))};
    }
  }
  std::vector<locks::CatalogueEntry> entries;
  for (const Painting* p : found) entries.push_back(p->entry);
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.id < b.id; });
  return entries;
}

}  // namespace paintlock::checkout
