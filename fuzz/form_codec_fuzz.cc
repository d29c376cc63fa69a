// The form codec (base/form.h). Properties: decoding never fails on what we
// encode; encode∘decode is the identity on fields (any bytes, keys with
// brackets); a body that decodes re-encodes to a body that decodes to the same
// fields; PercentEncode emits only unreserved characters and %XX.
#include <string>

#include "base/form.h"
#include "fuzz/fuzz_support.h"

using namespace paintlock;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = fuzz::AsText(data, size);

  // 1. The input as a received body.
  base::FormFields decoded;
  if (base::DecodeForm(input, &decoded)) {
    base::FormFields again;
    FUZZ_CHECK(base::DecodeForm(base::EncodeForm(decoded), &again));
    // Keys and values survive, except that a key that decodes to "" with an
    // empty value encodes as "=", which decodes back the same.
    FUZZ_CHECK(again == decoded);
  }

  // 2. The input as fields to send: "k\0v\0k\0v…".
  const auto parts = fuzz::Fields(input, 8);
  base::FormFields fields;
  for (std::size_t i = 0; i + 1 < parts.size(); i += 2) fields.emplace_back(parts[i], parts[i + 1]);
  const std::string body = base::EncodeForm(fields);
  for (char c : body) {
    const bool allowed = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                         (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~' ||
                         c == '%' || c == '&' || c == '=' || c == '[' || c == ']';
    FUZZ_CHECK(allowed);
  }
  base::FormFields round;
  FUZZ_CHECK(base::DecodeForm(body, &round));
  FUZZ_CHECK(round == fields);

  std::string value;
  FUZZ_CHECK(base::PercentDecode(base::PercentEncode(input), &value));
  FUZZ_CHECK(value == input);
  return 0;
}
