// GET /v1/paintings/stream: every painting's availability, live, as
// Server-Sent Events (fixtures/storefront/README.md, "The stream").
//
// The stream is a board of the latest truth per painting, not a log of
// changes. Each painting carries the sequence number of its last change; a
// client that has seen everything up to sequence N is owed exactly the
// paintings whose number is above N, each in its latest state. So:
//   * a new client (N = 0) gets every painting first, then the changes;
//   * a reconnecting client sends Last-Event-ID ("<epoch>-<N>") and gets only
//     what changed since; an id of another process or an earlier run of this
//     one (another epoch) gets everything again;
//   * a slow client never falls behind a queue: bursts of changes to one
//     painting collapse into its latest state.
// A member of a painting's waiting line opens the stream with its line
// tokens (?line_token=plt_…, repeated, at most kMaxLineTokens) and is also
// sent `line` events: its own position, and when its turn comes, the claim
// window (see FormatLineEvents). Other streams see only each line's length.
// The board is fed by AvailabilityListener (LISTEN/NOTIFY, one per process)
// and never reads the database itself.
//
// The number of streams is bounded (max_streams; beyond it 503). Served by
// the gateway's edge (gateway/edge/edge_server.h), a stream holds no worker
// thread: after the first bytes the connection is handed to the edge's
// reactor, which pulls events from the board when woken (the change
// observer) and notices a client that closes at once, freeing its slot.
// Served by a plain httplib::Server (unit tests), a stream holds one worker
// thread and a vanished client is noticed on the next write: events or, at
// the latest, a heartbeat comment every `heartbeat`.
//
// Thread-safe.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "locks/availability_feed.h"

namespace paintlock::gateway {

using Availability = locks::PaintingAvailability;

struct AvailabilityStreamOptions {
  int max_streams = 200;                         // 0: every stream request gets 503
  std::chrono::seconds heartbeat{15};            // a comment line when nothing else was sent
  std::chrono::milliseconds client_retry{2000};  // the `retry:` field: reconnect delay
  std::string epoch;                             // empty: random (tests pin it)
};

// One SSE event for `a`, with its id:
//   id: <epoch>-<seq>\nevent: painting\ndata: {"id":"p7","state":"reserved","free_at":"…"}\n\n
std::string FormatAvailabilityEvent(const std::string& epoch, std::uint64_t seq,
                                    const Availability& a);

// What one stream follows in the waiting lines: the SHA-256 digests of the
// line tokens it was opened with, and what it last told of each.
struct LineFollow {
  std::vector<std::string> digests;
  struct Told {
    std::string painting;
    std::string data;
    bool waiting = false;  // the event placed it in the line
  };
  std::map<std::string, Told> told;  // digest -> its last line event
};
constexpr int kMaxLineTokens = 8;

// The `line` events `a` owes a stream following `follow`, and records them
// in it; nothing it was told already:
//   event: line\ndata: {"id":"p7","state":"waiting","position":3,"line_length":5,
//                       "window_from":"…","window_until":"…"}\n\n
// While the token's entry waits, state is "waiting" or "your_turn" (its
// claim window runs: buy before window_until). When the entry stops waiting
// the stream says "closed" if the painting sold, else "ended" (claimed,
// passed, left or cleared: GET /v1/paintings/{id}/line says which), once.
std::string FormatLineEvents(const Availability& a, LineFollow* follow);

class AvailabilityStream {
 public:
  explicit AvailabilityStream(AvailabilityStreamOptions options);
  AvailabilityStream(const AvailabilityStream&) = delete;
  AvailabilityStream& operator=(const AvailabilityStream&) = delete;

  // Records what was just read from the database: each painting whose state
  // differs from the board's gets the next sequence number and wakes every
  // stream. Returns how many changed.
  int Update(const std::vector<Availability>& read);

  // Whether the board is kept current (the feed's word, locks::AvailabilityFeed::
  // Current). While it is not (nobody watched for a while, so the feed stopped
  // reading), streams are sent nothing from it: a stream opened then waits for
  // the full read that makes it current, instead of being told what was true
  // when the feed stopped. Current from construction.
  void SetCurrent(bool current);

  // A painting's place on the board: its last change's sequence number, its
  // state then and that state's `painting` event (FormatAvailabilityEvent),
  // formatted once for every stream. Immutable; a change makes a new one.
  struct Entry {
    std::uint64_t seq = 0;
    Availability availability;
    std::string event;
  };
  struct Changes {
    std::vector<std::shared_ptr<const Entry>> items;  // in sequence order
    std::uint64_t upto = 0;  // the sequence the reader has now seen everything up to
    bool closed = false;     // Close() was called: end the stream
    bool more = false;       // `limit` cut it short: more changes follow `upto` now
  };
  // The paintings changed after sequence `after`, at most `limit` (at least
  // 1) of them, the first ones; waits up to `wait` for one if there is none yet
  // (returns early, empty, when closed). Costs what it returns, not the size
  // of the catalogue: every open stream asks on every change, on the edge's
  // one reactor thread, and a new stream reads the whole board in batches.
  Changes WaitForChanges(std::uint64_t after, std::chrono::milliseconds wait,
                         std::size_t limit = SIZE_MAX);

  // The sequence a Last-Event-ID resumes after: its N when it was issued by
  // this board (same epoch, N not ahead of the board), else 0 (everything).
  std::uint64_t ResumePoint(const std::string& last_event_id) const;

  // The line events owed to `follow` from every painting on the board (a
  // resumed stream's first chunk: a member's place, whatever changed since);
  // nullopt while the board is not current (then nothing is recorded as told).
  std::optional<std::string> LineSnapshot(LineFollow* follow) const;

  // Serves GET /v1/paintings/stream: 400 for a line_token that is not one,
  // 503 beyond max_streams, else a text/event-stream that lasts until the
  // client goes or Close().
  void Serve(const httplib::Request& req, httplib::Response& res);

  // `observer` is called (on the caller's thread, without locks held) after
  // every Update that changed something and after Close(). Set once, before
  // streams are served.
  void SetChangeObserver(std::function<void()> observer);

  // `observer` is called (on the caller's thread, without the board's lock
  // held) when the number of open streams goes from none to one and back to
  // none: the feed reads only while someone watches (OpenStreams() > 0).
  // Replacing it (with nullptr, say) waits for a call in progress, so its
  // owner may then go.
  void SetWatchObserver(std::function<void()> observer);

  // Streams open now (for /readyz and the leak tests).
  int OpenStreams() const;

  // Readers blocked in WaitForChanges right now (tests await a waiting reader).
  int WaitingReaders() const;

  // Ends every stream (now, and any opened later): call before stopping the
  // HTTP server so it does not wait for them.
  void Close();

  const std::string& epoch() const { return options_.epoch; }

 private:
  class Slot;    // one open stream; gives its place back when destroyed
  class Pushed;  // a stream served by the edge's reactor

  bool TakeSlot();
  void GiveSlot();
  void NotifyObserver();
  void NotifyWatchObserver();

  AvailabilityStreamOptions options_;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  // Guarded by mu_: each painting's entry, and the same entries by sequence
  // number (a reader after N starts at N's successor).
  std::map<std::string, std::shared_ptr<const Entry>> board_;
  std::map<std::uint64_t, std::shared_ptr<const Entry>> by_seq_;
  std::uint64_t seq_ = 0;                 // guarded by mu_
  bool closed_ = false;                   // guarded by mu_
  bool current_ = true;                   // guarded by mu_
  int open_ = 0;                          // guarded by mu_
  int waiting_ = 0;                       // guarded by mu_
  std::function<void()> observer_;        // guarded by mu_
  std::mutex watch_mu_;                   // held while watch_observer_ is called
  std::function<void()> watch_observer_;  // guarded by watch_mu_
};

}  // namespace paintlock::gateway
