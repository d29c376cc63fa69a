#include "gateway/openapi_routes.h"

#include <openssl/evp.h>

#include "base/ids.h"

namespace paintlock::gateway {

namespace {

const std::string& Document() {
  static const std::string& document = EmbeddedDocs().at("openapi.json");
  return document;
}

// A strong validator: the first 128 bits of the document's SHA-256.
std::string DocumentEtag() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  EVP_Digest(Document().data(), Document().size(), digest, &size, EVP_sha256(), nullptr);
  return "\"" + base::Hex(digest, 16) + "\"";
}

void ServeDocument(const httplib::Request& req, httplib::Response& res) {
  static const std::string etag = DocumentEtag();
  // The document changes only with the binary: caches may keep it briefly.
  res.headers.erase("Cache-Control");
  res.set_header("Cache-Control", "public, max-age=300");
  res.set_header("ETag", etag);
  if (req.get_header_value("If-None-Match") == etag) {
    res.status = 304;
    return;
  }
  res.set_content(Document(), "application/json");
}

}  // namespace

void InstallOpenApiRoutes(httplib::Server& server) {
  server.Get("/v1/openapi.json", ServeDocument);
}

}  // namespace paintlock::gateway
