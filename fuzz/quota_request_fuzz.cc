// The quota consume request (gateway/quota_routes.h): ParseConsumeBody and
// LicenseKeyOf on a request built from "content-type\0authorization\0
// x-license-key\0body" (an empty field: the header is absent).
// Properties: a named subject passes locks::SubjectNameProblem; a licence key
// is at most kMaxLicenseHeaderBytes; a refusal is a 4xx with a code and a
// body the gateway can serialise (valid UTF-8 throughout).
#include <httplib.h>

#include <string>

#include "fuzz/fuzz_support.h"
#include "gateway/quota_routes.h"
#include "locks/quotas.h"

using namespace paintlock;

namespace {

void CheckRefusal(const gateway::HttpError& e) {
  FUZZ_CHECK(e.status >= 400 && e.status < 500);
  FUZZ_CHECK(!e.code.empty() && !e.message.empty());
  FUZZ_CHECK(fuzz::Describable(e.message));
  bool extra_ok = true;
  try {
    (void)e.extra.dump();
  } catch (const nlohmann::json::exception&) {
    extra_ok = false;
  }
  FUZZ_CHECK(extra_ok);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto fields = fuzz::Fields(fuzz::AsText(data, size), 4);
  httplib::Request req;
  if (!fields[0].empty()) req.headers.emplace("Content-Type", fields[0]);
  if (!fields[1].empty()) req.headers.emplace("Authorization", fields[1]);
  if (!fields[2].empty()) req.headers.emplace("X-License-Key", fields[2]);
  req.body = fields[3];

  gateway::HttpError error;
  std::optional<std::string> subject;
  if (gateway::ParseConsumeBody(req, &subject, &error)) {
    if (subject) FUZZ_CHECK(locks::SubjectNameProblem(*subject).empty());
  } else {
    CheckRefusal(error);
  }

  gateway::HttpError key_error;
  std::optional<std::string> key;
  if (gateway::LicenseKeyOf(req, &key, &key_error)) {
    if (key) FUZZ_CHECK(key->size() <= gateway::kMaxLicenseHeaderBytes);
  } else {
    CheckRefusal(key_error);
  }
  return 0;
}
