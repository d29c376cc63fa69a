// GET /v1/openapi.json: the OpenAPI 3.1 document of the public and server
// APIs (docs/openapi.json, compiled in by sql/embed.cmake, so the document a
// client reads always describes the binary that answers it). Public, no key;
// cacheable (Cache-Control and a strong ETag of its text).
#pragma once

#include <httplib.h>

#include <map>
#include <string>

namespace paintlock::gateway {

// The compiled-in files of docs/ by their name there ("openapi.json").
const std::map<std::string, std::string>& EmbeddedDocs();

void InstallOpenApiRoutes(httplib::Server& server);

}  // namespace paintlock::gateway
