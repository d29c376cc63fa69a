#include "stripe/api_base.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

#include "base/text.h"

namespace paintlock::stripe {

namespace {

bool IsIpv4(const std::string& host, in_addr* addr) {
  return inet_pton(AF_INET, host.c_str(), addr) == 1;
}

bool IsIpv6(const std::string& host, in6_addr* addr) {
  return inet_pton(AF_INET6, host.c_str(), addr) == 1;
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (IsIpv4(host, &v4)) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (IsIpv6(host, &v6)) return std::memcmp(&v6, &in6addr_loopback, sizeof v6) == 0;
  return false;
}

bool IsHostName(const std::string& host) {
  return !host.empty() && host.size() <= 253 && host.front() != '.' && host.front() != '-' &&
         std::all_of(host.begin(), host.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
         });
}

}  // namespace

bool IsVisibleAscii(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c > 0x20 && c < 0x7F; });
}

bool IsIpLiteral(const std::string& host) {
  in_addr v4{};
  in6_addr v6{};
  return IsIpv4(host, &v4) || IsIpv6(host, &v6);
}

bool ParseApiBase(const std::string& url, bool* tls, std::string* host, int* port,
                  std::string* error) {
  const std::string what = "api_base \"" + url + "\"";
  std::size_t sep = url.find("://");
  if (sep == std::string::npos) {
    *error = what + " must start with https:// (or http:// for a loopback host)";
    return false;
  }
  const std::string scheme = base::AsciiLower(url.substr(0, sep));
  if (scheme != "https" && scheme != "http") {
    *error = what + ": scheme must be https (or http for a loopback host), not \"" + scheme + "\"";
    return false;
  }
  *tls = scheme == "https";
  std::string rest = url.substr(sep + 3);
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find_first_of("/?#@ \t\r\n\\") != std::string::npos) {
    *error = what + " must be scheme://host[:port] with no path, query, fragment or user info";
    return false;
  }
  std::string host_text = rest;
  std::optional<std::string> port_text;  // set when a ':' follows the host
  if (!rest.empty() && rest.front() == '[') {
    std::size_t close = rest.find(']');
    if (close == std::string::npos) {
      *error = what + ": unterminated IPv6 literal";
      return false;
    }
    host_text = rest.substr(1, close - 1);
    std::string after = rest.substr(close + 1);
    if (!after.empty() && after.front() != ':') {
      *error = what + ": unexpected text after the IPv6 literal";
      return false;
    }
    if (!after.empty()) port_text = after.substr(1);
    in6_addr v6{};
    if (!IsIpv6(host_text, &v6)) {
      *error = what + ": bad IPv6 literal";
      return false;
    }
  } else {
    std::size_t colon = rest.find(':');
    if (colon != std::string::npos) {
      if (rest.find(':', colon + 1) != std::string::npos) {
        *error = what + ": an IPv6 host must be written in brackets, e.g. http://[::1]:12111";
        return false;
      }
      host_text = rest.substr(0, colon);
      port_text = rest.substr(colon + 1);
    }
    if (!IsHostName(host_text)) {
      *error = what + ": missing or malformed host";
      return false;
    }
  }
  *host = base::AsciiLower(host_text);
  *port = *tls ? 443 : 80;
  if (port_text) {
    bool digits = !port_text->empty() && port_text->size() <= 5 &&
                  std::all_of(port_text->begin(), port_text->end(),
                              [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    int value = digits ? std::stoi(*port_text) : 0;
    if (value < 1 || value > 65535) {
      *error = what + ": port must be a number from 1 to 65535";
      return false;
    }
    *port = value;
  }
  if (!*tls && !IsLoopbackHost(*host)) {
    *error = what + ": plain http is allowed only to a loopback host (127.0.0.0/8, localhost, " +
             "[::1]); use https for \"" + *host + "\"";
    return false;
  }
  return true;
}

bool LoadsAsCaBundle(const std::string& path, std::string* why) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    *why = std::strerror(errno);
    return false;
  }
  std::fclose(f);
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    *why = "OpenSSL could not create a context";
    return false;
  }
  bool ok = SSL_CTX_load_verify_locations(ctx, path.c_str(), nullptr) == 1;
  SSL_CTX_free(ctx);
  ERR_clear_error();
  if (!ok) *why = "no PEM certificate could be read from it";
  return ok;
}

}  // namespace paintlock::stripe
