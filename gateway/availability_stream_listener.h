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
  // the stream.
  AvailabilityListener(AvailabilityListenerOptions options, AvailabilityStream& stream,
                       locks::AvailabilityFeed::Sink also = nullptr);

  // Starts listening in the background. Call once.
  void Start() { feed_.Start(); }
  // Stops listening and joins its thread. Idempotent.
  void Stop() { feed_.Stop(); }

 private:
  locks::AvailabilityFeed feed_;
};

}  // namespace paintlock::gateway
