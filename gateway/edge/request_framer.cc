#include "gateway/edge/request_framer.h"

#include <algorithm>
#include <cctype>

#include "base/text.h"

namespace paintlock::gateway::edge {

namespace {

// RFC 9110 §5.6.2 tchar.
bool IsTokenChar(unsigned char c) {
  if (std::isalnum(c)) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return IsTokenChar(static_cast<unsigned char>(c));
  });
}

// True when the comma-separated list `value` has `token` (case-insensitive).
bool HasToken(std::string_view value, std::string_view token) {
  std::size_t start = 0;
  while (start <= value.size()) {
    auto comma = value.find(',', start);
    if (comma == std::string_view::npos) comma = value.size();
    if (base::EqualsIgnoringCase(base::TrimView(value.substr(start, comma - start)), token)) {
      return true;
    }
    start = comma + 1;
  }
  return false;
}

}  // namespace

RequestFramer::Result RequestFramer::Fail(int status, const char* code, std::string message) {
  state_ = State::kError;
  error_ = {status, code, std::move(message)};
  return Result::kError;
}

void RequestFramer::Reset() {
  state_ = State::kHead;
  started_ = false;
  head_scanned_ = 0;
  blank_bytes_ = 0;
  trailer_bytes_ = 0;
  remaining_ = 0;
  chunked_ = false;
  expect_continue_ = false;
  wants_close_ = false;
  expects_body_method_ = false;
  method_.clear();
  target_.clear();
  head_out_.clear();
  body_.clear();
  request_.clear();
  error_ = {};
}

RequestFramer::Result RequestFramer::Feed(std::string* in) {
  for (;;) {
    switch (state_) {
      case State::kError:
        return Result::kError;
      case State::kDone:
        return Result::kComplete;

      case State::kHead: {
        // RFC 9112 §2.2: empty lines before a request line are ignored, a
        // few: counted across reads, so how they arrive does not matter.
        if (head_scanned_ == 0) {
          std::size_t skip = 0;
          while (skip < in->size() && ((*in)[skip] == '\r' || (*in)[skip] == '\n')) ++skip;
          blank_bytes_ += skip;
          if (blank_bytes_ > 4) return Fail(400, "invalid_request", "The request line is missing.");
          in->erase(0, skip);
        }
        if (in->empty()) return Result::kNeedMore;
        started_ = true;
        const std::size_t from = head_scanned_ >= 3 ? head_scanned_ - 3 : 0;
        const auto end = in->find("\r\n\r\n", from);
        if (end == std::string::npos) {
          if (in->size() > limits_.max_header_bytes) {
            return Fail(431, "headers_too_large",
                        "The request's header section is larger than this gateway accepts.");
          }
          head_scanned_ = in->size();
          return Result::kNeedMore;
        }
        if (end + 4 > limits_.max_header_bytes) {
          return Fail(431, "headers_too_large",
                      "The request's header section is larger than this gateway accepts.");
        }
        // Each line keeps its CRLF; read in place, then consumed.
        if (ParseHead(std::string_view(in->data(), end + 2)) == Result::kError) {
          return Result::kError;
        }
        in->erase(0, end + 4);
        if (FinishHead() == Result::kError) return Result::kError;
        break;
      }

      case State::kBody:
      case State::kChunkData: {
        const auto take = static_cast<std::size_t>(
            std::min<std::uint64_t>(remaining_, static_cast<std::uint64_t>(in->size())));
        body_.append(*in, 0, take);
        in->erase(0, take);
        remaining_ -= take;
        if (remaining_ > 0) return Result::kNeedMore;
        if (state_ == State::kBody) return Complete();
        state_ = State::kChunkDataEnd;
        break;
      }

      case State::kChunkDataEnd:
        if (in->size() < 2) return Result::kNeedMore;
        if ((*in)[0] != '\r' || (*in)[1] != '\n') {
          return Fail(400, "invalid_request", "A chunk of the body does not end with CRLF.");
        }
        in->erase(0, 2);
        state_ = State::kChunkSize;
        break;

      case State::kChunkSize: {
        const auto eol = in->find("\r\n");
        if (eol == std::string::npos) {
          if (in->size() > kMaxChunkLineBytes) {
            return Fail(400, "invalid_request", "A chunk-size line of the body is too long.");
          }
          return Result::kNeedMore;
        }
        if (eol + 2 > kMaxChunkLineBytes) {
          return Fail(400, "invalid_request", "A chunk-size line of the body is too long.");
        }
        std::string line = in->substr(0, eol);
        in->erase(0, eol + 2);
        const auto semicolon = line.find(';');
        std::string digits = line.substr(0, semicolon);
        while (!digits.empty() && (digits.back() == ' ' || digits.back() == '\t'))
          digits.pop_back();
        if (digits.empty() || digits.size() > 15 ||
            !std::all_of(digits.begin(), digits.end(),
                         [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); })) {
          return Fail(400, "invalid_request", "A chunk size of the body is not a hex number.");
        }
        const std::uint64_t size = std::stoull(digits, nullptr, 16);
        if (size > limits_.max_body_bytes - body_.size()) {
          return Fail(413, "request_too_large", "The request body is too large.");
        }
        if (size == 0) {
          state_ = State::kTrailers;
        } else {
          remaining_ = size;
          state_ = State::kChunkData;
        }
        break;
      }

      case State::kTrailers: {
        const auto eol = in->find("\r\n");
        if (eol == std::string::npos) {
          if (trailer_bytes_ + in->size() > limits_.max_header_bytes) {
            return Fail(431, "headers_too_large", "The request's trailer section is too large.");
          }
          return Result::kNeedMore;
        }
        trailer_bytes_ += eol + 2;
        if (trailer_bytes_ > limits_.max_header_bytes) {
          return Fail(431, "headers_too_large", "The request's trailer section is too large.");
        }
        in->erase(0, eol + 2);
        if (eol == 0) return Complete();
        // Trailer fields are dropped: nothing here reads them.
        break;
      }
    }
  }
}

RequestFramer::Result RequestFramer::ParseHead(std::string_view head) {
  // Views into `head` throughout: only what is kept (the method, the target
  // and the normalised head) is copied.
  std::size_t line_start = 0;
  bool first = true;
  bool has_length = false, has_transfer_encoding = false;
  std::uint64_t length = 0;
  std::string_view version;
  head_out_.reserve(head.size() + 32);
  while (line_start < head.size()) {
    const auto eol = head.find("\r\n", line_start);
    const std::string_view line = head.substr(line_start, eol - line_start);
    line_start = eol + 2;
    for (unsigned char c : line) {
      if ((c < 0x20 && c != '\t') || c == 0x7f) {
        return Fail(400, "invalid_request", "The request head has a control character in it.");
      }
    }
    if (first) {
      first = false;
      const auto sp1 = line.find(' ');
      const auto sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
      if (sp2 == std::string::npos || line.find(' ', sp2 + 1) != std::string::npos) {
        return Fail(400, "invalid_request", "The request line is not METHOD TARGET VERSION.");
      }
      method_ = line.substr(0, sp1);
      target_ = line.substr(sp1 + 1, sp2 - sp1 - 1);
      version = line.substr(sp2 + 1);
      if (!IsToken(method_) || target_.empty() ||
          !std::all_of(target_.begin(), target_.end(), [](char c) {
            const auto u = static_cast<unsigned char>(c);
            return u > 0x20 && u < 0x7f;
          })) {
        return Fail(400, "invalid_request", "The request line is not METHOD TARGET VERSION.");
      }
      if (version != "HTTP/1.1" && version != "HTTP/1.0") {
        return Fail(505, "http_version_not_supported", "Only HTTP/1.0 and HTTP/1.1 are served.");
      }
      wants_close_ = version == "HTTP/1.0";
      expects_body_method_ =
          method_ == "POST" || method_ == "PUT" || method_ == "PATCH" || method_ == "DELETE";
      head_out_.assign(line).append("\r\n");
      continue;
    }
    if (!line.empty() && (line[0] == ' ' || line[0] == '\t')) {
      return Fail(400, "invalid_request", "Folded header lines are not accepted.");
    }
    const auto colon = line.find(':');
    if (colon == std::string::npos || !IsToken(line.substr(0, colon))) {
      return Fail(400, "invalid_request", "A header line is not NAME: VALUE.");
    }
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = base::TrimView(line.substr(colon + 1));
    if (base::EqualsIgnoringCase(name, "content-length")) {
      if (value.empty() || value.size() > 18 ||
          !std::all_of(value.begin(), value.end(),
                       [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
        return Fail(400, "invalid_request", "Content-Length is not a number.");
      }
      std::uint64_t n = 0;  // at most 18 digits: no overflow
      for (char c : value) n = n * 10 + static_cast<std::uint64_t>(c - '0');
      if (has_length && n != length) {
        return Fail(400, "invalid_request", "The request has two different Content-Lengths.");
      }
      has_length = true;
      length = n;
      continue;
    }
    if (base::EqualsIgnoringCase(name, "transfer-encoding")) {
      if (has_transfer_encoding || !base::EqualsIgnoringCase(value, "chunked")) {
        return Fail(501, "unsupported_transfer_encoding",
                    "Only Transfer-Encoding: chunked is accepted for request bodies.");
      }
      has_transfer_encoding = true;
      continue;
    }
    if (base::EqualsIgnoringCase(name, "expect")) {
      if (!base::EqualsIgnoringCase(value, "100-continue")) {
        return Fail(417, "expectation_failed", "Only Expect: 100-continue is understood.");
      }
      expect_continue_ = true;
      continue;
    }
    if (base::EqualsIgnoringCase(name, "content-encoding") &&
        !base::EqualsIgnoringCase(value, "identity")) {
      // A compressed body could expand far past the body limit once decoded.
      return Fail(415, "unsupported_content_encoding", "Send request bodies uncompressed.");
    }
    if (base::EqualsIgnoringCase(name, "connection")) {
      if (HasToken(value, "close")) wants_close_ = true;
      if (version == "HTTP/1.0" && HasToken(value, "keep-alive")) wants_close_ = false;
    }
    head_out_.append(name).append(": ").append(value).append("\r\n");
  }
  if (has_length && has_transfer_encoding) {
    return Fail(400, "invalid_request",
                "The request has both Content-Length and Transfer-Encoding.");
  }
  if (has_transfer_encoding && version == "HTTP/1.0") {
    return Fail(400, "invalid_request", "HTTP/1.0 has no chunked transfer coding.");
  }
  chunked_ = has_transfer_encoding;
  remaining_ = has_length ? length : 0;
  return Result::kNeedMore;
}

RequestFramer::Result RequestFramer::FinishHead() {
  if (chunked_) {
    state_ = State::kChunkSize;
    return Result::kNeedMore;
  }
  if (remaining_ > limits_.max_body_bytes) {
    return Fail(413, "request_too_large", "The request body is too large.");
  }
  if (remaining_ > 0) {
    state_ = State::kBody;
    return Result::kNeedMore;
  }
  return Complete();
}

RequestFramer::Result RequestFramer::Complete() {
  request_ = std::move(head_out_);
  head_out_.clear();
  if (!body_.empty() || expects_body_method_) {
    request_ += "Content-Length: " + std::to_string(body_.size()) + "\r\n";
  }
  request_ += "\r\n";
  request_ += body_;
  body_.clear();
  body_.shrink_to_fit();
  state_ = State::kDone;
  return Result::kComplete;
}

}  // namespace paintlock::gateway::edge
