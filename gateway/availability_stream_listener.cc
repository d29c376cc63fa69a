#include "gateway/availability_stream_listener.h"

#include "base/log.h"

namespace paintlock::gateway {

AvailabilityListener::AvailabilityListener(AvailabilityListenerOptions options,
                                           AvailabilityStream& stream,
                                           locks::AvailabilityFeed::Sink also)
    : stream_(stream),
      feed_(
          std::move(options),
          [&stream, also](const std::vector<locks::PaintingAvailability>& read) {
            const int changed = stream.Update(read);
            if (changed > 0) {
              base::Log(base::LogLevel::kDebug, "availability_changed",
                        {{"read", read.size()}, {"changed", changed}});
            }
            if (also) also(read);
          },
          // Reads for the streams only while one is open; for `also` (the
          // offline snapshot) always.
          also ? locks::AvailabilityFeed::Watched()
               : [&stream] { return stream.OpenStreams() > 0; },
          also ? locks::AvailabilityFeed::Current()
               : [&stream](bool current) { stream.SetCurrent(current); }) {
  if (!also) stream.SetWatchObserver([this] { feed_.Wake(); });
}

AvailabilityListener::~AvailabilityListener() {
  stream_.SetWatchObserver(nullptr);
  feed_.Stop();
}

}  // namespace paintlock::gateway
