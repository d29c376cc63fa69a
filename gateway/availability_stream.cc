#include "gateway/availability_stream.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/ids.h"
#include "base/json_text.h"
#include "base/log.h"
#include "gateway/edge/edge_server.h"
#include "gateway/http_errors.h"
#include "locks/lines.h"

namespace paintlock::gateway {

namespace {

std::string RandomEpoch() { return base::NewRequestId().substr(0, 12); }

}  // namespace

std::string FormatAvailabilityEvent(const std::string& epoch, std::uint64_t seq,
                                    const Availability& a) {
  // Written straight out, in the order nlohmann's dump gives (keys sorted):
  // every change to every painting comes through here, on the feed's thread.
  std::string out = "id: ";
  out.reserve(96 + epoch.size() + a.painting.size() + a.free_at.size());
  out += epoch;
  out += '-';
  out += std::to_string(seq);
  out += "\nevent: painting\ndata: ";
  base::JsonObjectText data(out);
  if (!a.free_at.empty()) data.String("free_at", a.free_at);
  data.String("id", a.painting);
  if (a.line_length > 0) data.Int("line_length", a.line_length);
  data.String("state", a.state).End();
  out += "\n\n";
  return out;
}

std::string FormatLineEvents(const Availability& a, LineFollow* follow) {
  std::string out;
  for (const std::string& digest : follow->digests) {
    const auto told = follow->told.find(digest);
    const bool waited_here =
        told != follow->told.end() && told->second.painting == a.painting && told->second.waiting;
    const auto place = std::find_if(a.line.begin(), a.line.end(), [&](const locks::LinePlace& p) {
      return p.token_sha256 == digest;
    });
    nlohmann::json data;
    const bool waiting = place != a.line.end();
    if (waiting) {
      data = {{"id", a.painting},
              {"state", place->your_turn ? "your_turn" : "waiting"},
              {"position", place - a.line.begin() + 1},
              {"line_length", a.line_length},
              {"window_from", place->window_from},
              {"window_until", place->window_until}};
    } else if (waited_here) {
      data = {{"id", a.painting}, {"state", a.state == "sold" ? "closed" : "ended"}};
    } else {
      continue;
    }
    std::string text = data.dump();
    if (told != follow->told.end() && told->second.data == text) continue;
    out += "event: line\ndata: " + text + "\n\n";
    follow->told[digest] = {a.painting, std::move(text), waiting};
  }
  return out;
}

// Holds one of max_streams places for as long as any copy of the stream's
// content provider lives: httplib destroys the provider when the response is
// finished, however it finished (client gone, write failed, server stopping).
class AvailabilityStream::Slot {
 public:
  explicit Slot(AvailabilityStream& stream) : stream_(stream) {}
  ~Slot() { stream_.GiveSlot(); }
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;

 private:
  AvailabilityStream& stream_;
};

namespace {

struct Cursor {
  std::uint64_t after = 0;
  bool started = false;
  bool owes_line_snapshot = false;  // resumed: its line places, once the board is current
  std::chrono::steady_clock::time_point last_write;
  LineFollow line;
};

// A new stream's first changes are every painting (about 2 MB for 20,000):
// given to the reactor in pieces of about this size, so that a hundred
// streams opening at once do not each hold all of it (make bench's
// reserve-watched: a peak RSS of 128 MB with 100 streams written whole, 198 MB
// when the reactor was given whole backlogs).
constexpr std::size_t kWriteSlice = 64 * 1024;
// And read from the board this many at a time: neither a list of every
// painting (320 KB of pointers for 20,000) for each new stream, nor the
// board's lock held, against the feed's updates, while it is made.
constexpr std::size_t kReadBatch = 256;

// Appends the events `changes` owe the stream at `cursor` to `out`, and
// advances the cursor.
void AppendChanges(const AvailabilityStream::Changes& changes, Cursor* cursor, std::string* out) {
  for (const auto& entry : changes.items) {
    *out += entry->event;
    if (!cursor->line.digests.empty()) *out += FormatLineEvents(entry->availability, &cursor->line);
  }
  cursor->after = changes.upto;
}

// Appends the line places a resumed stream is owed, once the board can tell them.
void AppendOwedLineSnapshot(const AvailabilityStream& board, Cursor* cursor, std::string* out) {
  if (!cursor->owes_line_snapshot) return;
  if (auto snapshot = board.LineSnapshot(&cursor->line)) {
    *out += *snapshot;
    cursor->owes_line_snapshot = false;
  }
}

}  // namespace

// A stream after its first bytes, pulled by the edge's reactor. Owns the
// slot: the reactor destroys it the moment the client is gone.
class AvailabilityStream::Pushed : public edge::PushStream {
 public:
  Pushed(AvailabilityStream& stream, std::shared_ptr<Slot> slot, std::shared_ptr<Cursor> cursor)
      : stream_(stream), slot_(std::move(slot)), cursor_(std::move(cursor)) {}

  // At most about kWriteSlice at a time (the reactor asks again once it is
  // written): what a new stream is owed, or one that waited for the board to
  // become current, is every painting.
  std::string Next(std::chrono::steady_clock::time_point now, bool* end) override {
    std::string out;
    Changes changes;
    do {
      changes = stream_.WaitForChanges(cursor_->after, std::chrono::milliseconds(0), kReadBatch);
      if (changes.closed) {
        *end = true;
        return "";
      }
      AppendChanges(changes, cursor_.get(), &out);
    } while (changes.more && out.size() < kWriteSlice);
    if (!changes.more) AppendOwedLineSnapshot(stream_, cursor_.get(), &out);
    if (out.empty() && now - cursor_->last_write >= stream_.options_.heartbeat) {
      out = ": heartbeat\n\n";
    }
    if (!out.empty()) cursor_->last_write = now;
    return out;
  }

 private:
  AvailabilityStream& stream_;
  std::shared_ptr<Slot> slot_;
  std::shared_ptr<Cursor> cursor_;
};

AvailabilityStream::AvailabilityStream(AvailabilityStreamOptions options)
    : options_(std::move(options)) {
  if (options_.epoch.empty()) options_.epoch = RandomEpoch();
}

void AvailabilityStream::SetCurrent(bool current) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    current_ = current;
  }
  if (current) {
    // Streams waiting for a current board: what the full read changed woke
    // them already, but a board it left as it was must wake them too.
    changed_.notify_all();
    NotifyObserver();
  }
}

int AvailabilityStream::Update(const std::vector<Availability>& read) {
  int changed = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Availability& a : read) {
      auto& slot = board_[a.painting];
      if (slot && slot->availability == a) continue;
      if (slot) by_seq_.erase(slot->seq);
      ++seq_;
      slot = std::make_shared<const Entry>(
          Entry{seq_, a, FormatAvailabilityEvent(options_.epoch, seq_, a)});
      by_seq_.emplace_hint(by_seq_.end(), seq_, slot);
      ++changed;
    }
  }
  if (changed > 0) {
    changed_.notify_all();
    NotifyObserver();
  }
  return changed;
}

AvailabilityStream::Changes AvailabilityStream::WaitForChanges(std::uint64_t after,
                                                               std::chrono::milliseconds wait,
                                                               std::size_t limit) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto ready = [&] { return closed_ || (current_ && seq_ > after); };
  // Not even a zero wait when there is nothing: a timed wait on the condition
  // is a futex call that may give up the thread, and the reactor asks every
  // stream again after each write (make bench's reserve-watched: 2.4 context
  // switches a request with it, 1.1 without).
  if (wait.count() > 0 && !ready()) {
    ++waiting_;
    changed_.wait_for(lock, wait, ready);
    --waiting_;
  }
  Changes out;
  out.closed = closed_;
  out.upto = current_ ? std::max(after, seq_) : after;
  if (closed_ || !current_ || seq_ <= after) return out;
  limit = std::max<std::size_t>(limit, 1);  // a batch of none would never advance
  for (auto it = by_seq_.upper_bound(after); it != by_seq_.end(); ++it) {
    if (out.items.size() == limit) {
      // Up to the last one taken: a painting changed since moves past it.
      out.upto = out.items.back()->seq;
      out.more = true;
      break;
    }
    out.items.push_back(it->second);
  }
  return out;
}

int AvailabilityStream::WaitingReaders() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_;
}

std::uint64_t AvailabilityStream::ResumePoint(const std::string& last_event_id) const {
  const auto dash = last_event_id.rfind('-');
  if (dash == std::string::npos || last_event_id.compare(0, dash, options_.epoch) != 0 ||
      dash != options_.epoch.size()) {
    return 0;
  }
  const std::string digits = last_event_id.substr(dash + 1);
  if (digits.empty() || digits.size() > 19 ||
      digits.find_first_not_of("0123456789") != std::string::npos) {
    return 0;
  }
  const std::uint64_t n = std::strtoull(digits.c_str(), nullptr, 10);
  std::lock_guard<std::mutex> lock(mu_);
  return n <= seq_ ? n : 0;
}

bool AvailabilityStream::TakeSlot() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || open_ >= options_.max_streams) return false;
    if (++open_ > 1) return true;
  }
  NotifyWatchObserver();
  return true;
}

void AvailabilityStream::GiveSlot() {
  int open;
  {
    std::lock_guard<std::mutex> lock(mu_);
    open = --open_;
  }
  if (open == 0) NotifyWatchObserver();
  base::LogInfo("stream_closed", {{"open_streams", open}});
}

int AvailabilityStream::OpenStreams() const {
  std::lock_guard<std::mutex> lock(mu_);
  return open_;
}

void AvailabilityStream::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  changed_.notify_all();
  NotifyObserver();
}

void AvailabilityStream::SetChangeObserver(std::function<void()> observer) {
  std::lock_guard<std::mutex> lock(mu_);
  observer_ = std::move(observer);
}

void AvailabilityStream::SetWatchObserver(std::function<void()> observer) {
  std::lock_guard<std::mutex> lock(watch_mu_);
  watch_observer_ = std::move(observer);
}

void AvailabilityStream::NotifyWatchObserver() {
  std::lock_guard<std::mutex> lock(watch_mu_);
  if (watch_observer_) watch_observer_();
}

void AvailabilityStream::NotifyObserver() {
  std::function<void()> observer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    observer = observer_;
  }
  if (observer) observer();
}

std::optional<std::string> AvailabilityStream::LineSnapshot(LineFollow* follow) const {
  std::string out;
  std::lock_guard<std::mutex> lock(mu_);
  if (!current_) return std::nullopt;
  if (follow->digests.empty()) return out;
  for (const auto& [painting, entry] : board_) out += FormatLineEvents(entry->availability, follow);
  return out;
}

void AvailabilityStream::Serve(const httplib::Request& req, httplib::Response& res) {
  LineFollow line;
  const size_t tokens = req.get_param_value_count("line_token");
  if (tokens > static_cast<size_t>(kMaxLineTokens)) {
    return WriteError(res, InvalidRequest("A stream follows at most " +
                                              std::to_string(kMaxLineTokens) + " line tokens.",
                                          "line_token"));
  }
  for (size_t i = 0; i < tokens; ++i) {
    const std::string token = req.get_param_value("line_token", i);
    if (!locks::LooksLikeLineToken(token)) {
      return WriteError(res, InvalidRequest("Each line_token must be one POST "
                                            "/v1/paintings/{id}/line returned (plt_…).",
                                            "line_token"));
    }
    line.digests.push_back(locks::LineTokenDigest(token));
  }
  if (!TakeSlot()) {
    std::unique_lock<std::mutex> lock(mu_);
    const bool closing = closed_;
    lock.unlock();
    if (closing) {
      return WriteError(res, ShuttingDown());
    }
    base::LogWarn("stream_refused",
                  {{"open_streams", OpenStreams()}, {"max_streams", options_.max_streams}});
    return WriteError(res, TooManyStreams());
  }
  auto slot = std::make_shared<Slot>(*this);
  auto cursor = std::make_shared<Cursor>();
  cursor->after = ResumePoint(req.get_header_value("Last-Event-ID"));
  cursor->line = std::move(line);
  // A new stream's first changes hold every painting, its line places too; a
  // resumed one is owed its places whatever changed since.
  cursor->owes_line_snapshot = cursor->after > 0;
  base::LogInfo("stream_opened", {{"open_streams", OpenStreams()},
                                  {"resume_after", cursor->after},
                                  {"line_tokens", cursor->line.digests.size()}});

  res.set_header("X-Accel-Buffering", "no");  // proxies (nginx) must not buffer events
  if (edge::CanDetachResponse()) {
    // httplib writes the head and this first chunk (the retry field and the
    // first slice of what the client is owed); then the edge's reactor owns
    // the connection and pushes the rest.
    auto pushed = std::make_shared<Pushed>(*this, slot, cursor);
    res.set_chunked_content_provider(
        "text/event-stream", [this, pushed](size_t, httplib::DataSink& sink) {
          bool end = false;
          const std::string out = "retry: " + std::to_string(options_.client_retry.count()) +
                                  "\n\n" + pushed->Next(std::chrono::steady_clock::now(), &end);
          if (sink.write(out.data(), out.size()) && !end) edge::DetachResponse(pushed);
          return false;  // httplib stops here; the reactor continues (or the stream ends)
        });
    return;
  }
  res.set_chunked_content_provider(
      "text/event-stream", [this, slot, cursor](size_t, httplib::DataSink& sink) {
        using std::chrono::steady_clock;
        std::string out;
        std::chrono::milliseconds wait{0};
        if (!cursor->started) {
          // Tell the client how soon to come back, and flush the headers.
          out = "retry: " + std::to_string(options_.client_retry.count()) + "\n\n";
          cursor->started = true;
        } else {
          // Return at least every second: httplib checks between calls whether
          // the server is stopping.
          const auto until_heartbeat = std::chrono::duration_cast<std::chrono::milliseconds>(
              cursor->last_write + options_.heartbeat - steady_clock::now());
          wait = std::clamp(until_heartbeat, std::chrono::milliseconds(0),
                            std::chrono::milliseconds(1000));
        }
        Changes changes = WaitForChanges(cursor->after, wait);
        if (changes.closed) return false;
        AppendChanges(changes, cursor.get(), &out);
        AppendOwedLineSnapshot(*this, cursor.get(), &out);
        const auto now = steady_clock::now();
        if (out.empty() && now - cursor->last_write >= options_.heartbeat) out = ": heartbeat\n\n";
        if (out.empty()) return true;
        // A vanished client fails here (at the latest on the write after the
        // one its RST answered); returning false ends the stream.
        if (!sink.is_writable() || !sink.write(out.data(), out.size())) return false;
        cursor->last_write = now;
        return true;
      });
}

}  // namespace paintlock::gateway
