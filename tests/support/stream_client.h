// SseEvent and StreamClient: the availability stream as the integration
// tests (storefront, line) read it.
#pragma once

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "base/loopback.h"

namespace paintlock::testing {

using nlohmann::json;
using std::chrono::milliseconds;

struct SseEvent {
  std::string id;
  std::string event;
  std::string data;
  bool comment = false;  // a ":" line (heartbeat)
  json Json() const { return json::parse(data, nullptr, false); }
  bool Is(const std::string& painting, const std::string& state) const {
    if (event != "painting") return false;
    json j = Json();
    return j.is_object() && j.value("id", "") == painting && j.value("state", "") == state;
  }
};

// A raw HTTP/1.1 client for GET /v1/paintings/stream: it reads the chunked body
// as it arrives, so a test can wait for one event, and it can vanish without a
// word (Drop), as a closed browser tab does.
class StreamClient {
 public:
  // `query`: e.g. "?line_token=plt_…" (the stream of a line member).
  explicit StreamClient(int port, const std::string& extra_headers = "",
                        const std::string& query = "") {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    const sockaddr_in addr = base::LoopbackAddress(port);
    REQUIRE(connect(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    const std::string request = "GET /v1/paintings/stream" + query +
                                " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                "Accept: text/event-stream\r\n" +
                                extra_headers + "\r\n";
    REQUIRE(send(fd_, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size()));
  }
  ~StreamClient() { Drop(); }
  StreamClient(const StreamClient&) = delete;
  StreamClient& operator=(const StreamClient&) = delete;

  // The response status (0: none within 10 s).
  int Status() {
    const auto deadline = std::chrono::steady_clock::now() + milliseconds(10000);
    while (status_ == 0 && Pump(deadline)) {
    }
    return status_;
  }
  const std::string& head() const { return head_; }
  // What arrived of the body so far (a stream's events, as text).
  const std::string& body() const { return body_; }
  // The whole body of an answer that is not a stream (its Content-Length),
  // waiting up to 10 s for the rest: the head may arrive alone.
  const std::string& WholeBody() {
    const auto deadline = std::chrono::steady_clock::now() + milliseconds(10000);
    Status();
    const auto at = head_.find("Content-Length: ");
    const size_t want =
        at == std::string::npos ? std::string::npos : std::stoul(head_.substr(at + 16));
    while (body_.size() < want && Pump(deadline)) {
    }
    return body_;
  }

  // The first event after the one the previous WaitFor returned that
  // `matches`, received by now or within `timeout`: successive calls see
  // events in the order the gateway sent them.
  std::optional<SseEvent> WaitFor(const std::function<bool(const SseEvent&)>& matches,
                                  milliseconds timeout = milliseconds(15000)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (size_t i = from_;;) {
      for (; i < events_.size(); ++i) {
        if (matches(events_[i])) {
          from_ = i + 1;
          return events_[i];
        }
      }
      if (!Pump(deadline)) return std::nullopt;
    }
  }
  // The first `n` painting events (a new stream's snapshot), by painting id.
  std::map<std::string, std::string> WaitForSnapshot(size_t n) {
    std::map<std::string, std::string> out;
    WaitFor([&](const SseEvent& e) {
      if (e.event == "painting") out[e.Json()["id"]] = e.Json()["state"];
      return out.size() == n;
    });
    return out;
  }
  std::optional<SseEvent> WaitFor(const std::string& painting, const std::string& state,
                                  milliseconds timeout = milliseconds(15000)) {
    return WaitFor([&](const SseEvent& e) { return e.Is(painting, state); }, timeout);
  }
  // Every event received so far.
  const std::vector<SseEvent>& events() const { return events_; }

  // Closes with a reset and without reading what is pending.
  void Drop() {
    if (fd_ < 0) return;
    linger hard{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    close(fd_);
    fd_ = -1;
  }

 private:
  // Reads what arrives before `deadline`; false on timeout or end of stream.
  bool Pump(std::chrono::steady_clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || fd_ < 0) return false;
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) return false;
    char buf[16384];
    const ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) return false;
    raw_.append(buf, static_cast<size_t>(n));
    Parse();
    return true;
  }

  void Parse() {
    if (status_ == 0) {
      const auto end = raw_.find("\r\n\r\n");
      if (end == std::string::npos) return;
      head_ = raw_.substr(0, end);
      status_ = std::stoi(head_.substr(9, 3));
      raw_.erase(0, end + 4);
      chunked_ = head_.find("Transfer-Encoding: chunked") != std::string::npos;
    }
    if (!chunked_) {
      body_ += raw_;
      raw_.clear();
      return;
    }
    for (;;) {  // de-chunk whatever is complete
      const auto line_end = raw_.find("\r\n");
      if (line_end == std::string::npos) break;
      const size_t size = std::stoul(raw_.substr(0, line_end), nullptr, 16);
      if (raw_.size() < line_end + 2 + size + 2) break;
      body_ += raw_.substr(line_end + 2, size);
      raw_.erase(0, line_end + 2 + size + 2);
      if (size == 0) break;
    }
    for (size_t end; (end = body_.find("\n\n", parsed_)) != std::string::npos; parsed_ = end + 2) {
      SseEvent e;
      std::istringstream block(body_.substr(parsed_, end - parsed_));
      bool any = false;
      for (std::string line; std::getline(block, line);) {
        if (line.rfind(":", 0) == 0) e.comment = true;
        if (line.rfind("id: ", 0) == 0) e.id = line.substr(4);
        if (line.rfind("event: ", 0) == 0) e.event = line.substr(7);
        if (line.rfind("data: ", 0) == 0) e.data = line.substr(6);
        any = any || line.rfind("retry:", 0) != 0;
      }
      if (any) events_.push_back(e);
    }
  }

  int fd_ = -1;
  int status_ = 0;
  bool chunked_ = false;
  std::string head_, raw_, body_;
  size_t parsed_ = 0;
  std::vector<SseEvent> events_;
  size_t from_ = 0;
};

}  // namespace paintlock::testing
