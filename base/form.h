// application/x-www-form-urlencoded bodies: Stripe's request bodies, with bracketed
// nested keys (`line_items[0][price_data][currency]=eur`, `metadata[k]=v`).
//
// Pure functions, no state: safe from any thread.
//
// Wire format we produce (what the official Node library sends, which Stripe
// accepts): values are percent-encoded keeping only RFC 3986 unreserved
// characters (ALPHA DIGIT - . _ ~), so a space is %20 and `{`/`}` are
// %7B/%7D; keys are encoded the same way except that `[` and `]` stay raw.
// Field order is kept as given. The decoder is lenient in the other
// direction (`+` as space, `%5B` or raw `[`, lower-case hex) so the gateway
// (HTML form posts), the fake Stripe and tests can read what any client sends.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace paintlock::base {

// Ordered (key, value) pairs; keys may repeat.
using FormFields = std::vector<std::pair<std::string, std::string>>;

// FormKey("line_items", {"0", "price_data", "currency"}) ==
// "line_items[0][price_data][currency]"; FormKey("mode") == "mode".
std::string FormKey(std::string_view root, std::initializer_list<std::string_view> path = {});

// Every byte outside RFC 3986 "unreserved" becomes %XX (upper-case hex).
// UTF-8 is encoded byte by byte.
std::string PercentEncode(std::string_view raw);

// "k1=v1&k2=v2" as described above. An empty list gives "".
std::string EncodeForm(const FormFields& fields);

// Decodes one key or value: %XX (either case) to the byte, '+' to a space.
// Returns false on a truncated or non-hex escape; *out is then unspecified.
bool PercentDecode(std::string_view encoded, std::string* out);

// Splits on '&' and the first '=' of each pair and decodes both halves.
// Empty pairs ("a=1&&b=2") are skipped; a pair without '=' has an empty
// value. Returns false on a bad escape; *out is then unspecified.
bool DecodeForm(std::string_view body, FormFields* out);

}  // namespace paintlock::base
