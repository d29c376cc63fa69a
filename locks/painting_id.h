// The one rule for a painting id, wherever one arrives: a request, the
// catalogue import, a NOTIFY payload, an offline sale's Stripe metadata.
// 1-64 letters, digits, '_', '.' or '-', beginning with a letter or digit
// (^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$): ids reach URLs, logs, SQL arrays and
// Stripe metadata, so nothing that needs quoting in any of them.
#pragma once

#include <string_view>

#include "base/text.h"

namespace paintlock::locks {

inline constexpr std::size_t kMaxPaintingIdBytes = 64;

inline bool IsPaintingId(std::string_view id) {
  return base::IsToken(id, 1, kMaxPaintingIdBytes, "", "_.-");
}

}  // namespace paintlock::locks
