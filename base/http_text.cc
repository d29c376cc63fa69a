#include "base/http_text.h"

#include <openssl/crypto.h>

#include <cctype>

#include "base/text.h"

namespace paintlock::base {

std::string MediaTypeOf(std::string_view content_type) {
  return AsciiLower(TrimView(content_type.substr(0, content_type.find(';'))));
}

std::optional<std::string> CredentialsOf(std::string_view authorization, std::string_view scheme) {
  if (authorization.size() <= scheme.size() || authorization[scheme.size()] != ' ' ||
      AsciiLower(authorization.substr(0, scheme.size())) != AsciiLower(scheme)) {
    return std::nullopt;
  }
  std::string_view credentials = TrimView(authorization.substr(scheme.size() + 1));
  if (credentials.empty()) return std::nullopt;
  return std::string(credentials);
}

std::optional<std::string> BearerTokenOf(std::string_view authorization) {
  return CredentialsOf(authorization, "bearer");
}

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out.push_back(c);
    }
  }
  return out;
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace paintlock::base
