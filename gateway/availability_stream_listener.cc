#include "gateway/availability_stream_listener.h"

#include "base/log.h"

namespace paintlock::gateway {

AvailabilityListener::AvailabilityListener(AvailabilityListenerOptions options,
                                           AvailabilityStream& stream,
                                           locks::AvailabilityFeed::Sink also)
    : feed_(std::move(options), [&stream, also = std::move(also)](
                                    const std::vector<locks::PaintingAvailability>& read) {
        const int changed = stream.Update(read);
        if (changed > 0) {
          base::Log(base::LogLevel::kDebug, "availability_changed",
                    {{"read", read.size()}, {"changed", changed}});
        }
        if (also) also(read);
      }) {}

}  // namespace paintlock::gateway
