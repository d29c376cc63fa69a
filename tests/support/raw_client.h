// RawClient: one raw loopback TCP connection, for tests that must send
// exactly the bytes they mean (partial requests, trickles, floods) and read
// the answer as it arrived: tests/edge_test.cc (a gateway process) and
// tests/edge_linger_test.cc (an EdgeServer in the test's own process).
#pragma once

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "base/loopback.h"

namespace paintlock::testing {

// One raw TCP connection to a server on loopback.
class RawClient {
 public:
  explicit RawClient(int port, const std::string& source_ip = "127.0.0.1") {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    inet_pton(AF_INET, source_ip.c_str(), &src.sin_addr);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&src), sizeof src) == 0);
    const sockaddr_in addr = base::LoopbackAddress(port);
    connected_ = connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawClient() { Close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  bool connected() const { return connected_; }
  int fd() const { return fd_; }

  // False when the connection refused the bytes (closed or reset).
  bool Send(const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads until one whole response (head + Content-Length body, or the head
  // alone when `head_only`, leaving what follows for WaitFor) has arrived, the connection ends, or
  // `timeout` passes. Returns the status, 0 when no full head came.
  int ReadResponse(std::chrono::milliseconds timeout, bool head_only = false) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto end = raw_.find("\r\n\r\n");
      if (end != std::string::npos) {
        head_ = raw_.substr(0, end);
        const int status = std::atoi(head_.substr(9, 3).c_str());
        const auto cl = Lower(head_).find("content-length: ");
        const size_t length = cl == std::string::npos ? 0 : std::stoul(head_.substr(cl + 16));
        if (head_only || raw_.size() >= end + 4 + length) {
          body_ = head_only ? "" : raw_.substr(end + 4, length);
          raw_.erase(0, end + 4 + (head_only ? 0 : length));
          return status;
        }
      }
      if (ReadMore(deadline) != Read::kBytes) return 0;
    }
  }

  // Reads until `needle` has arrived (anywhere after the last response read).
  bool WaitFor(const std::string& needle, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (raw_.find(needle) == std::string::npos) {
      if (ReadMore(deadline) != Read::kBytes) return false;
    }
    return true;
  }

  // True when the server closes the connection (EOF) within `timeout`.
  bool WaitClosed(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const Read r = ReadMore(deadline);
      if (r != Read::kBytes) return r == Read::kEnd;
    }
  }

  const std::string& head() const { return head_; }
  const std::string& body() const { return body_; }
  nlohmann::json Json() const { return nlohmann::json::parse(body_, nullptr, false); }

  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  enum class Read { kBytes, kEnd, kTimeout };
  // Appends what arrives before `deadline` to raw_.
  Read ReadMore(std::chrono::steady_clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Read::kTimeout;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return Read::kTimeout;
    char buf[65536];
    const ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return Read::kEnd;
    raw_.append(buf, static_cast<size_t>(n));
    return Read::kBytes;
  }
  static std::string Lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  }
  int fd_ = -1;
  bool connected_ = false;
  std::string raw_, head_, body_;
};

}  // namespace paintlock::testing
