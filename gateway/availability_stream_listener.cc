#include "gateway/availability_stream_listener.h"

#include "base/log.h"

namespace paintlock::gateway {

AvailabilityListener::AvailabilityListener(AvailabilityListenerOptions options,
                                           AvailabilityStream& stream)
    : feed_(std::move(options), [&stream](const std::vector<locks::PaintingAvailability>& read) {
        const int changed = stream.Update(read);
        if (changed > 0) {
          base::Log(base::LogLevel::kDebug, "availability_changed",
                    {{"read", read.size()}, {"changed", changed}});
        }
      }) {}

}  // namespace paintlock::gateway
