#include "chaos/ledger.h"

#include <algorithm>

namespace paintlock::chaos {

std::string Answer::Outcome() const {
  if (skipped) return "skipped: " + skip_reason;
  const bool ctl = step.kind == StepKind::kForceRelease || step.kind == StepKind::kReconcile;
  if (ctl) return "exit " + std::to_string(status);
  if (IsFault(step.kind)) return status ? "injected" : "not injected";
  if (status == 0) return "no answer";
  return std::to_string(status) + (code.empty() ? "" : " " + code);
}

void Ledger::Record(Answer a) {
  const int i = a.step.index;
  {
    std::lock_guard<std::mutex> lock(mu_);
    answers_[i] = std::move(a);
    done_[i] = true;
  }
  cv_.notify_all();
}

size_t Ledger::Recorded() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<size_t>(std::count(done_.begin(), done_.end(), true));
}

std::optional<Answer> Ledger::WaitFor(int index, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return static_cast<bool>(done_[index]); })) {
    return std::nullopt;
  }
  return answers_[index];
}

std::vector<Answer> Ledger::Done() const {
  std::vector<Answer> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < answers_.size(); ++i) {
      if (done_[i]) out.push_back(answers_[i]);
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Answer& a, const Answer& b) { return a.started_ms < b.started_ms; });
  return out;
}

}  // namespace paintlock::chaos
