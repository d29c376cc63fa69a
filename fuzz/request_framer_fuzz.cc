// The edge's request framer (gateway/edge/request_framer.h): the first parser
// every byte from the network reaches. The first input byte picks how the
// rest arrives (in reads of 1 to 64 bytes); the rest is one connection's
// stream of pipelined requests, framed under small limits so that the
// limits' edges are reached.
// Properties, besides "no crash, no sanitizer report":
//   * the same requests complete, byte for byte and in the same order, and
//     the same refusal (status and code) ends the stream, whether the bytes
//     arrive all at once or read by read;
//   * bounded: while it waits for more, the framer leaves at most the header
//     limit (or one chunk-size line, kMaxChunkLineBytes) unread in the buffer, and a
//     completed body is never over the body limit;
//   * a completed request has exactly one framing: no Transfer-Encoding, no
//     Expect, and a Content-Length equal to its body's size when it has a
//     body or is a POST, PUT, PATCH or DELETE (none otherwise);
//   * a refusal is a 4xx or 5xx with a code.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "base/text.h"
#include "fuzz/fuzz_support.h"
#include "gateway/edge/request_framer.h"

using paintlock::base::EqualsIgnoringCase;
using paintlock::gateway::edge::FramerLimits;
using paintlock::gateway::edge::kMaxChunkLineBytes;
using paintlock::gateway::edge::RequestFramer;
using Result = RequestFramer::Result;

namespace {

constexpr FramerLimits kLimits{512, 256};

struct Framed {
  std::vector<std::string> requests;
  int status = 0;  // 0: the stream ended without a refusal
  std::string code;
};

void CheckRequest(const RequestFramer& f) {
  const std::string& r = f.request();
  const auto head_end = r.find("\r\n\r\n");
  FUZZ_CHECK(head_end != std::string::npos);
  const std::string_view body = std::string_view(r).substr(head_end + 4);
  FUZZ_CHECK(body.size() <= kLimits.max_body_bytes);
  int lengths = 0;
  std::size_t at = r.find("\r\n") + 2;
  while (at < head_end + 2) {
    const auto eol = r.find("\r\n", at);
    const std::string_view line = std::string_view(r).substr(at, eol - at);
    const std::string_view name = line.substr(0, line.find(':'));
    FUZZ_CHECK(!EqualsIgnoringCase(name, "transfer-encoding"));
    FUZZ_CHECK(!EqualsIgnoringCase(name, "expect"));
    if (EqualsIgnoringCase(name, "content-length")) {
      ++lengths;
      FUZZ_CHECK(line == "Content-Length: " + std::to_string(body.size()));
    }
    at = eol + 2;
  }
  const std::string& m = f.method();
  const bool body_method = m == "POST" || m == "PUT" || m == "PATCH" || m == "DELETE";
  FUZZ_CHECK(lengths == (body_method || !body.empty() ? 1 : 0));
}

Framed Frame(std::string_view stream, std::size_t read_size) {
  RequestFramer framer(kLimits);
  Framed out;
  std::string in;
  std::size_t fed = 0;
  for (;;) {
    switch (framer.Feed(&in)) {
      case Result::kComplete:
        CheckRequest(framer);
        out.requests.push_back(framer.request());
        framer.Reset();
        break;  // the buffer may hold the next request already
      case Result::kError:
        out.status = framer.error().status;
        out.code = framer.error().code;
        FUZZ_CHECK(out.status >= 400 && out.status <= 599 && !out.code.empty());
        return out;
      case Result::kNeedMore: {
        FUZZ_CHECK(in.size() <= std::max(kLimits.max_header_bytes, kMaxChunkLineBytes));
        if (fed == stream.size()) return out;
        const std::size_t n = std::min(read_size, stream.size() - fed);
        in.append(stream.substr(fed, n));
        fed += n;
        break;
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t read_size = 1 + data[0] % 64;
  const std::string_view stream = paintlock::fuzz::AsText(data + 1, size - 1);
  const Framed whole = Frame(stream, stream.size() + 1);
  const Framed pieces = Frame(stream, read_size);
  FUZZ_CHECK(whole.requests == pieces.requests);
  FUZZ_CHECK(whole.status == pieces.status && whole.code == pieces.code);
  return 0;
}
