// JSON text written straight into a string, for the lines and answers the
// gateway writes on every request, where building an nlohmann object first
// cost more than the rest of the work (base/log.cc, gateway/limit_routes.cc).
#pragma once

#include <string>
#include <string_view>

namespace paintlock::base {

// Appends `s` as a JSON string: as it is, quoted, when it is printable ASCII
// with nothing to escape (names, ids, keys, times); else nlohmann's escaping,
// invalid UTF-8 replaced by U+FFFD. Always the bytes nlohmann's dump gives.
void AppendJsonString(std::string& out, std::string_view s);

}  // namespace paintlock::base
