#include "base/form.h"

#include <cstdint>

namespace paintlock::base {

namespace {

constexpr char kHex[] = "0123456789ABCDEF";

bool IsUnreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

void AppendEncoded(std::string_view raw, bool keep_brackets, std::string* out) {
  for (char ch : raw) {
    auto c = static_cast<unsigned char>(ch);
    if (IsUnreserved(c) || (keep_brackets && (c == '[' || c == ']'))) {
      out->push_back(ch);
    } else {
      out->push_back('%');
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 0x0F]);
    }
  }
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

std::string FormKey(std::string_view root, std::initializer_list<std::string_view> path) {
  std::string key(root);
  for (std::string_view segment : path) {
    key.push_back('[');
    key.append(segment);
    key.push_back(']');
  }
  return key;
}

std::string PercentEncode(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  AppendEncoded(raw, /*keep_brackets=*/false, &out);
  return out;
}

std::string EncodeForm(const FormFields& fields) {
  std::string body;
  for (const auto& [key, value] : fields) {
    if (!body.empty()) body.push_back('&');
    AppendEncoded(key, /*keep_brackets=*/true, &body);
    body.push_back('=');
    AppendEncoded(value, /*keep_brackets=*/false, &body);
  }
  return body;
}

bool PercentDecode(std::string_view encoded, std::string* out) {
  out->clear();
  out->reserve(encoded.size());
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    char c = encoded[i];
    if (c == '+') {
      out->push_back(' ');
    } else if (c == '%') {
      if (encoded.size() - i < 3) return false;
      int hi = HexValue(encoded[i + 1]);
      int lo = HexValue(encoded[i + 2]);
      if (hi < 0 || lo < 0) return false;
      out->push_back(static_cast<char>((hi << 4) | lo));
      i += 2;
    } else {
      out->push_back(c);
    }
  }
  return true;
}

bool DecodeForm(std::string_view body, FormFields* out) {
  out->clear();
  while (!body.empty()) {
    std::size_t amp = body.find('&');
    std::string_view pair = body.substr(0, amp);
    body = amp == std::string_view::npos ? std::string_view() : body.substr(amp + 1);
    if (pair.empty()) continue;
    std::size_t eq = pair.find('=');
    std::string key;
    std::string value;
    if (!PercentDecode(pair.substr(0, eq), &key)) return false;
    if (eq != std::string_view::npos && !PercentDecode(pair.substr(eq + 1), &value)) return false;
    out->emplace_back(std::move(key), std::move(value));
  }
  return true;
}

}  // namespace paintlock::base
