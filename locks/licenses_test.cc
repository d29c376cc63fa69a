#include "locks/licenses.h"

#include <doctest/doctest.h>

#include <map>

using namespace paintlock::locks;
using std::chrono::seconds;

namespace {

const std::string kSecret = "a-licence-secret-of-32-characters!";

// A lookup that answers from a map and counts how often it is asked.
struct FakeLicenses {
  std::map<std::string, LicenseView> by_digest;
  int lookups = 0;
  bool down = false;
  DbResult<std::optional<LicenseView>> operator()(const std::string& digest) {
    ++lookups;
    if (down) return DbFailure{DbFailureKind::kUnavailable, "down"};
    auto it = by_digest.find(digest);
    if (it == by_digest.end()) return std::optional<LicenseView>{};
    return std::optional<LicenseView>{it->second};
  }
};

struct FakeClock {
  std::chrono::steady_clock::time_point now{};
  void Advance(std::chrono::milliseconds d) { now += d; }
};

}  // namespace

TEST_CASE(
    "quota: a licence key is derived from the secret and the subscription, and only its hash is "
    "kept") {
  const std::string key = DeriveLicenseKey(kSecret, "sub_123");
  CHECK(key.rfind("plk_", 0) == 0);
  CHECK(key.size() == 4 + 64);
  CHECK(LooksLikeLicenseKey(key));
  CHECK(key == DeriveLicenseKey(kSecret, "sub_123"));  // every gateway derives the same key
  CHECK(key != DeriveLicenseKey(kSecret, "sub_124"));
  CHECK(key != DeriveLicenseKey(kSecret + "x", "sub_123"));
  const std::string digest = LicenseKeyDigest(key);
  CHECK(digest.size() == 64);
  CHECK(digest.find(key.substr(4, 16)) == std::string::npos);
  // SHA-256("abc"), the FIPS 180-2 test vector.
  CHECK(LicenseKeyDigest("abc") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("quota: only the shape of a derived key is looked up") {
  const std::string key = DeriveLicenseKey(kSecret, "sub_1");
  CHECK(!LooksLikeLicenseKey(""));
  CHECK(!LooksLikeLicenseKey(key.substr(0, key.size() - 1)));
  CHECK(!LooksLikeLicenseKey(key + "0"));
  std::string upper = key;
  upper[10] = 'A';
  CHECK(!LooksLikeLicenseKey(upper));
  CHECK(!LooksLikeLicenseKey("xyz_" + key.substr(4)));

  FakeLicenses db;
  LicenseValidator validator(std::ref(db), seconds(45));
  CHECK(std::holds_alternative<LicenseUnknown>(validator.Check("plk_forged")));
  CHECK(db.lookups == 0);
}

TEST_CASE("quota: licence checks are served from the cache for at most max_age") {
  FakeLicenses db;
  FakeClock clock;
  const std::string key = DeriveLicenseKey(kSecret, "sub_1");
  db.by_digest[LicenseKeyDigest(key)] = {"sub_1", "cus_1", "active", "2030-01-01T00:00:00Z", true};
  LicenseValidator validator(std::ref(db), seconds(45), [&] { return clock.now; });

  auto first = validator.Check(key);
  REQUIRE(std::holds_alternative<LicenseValid>(first));
  CHECK(std::get<LicenseValid>(first).license.subscription_id == "sub_1");
  CHECK(db.lookups == 1);

  // Cancelled in the database: the cache still says valid, but never for
  // longer than max_age.
  db.by_digest[LicenseKeyDigest(key)].status = "canceled";
  db.by_digest[LicenseKeyDigest(key)].active = false;
  clock.Advance(std::chrono::milliseconds(44999));
  CHECK(std::holds_alternative<LicenseValid>(validator.Check(key)));
  CHECK(db.lookups == 1);
  clock.Advance(std::chrono::milliseconds(1));
  auto later = validator.Check(key);
  REQUIRE(std::holds_alternative<LicenseInactive>(later));
  CHECK(std::get<LicenseInactive>(later).license.status == "canceled");
  CHECK(db.lookups == 2);
}

TEST_CASE("quota: unknown keys are cached, database failures are not") {
  FakeLicenses db;
  FakeClock clock;
  LicenseValidator validator(std::ref(db), seconds(10), [&] { return clock.now; });
  const std::string key = DeriveLicenseKey(kSecret, "sub_9");
  CHECK(std::holds_alternative<LicenseUnknown>(validator.Check(key)));
  CHECK(std::holds_alternative<LicenseUnknown>(validator.Check(key)));
  CHECK(db.lookups == 1);

  const std::string other = DeriveLicenseKey(kSecret, "sub_10");
  db.down = true;
  CHECK(std::holds_alternative<DbFailure>(validator.Check(other)));
  db.down = false;
  CHECK(std::holds_alternative<LicenseUnknown>(validator.Check(other)));
  CHECK(db.lookups == 3);
}

TEST_CASE("quota: max_age 0 asks the database every time, and a full cache starts over") {
  FakeLicenses db;
  const std::string key = DeriveLicenseKey(kSecret, "sub_1");
  LicenseValidator uncached(std::ref(db), seconds(0));
  uncached.Check(key);
  uncached.Check(key);
  CHECK(db.lookups == 2);

  FakeLicenses db2;
  FakeClock clock;
  LicenseValidator small(
      std::ref(db2), seconds(60), [&] { return clock.now; }, 2);
  small.Check(DeriveLicenseKey(kSecret, "sub_a"));
  small.Check(DeriveLicenseKey(kSecret, "sub_b"));
  small.Check(DeriveLicenseKey(kSecret, "sub_c"));  // full: starts over with sub_c alone
  CHECK(db2.lookups == 3);
  small.Check(DeriveLicenseKey(kSecret, "sub_c"));
  CHECK(db2.lookups == 3);
  small.Check(DeriveLicenseKey(kSecret, "sub_a"));
  CHECK(db2.lookups == 4);
}
