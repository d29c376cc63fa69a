#include "locks/hold_counts.h"

#include "locks/statements.h"

namespace paintlock::locks {

DbResult<std::vector<HoldCount>> HoldCounts::Read() {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (last_ && now - read_at_ < max_age_) return *last_;
  auto read = db_.RunIdempotent("metrics_holds", [](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    std::vector<HoldCount> counts;
    for (const auto& row : Exec(n, "metrics_holds")) {
      counts.push_back({row["condition"].as<std::string>(), row["stuck"].as<bool>(),
                        row["holds"].as<std::int64_t>()});
    }
    return counts;
  });
  if (auto* counts = std::get_if<std::vector<HoldCount>>(&read)) {
    last_ = *counts;
    read_at_ = now;
  }
  return read;
}

}  // namespace paintlock::locks
