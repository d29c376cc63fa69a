#include "gateway/edge/static_files.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <memory>

#include "gateway/http_errors.h"

namespace paintlock::gateway::edge {

namespace {

bool HasDotSegment(const std::string& path) {
  std::size_t start = 0;
  while (start <= path.size()) {
    auto slash = path.find('/', start);
    if (slash == std::string::npos) slash = path.size();
    if (slash > start && path[start] == '.') return true;
    start = slash + 1;
  }
  return false;
}

bool HasEncodedNul(const std::string& target) {
  for (std::size_t i = 0; i + 2 < target.size(); ++i) {
    if (target[i] == '%' && target[i + 1] == '0' && target[i + 2] == '0') return true;
  }
  return false;
}

std::string ContentType(const std::string& path) {
  const auto dot = path.rfind('.');
  std::string ext = dot == std::string::npos ? "" : path.substr(dot + 1);
  for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (ext == "html" || ext == "htm") return "text/html; charset=utf-8";
  if (ext == "css") return "text/css; charset=utf-8";
  if (ext == "js" || ext == "mjs") return "text/javascript; charset=utf-8";
  if (ext == "json") return "application/json";
  if (ext == "svg") return "image/svg+xml";
  if (ext == "png") return "image/png";
  if (ext == "jpg" || ext == "jpeg") return "image/jpeg";
  if (ext == "gif") return "image/gif";
  if (ext == "webp") return "image/webp";
  if (ext == "ico") return "image/x-icon";
  if (ext == "txt") return "text/plain; charset=utf-8";
  if (ext == "woff2") return "font/woff2";
  return "application/octet-stream";
}

std::optional<std::string> RealPath(const std::string& path) {
  std::unique_ptr<char, decltype(&free)> real(realpath(path.c_str(), nullptr), &free);
  if (!real) return std::nullopt;
  return std::string(real.get());
}

}  // namespace

std::optional<std::string> ResolveStaticFile(const std::string& real_dir,
                                             const std::string& raw_target,
                                             const std::string& path) {
  if (path.find('\0') != std::string::npos || HasEncodedNul(raw_target)) return std::nullopt;
  if (path.empty() || path[0] != '/' || HasDotSegment(path)) return std::nullopt;
  std::string wanted = real_dir + path;
  if (wanted.back() == '/') wanted += "index.html";
  auto real = RealPath(wanted);
  if (!real || real->compare(0, real_dir.size() + 1, real_dir + "/") != 0) return std::nullopt;
  if (HasDotSegment(real->substr(real_dir.size()))) return std::nullopt;
  struct stat st {};
  if (stat(real->c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
      static_cast<std::size_t>(st.st_size) > kMaxStaticFileBytes) {
    return std::nullopt;
  }
  return real;
}

bool InstallStaticFiles(httplib::Server& server, const std::string& mount, const std::string& dir) {
  auto real_dir = RealPath(dir);
  if (!real_dir) return false;
  server.Get(mount + "(/.*)?", [mount, root = *real_dir](const httplib::Request& req,
                                                         httplib::Response& res) {
    const std::string rel = req.path.substr(mount.size());
    if (rel.empty()) {
      res.set_redirect(mount + "/", 303);
      return;
    }
    auto not_found = [&] {
      WriteError(res, {404, "not_found", "There is no such file.", nlohmann::json::object(), 0});
    };
    auto file = ResolveStaticFile(root, req.target, rel);
    if (!file) return not_found();
    const int fd = open(file->c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return not_found();
    std::string body;
    char buf[65536];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0 && body.size() <= kMaxStaticFileBytes;) {
      body.append(buf, static_cast<std::size_t>(n));
    }
    close(fd);
    if (body.size() > kMaxStaticFileBytes) return not_found();
    res.set_content(body, ContentType(*file));
  });
  return true;
}

}  // namespace paintlock::gateway::edge
