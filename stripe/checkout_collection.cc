#include "stripe/checkout_collection.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace paintlock::stripe {

bool IsShippingCountry(const std::string& code) {
  // Stripe's documented exclusions from allowed_countries.
  static const std::set<std::string> kRefused = {"AS", "CX", "CC", "CU", "HM", "IR", "KP", "MH",
                                                 "FM", "NF", "MP", "PW", "SY", "UM", "VI"};
  return code.size() == 2 && std::isupper(static_cast<unsigned char>(code[0])) &&
         std::isupper(static_cast<unsigned char>(code[1])) && kRefused.count(code) == 0;
}

bool IsCheckoutLocale(const std::string& locale) {
  static const std::set<std::string> kLocales = {
      "auto", "bg",  "cs", "da",    "de", "el", "en",    "en-GB", "es", "es-419", "et",
      "fi",   "fil", "fr", "fr-CA", "hr", "hu", "id",    "it",    "ja", "ko",     "lt",
      "lv",   "ms",  "mt", "nb",    "nl", "pl", "pt",    "pt-BR", "ro", "ru",     "sk",
      "sl",   "sv",  "th", "tr",    "vi", "zh", "zh-HK", "zh-TW"};
  return kLocales.count(locale) == 1;
}

bool IsShippingRateId(const std::string& id) {
  if (id.size() < 5 || id.size() > 254 || id.rfind("shr_", 0) != 0) return false;
  return std::all_of(id.begin() + 4, id.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

}  // namespace paintlock::stripe
