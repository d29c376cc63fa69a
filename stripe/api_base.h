// What HttpsClientOptions must hold before a client is made: the shape of
// api_base (https, or http to a loopback host only), a CA bundle that loads,
// and visible-ASCII keys. Pure functions; no network I/O.
#pragma once

#include <string>

namespace paintlock::stripe {

// True when every character of `s` is printable ASCII other than space.
bool IsVisibleAscii(const std::string& s);

// True when `host` is an IPv4 or IPv6 address literal (no brackets).
bool IsIpLiteral(const std::string& host);

// Splits api_base (scheme://host[:port] with at most a trailing "/") into its
// parts; host is lower-cased, without brackets. Returns false with *error
// naming what is wrong, including plain http to a non-loopback host.
bool ParseApiBase(const std::string& url, bool* tls, std::string* host, int* port,
                  std::string* error);

// True when `path` is a readable PEM file with at least one certificate;
// otherwise false with *why.
bool LoadsAsCaBundle(const std::string& path, std::string* why);

}  // namespace paintlock::stripe
