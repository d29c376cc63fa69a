// The storefront's static files (PAINTLOCK_STOREFRONT_DIR at /shop/), served
// without httplib's mount point, which follows symlinks anywhere and serves
// dotfiles.
//
// Contract: a file is served only when
//   * the request path has no NUL byte and no %00 in its raw target;
//   * no segment of the path, before or after resolving symlinks, starts
//     with "." (no dotfiles, no dot-directories, no "." or "..");
//   * its real path (symlinks resolved) lies inside the real path of the
//     directory, and it is a regular file of at most kMaxStaticFileBytes.
// Anything else is a 404 with the JSON error not_found, indistinguishable
// from a missing file. "/shop/" serves index.html.
// Thread-safe: the handler only reads the file system.
#pragma once

#include <httplib.h>

#include <cstddef>
#include <optional>
#include <string>

namespace paintlock::gateway::edge {

constexpr std::size_t kMaxStaticFileBytes = 16 * 1024 * 1024;

// The real file `raw_target` (the request target as sent, still %-encoded)
// and `path` (httplib's decoded path, relative to the mount: "/x.css") name
// under `real_dir` (a realpath), or nullopt when the contract refuses it.
std::optional<std::string> ResolveStaticFile(const std::string& real_dir,
                                             const std::string& raw_target,
                                             const std::string& path);

// Serves `dir` at `mount` ("/shop") for GET and HEAD. False (and nothing
// installed) when `dir` does not exist.
bool InstallStaticFiles(httplib::Server& server, const std::string& mount, const std::string& dir);

}  // namespace paintlock::gateway::edge
