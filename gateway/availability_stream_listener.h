// Feeds an AvailabilityStream from the database: a locks::AvailabilityFeed
// (locks/availability_feed.h, which says how the reads stay true) whose reads
// become the stream's board. Only the HTTP side lives here; the connection,
// LISTEN and SQL live in locks/.
//
// Thread-safe: Start() and Stop() may be called from any thread.
#pragma once

#include <chrono>

#include "gateway/availability_stream.h"
#include "locks/availability_feed.h"

namespace paintlock::gateway {

using AvailabilityListenerOptions = locks::AvailabilityFeedOptions;

class AvailabilityListener {
 public:
  // `also`, when given, hears every read too (on the feed's thread), after
  // the stream. Without it the feed reads only while a stream is open (and
  // options.idle_after after the last closed): locks/availability_feed.h.
  AvailabilityListener(AvailabilityListenerOptions options, AvailabilityStream& stream,
                       locks::AvailabilityFeed::Sink also = nullptr);
  ~AvailabilityListener();  // the stream stops waking it; Stop()
  AvailabilityListener(const AvailabilityListener&) = delete;
  AvailabilityListener& operator=(const AvailabilityListener&) = delete;

  // Starts listening in the background. Call once.
  void Start() { feed_.Start(); }
  // Stops listening and joins its thread. Idempotent.
  void Stop() { feed_.Stop(); }

 private:
  AvailabilityStream& stream_;
  locks::AvailabilityFeed feed_;
};

}  // namespace paintlock::gateway
