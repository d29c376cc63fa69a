// The edge's HTTP/1.1 request framer: where one request ends, decided before
// any handler or httplib parser sees a byte (RFC 9112 §2, §6, §7).
//
// Pure: no I/O, no clock, no allocation beyond the request it is building.
// The reactor feeds it whatever the socket gave; it consumes bytes from the
// front of the buffer and stops at the end of one request, so pipelined bytes
// stay in the buffer for the next request.
//
// Invariants:
//   * the header section (request line, headers, and the chunked trailer
//     section) never exceeds `max_header_bytes`: beyond it, 431, and nothing
//     more of it is kept;
//   * a body never exceeds `max_body_bytes`, however it is framed: a
//     Content-Length above the limit is refused from the header alone (413)
//     and a chunked body is refused at the chunk that would cross it (413),
//     so at most max_body_bytes of body is ever held;
//   * a request with neither Content-Length nor Transfer-Encoding has an
//     empty body and is complete when its header section is (§6.3);
//   * ambiguous framing (Content-Length with Transfer-Encoding, differing
//     Content-Lengths, a coding other than chunked, a bad chunk line) is a
//     400, never a guess;
//   * the normalised request handed on has exactly one framing: a
//     Content-Length (0 for a bodiless POST/PUT/PATCH/DELETE), no
//     Transfer-Encoding, no Expect (the edge answers 100-continue itself).
// A framer that returned kError stays in error until Reset(); the caller
// closes the connection after answering the error.
//
// Not thread-safe: one framer per connection, used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace paintlock::gateway::edge {

// The longest chunk-size line of a chunked body (size, extensions, CRLF).
constexpr std::size_t kMaxChunkLineBytes = 1024;

struct FramerLimits {
  std::size_t max_header_bytes = 16 * 1024;
  std::size_t max_body_bytes = 64 * 1024;
};

// Why a request was refused: the HTTP status and the stable JSON error code.
struct FrameError {
  int status = 400;
  std::string code;
  std::string message;
};

class RequestFramer {
 public:
  enum class Result { kNeedMore, kComplete, kError };

  explicit RequestFramer(FramerLimits limits) : limits_(limits) {}

  // Consumes bytes from the front of `*in` and advances. kComplete: request()
  // holds the whole normalised request and `*in` starts with whatever follows
  // it. kError: error() says why. kNeedMore: everything given was consumed or
  // is kept in `*in` (an incomplete header section stays there).
  Result Feed(std::string* in);

  // Forgets the current request, for the next one on the connection.
  void Reset();

  // True once any byte of the current request has been consumed or seen.
  bool started() const { return started_; }
  // The client sent "Expect: 100-continue" and its body has not fully arrived.
  bool awaiting_body_with_continue() const {
    return expect_continue_ && state_ != State::kHead && state_ != State::kDone;
  }
  // Valid after kComplete: the request line and headers as received except
  // for framing headers, then Content-Length, then the decoded body.
  const std::string& request() const { return request_; }
  const std::string& method() const { return method_; }
  const std::string& target() const { return target_; }  // as sent, still %-encoded
  // The client asked to close after this request (Connection: close, or
  // HTTP/1.0 without keep-alive).
  bool wants_close() const { return wants_close_; }
  const FrameError& error() const { return error_; }

 private:
  enum class State {
    kHead,
    kBody,
    kChunkSize,
    kChunkData,
    kChunkDataEnd,
    kTrailers,
    kDone,
    kError
  };

  Result Fail(int status, const char* code, std::string message);
  Result ParseHead(std::string_view head);
  Result FinishHead();
  Result Complete();

  FramerLimits limits_;
  State state_ = State::kHead;
  bool started_ = false;
  std::size_t head_scanned_ = 0;   // bytes of *in already searched for the head's end
  std::size_t blank_bytes_ = 0;    // CR and LF bytes skipped before the request line
  std::size_t trailer_bytes_ = 0;  // header-section bytes used by chunk lines and trailers
  std::uint64_t remaining_ = 0;    // body bytes still owed by Content-Length or the chunk
  bool chunked_ = false;
  bool expect_continue_ = false;
  bool wants_close_ = false;
  bool expects_body_method_ = false;
  std::string method_, target_;
  std::string head_out_;  // normalised request line + headers, without the final CRLF
  std::string body_;
  std::string request_;
  FrameError error_;
};

}  // namespace paintlock::gateway::edge
