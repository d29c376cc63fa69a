#include "stripe/checkout_collection.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace paintlock::stripe {

bool IsShippingCountry(const std::string& code) {
  // Stripe's enum for shipping_address_collection[allowed_countries] (the
  // `stripe` npm library v23, which pins the API version paintlock sends),
  // space-separated with a space at both ends.
  static const std::string kAllowed =
      " AC AD AE AF AG AI AL AM AO AQ AR AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN "
      "BO BQ BR BS BT BV BW BY BZ CA CD CF CG CH CI CK CL CM CN CO CR CV CW CY CZ DE DJ DK "
      "DM DO DZ EC EE EG EH ER ES ET FI FJ FK FO FR GA GB GD GE GF GG GH GI GL GM GN GP GQ "
      "GR GS GT GU GW GY HK HN HR HT HU ID IE IL IM IN IO IQ IS IT JE JM JO JP KE KG KH KI "
      "KM KN KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MK ML MM MN MO "
      "MQ MR MS MT MU MV MW MX MY MZ NA NC NE NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK "
      "PL PM PN PR PS PT PY QA RE RO RS RU RW SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR "
      "SS ST SV SX SZ TA TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG US UY UZ VA "
      "VC VE VG VN VU WF WS XK YE YT ZA ZM ZW ZZ ";
  return code.size() == 2 &&
         std::all_of(code.begin(), code.end(), [](unsigned char c) { return std::isupper(c); }) &&
         kAllowed.find(" " + code + " ") != std::string::npos;
}

bool IsCheckoutLocale(const std::string& locale) {
  // Stripe's enum for `locale`, as the `stripe` npm library v23 lists it.
  static const std::set<std::string> kLocales = {
      "auto", "bg",  "cs", "da",    "de",    "el", "en", "en-GB", "es",    "es-419", "et",
      "fi",   "fil", "fr", "fr-CA", "hi-IN", "hr", "hu", "id",    "it",    "ja",     "ko",
      "lt",   "lv",  "ms", "mt",    "nb",    "nl", "pl", "pt",    "pt-BR", "ro",     "ru",
      "sk",   "sl",  "sv", "th",    "tr",    "vi", "zh", "zh-HK", "zh-TW"};
  return kLocales.count(locale) == 1;
}

bool IsShippingRateId(const std::string& id) {
  if (id.size() < 5 || id.size() > 254 || id.rfind("shr_", 0) != 0) return false;
  return std::all_of(id.begin() + 4, id.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

}  // namespace paintlock::stripe
