#include "gateway/availability_stream_listener.h"

#include "base/log.h"

namespace paintlock::gateway {

AvailabilityListener::AvailabilityListener(AvailabilityListenerOptions options,
                                           AvailabilityStream& stream)
    : feed_(std::move(options), [&stream](const std::vector<locks::PaintingAvailability>& read) {
        std::vector<Availability> board;
        board.reserve(read.size());
        for (const auto& a : read) board.push_back({a.painting, a.state, a.free_at, a.line_length});
        const int changed = stream.Update(board);
        if (changed > 0) {
          base::Log(base::LogLevel::kDebug, "availability_changed",
                    {{"read", board.size()}, {"changed", changed}});
        }
      }) {}

}  // namespace paintlock::gateway
