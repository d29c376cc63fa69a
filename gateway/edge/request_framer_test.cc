#include "gateway/edge/request_framer.h"

#include <doctest/doctest.h>

#include <string>

using paintlock::gateway::edge::FramerLimits;
using paintlock::gateway::edge::RequestFramer;
using Result = RequestFramer::Result;

namespace {

FramerLimits Small() { return FramerLimits{256, 100}; }

// Feeds `bytes` one at a time: framing must not depend on how the network
// splits a request.
Result FeedByteByByte(RequestFramer& f, const std::string& bytes, std::string* rest) {
  Result r = Result::kNeedMore;
  for (char c : bytes) {
    rest->push_back(c);
    r = f.Feed(rest);
    if (r != Result::kNeedMore) break;
  }
  return r;
}

}  // namespace

TEST_CASE("framer: a bodiless POST is complete at the end of its headers, with Content-Length 0") {
  RequestFramer f(Small());
  std::string in = "POST /v1/holds/h1/commit HTTP/1.1\r\nHost: x\r\n\r\n";
  REQUIRE(f.Feed(&in) == Result::kComplete);
  CHECK(in.empty());
  CHECK(f.method() == "POST");
  CHECK(f.target() == "/v1/holds/h1/commit");
  CHECK(f.request() == "POST /v1/holds/h1/commit HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
}

TEST_CASE("framer: a GET without a body gets no Content-Length and leaves pipelined bytes") {
  RequestFramer f(Small());
  std::string in = "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\n";
  REQUIRE(f.Feed(&in) == Result::kComplete);
  CHECK(f.request() == "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
  CHECK(in == "GET /b HTTP/1.1\r\n");
  f.Reset();
  CHECK(!f.started());
  CHECK(f.Feed(&in) == Result::kNeedMore);
  CHECK(f.started());
  in += "\r\n";
  REQUIRE(f.Feed(&in) == Result::kComplete);
  CHECK(f.target() == "/b");
}

TEST_CASE("framer: Content-Length bodies, whole or byte by byte") {
  const std::string request = "POST /p HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET";
  RequestFramer whole(Small());
  std::string in = request;
  REQUIRE(whole.Feed(&in) == Result::kComplete);
  CHECK(whole.request() == "POST /p HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello");
  CHECK(in == "GET");
  RequestFramer bytes(Small());
  std::string rest;
  REQUIRE(FeedByteByByte(bytes, request, &rest) == Result::kComplete);
  CHECK(bytes.request() == whole.request());
}

TEST_CASE("framer: a chunked body is decoded and re-framed with Content-Length") {
  const std::string request =
      "POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\nX-A: b\r\n\r\n"
      "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: t\r\n\r\n";
  for (bool byte_by_byte : {false, true}) {
    RequestFramer f(Small());
    std::string in;
    Result r;
    if (byte_by_byte) {
      r = FeedByteByByte(f, request, &in);
    } else {
      in = request;
      r = f.Feed(&in);
    }
    REQUIRE(r == Result::kComplete);
    CHECK(in.empty());
    CHECK(f.request() == "POST /p HTTP/1.1\r\nX-A: b\r\nContent-Length: 11\r\n\r\nhello world");
  }
}

TEST_CASE("framer: the body limit holds for Content-Length and for chunked bodies") {
  RequestFramer by_length(Small());
  std::string in = "POST /p HTTP/1.1\r\nContent-Length: 101\r\n\r\n";
  REQUIRE(by_length.Feed(&in) == Result::kError);
  CHECK(by_length.error().status == 413);
  CHECK(by_length.error().code == "request_too_large");

  RequestFramer chunked(Small());
  in = "POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n" + std::string(64, 'a') +
       "\r\n40\r\n";
  REQUIRE(chunked.Feed(&in) == Result::kError);
  CHECK(chunked.error().status == 413);

  RequestFramer huge(Small());
  in = "POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffff\r\n";
  REQUIRE(huge.Feed(&in) == Result::kError);
  CHECK(huge.error().status == 413);

  RequestFramer exact(Small());
  in = "POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n64\r\n" + std::string(100, 'a') +
       "\r\n0\r\n\r\n";
  CHECK(exact.Feed(&in) == Result::kComplete);
}

TEST_CASE("framer: the header section is limited, whether or not it ever ends") {
  RequestFramer endless(Small());
  std::string in = "GET / HTTP/1.1\r\n";
  Result r = Result::kNeedMore;
  for (int i = 0; i < 100 && r == Result::kNeedMore; ++i) {
    in += "X-Flood: aaaaaaaa\r\n";
    r = endless.Feed(&in);
  }
  REQUIRE(r == Result::kError);
  CHECK(endless.error().status == 431);
  CHECK(endless.error().code == "headers_too_large");

  RequestFramer whole(Small());
  in = "GET / HTTP/1.1\r\n" + std::string(300, 'X') + ": y\r\n\r\n";
  REQUIRE(whole.Feed(&in) == Result::kError);
  CHECK(whole.error().status == 431);

  RequestFramer trailers(Small());
  in = "POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n";
  for (int i = 0; i < 40; ++i) in += "T: aaaaaaaaaa\r\n";
  REQUIRE(trailers.Feed(&in) == Result::kError);
  CHECK(trailers.error().status == 431);
}

TEST_CASE("framer: ambiguous or malformed framing is a 400, never a guess") {
  const std::string bad[] = {
      "POST /p HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
      "POST /p HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
      "POST /p HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
      "POST /p HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n",
      "POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
      "POST /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY",
      "POST /p HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
      "GET /a b HTTP/1.1\r\n\r\n",
      "GET /a\x01 HTTP/1.1\r\n\r\n",
      std::string("GET /a") + '\0' + " HTTP/1.1\r\n\r\n",
      std::string("GET / HTTP/1.1\r\nX: a") + '\0' + "b\r\n\r\n",
      "GET / HTTP/1.1\r\n folded\r\n\r\n",
      "GET / HTTP/1.1\r\nNo colon\r\n\r\n",
      "GET / HTTP/1.1\r\nBad name: x\r\n\r\n",
  };
  for (const std::string& request : bad) {
    CAPTURE(request);
    RequestFramer f(Small());
    std::string in = request;
    REQUIRE(f.Feed(&in) == Result::kError);
    CHECK(f.error().status == 400);
    CHECK(f.error().code == "invalid_request");
  }
}

TEST_CASE("framer: other transfer codings, compressed bodies and odd versions are refused") {
  struct Case {
    const char* request;
    int status;
  } cases[] = {
      {"POST /p HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
      {"POST /p HTTP/1.1\r\nContent-Encoding: gzip\r\nContent-Length: 1\r\n\r\nx", 415},
      {"GET / HTTP/2.0\r\n\r\n", 505},
      {"POST /p HTTP/1.1\r\nExpect: something\r\n\r\n", 417},
  };
  for (const auto& c : cases) {
    CAPTURE(c.request);
    RequestFramer f(Small());
    std::string in = c.request;
    REQUIRE(f.Feed(&in) == Result::kError);
    CHECK(f.error().status == c.status);
  }
}

TEST_CASE("framer: Expect 100-continue is noted and stripped, Connection close is noted") {
  RequestFramer f(Small());
  std::string in =
      "POST /p HTTP/1.1\r\nExpect: 100-continue\r\nConnection: close\r\nContent-Length: 2\r\n\r\n";
  REQUIRE(f.Feed(&in) == Result::kNeedMore);
  CHECK(f.awaiting_body_with_continue());
  in = "ok";
  REQUIRE(f.Feed(&in) == Result::kComplete);
  CHECK(!f.awaiting_body_with_continue());
  CHECK(f.wants_close());
  CHECK(f.request() == "POST /p HTTP/1.1\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok");

  RequestFramer old(Small());
  in = "GET / HTTP/1.0\r\n\r\n";
  REQUIRE(old.Feed(&in) == Result::kComplete);
  CHECK(old.wants_close());
  RequestFramer kept(Small());
  in = "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
  REQUIRE(kept.Feed(&in) == Result::kComplete);
  CHECK(!kept.wants_close());
}

TEST_CASE("framer: empty lines before a request are skipped and do not start it") {
  RequestFramer f(Small());
  std::string in = "\r\n";
  CHECK(f.Feed(&in) == Result::kNeedMore);
  CHECK(!f.started());
  in = "GET / HTTP/1.1\r\n\r\n";
  CHECK(f.Feed(&in) == Result::kComplete);
}

TEST_CASE("framer: at most four blank-line bytes before a request, however they arrive") {
  // Found by fuzz/request_framer_fuzz.cc: counted per read, a client sending
  // them a few at a time could send any number.
  const std::string six = "\r\n\r\n\r\nGET / HTTP/1.1\r\n\r\n";
  RequestFramer whole(Small());
  std::string in = six;
  CHECK(whole.Feed(&in) == Result::kError);
  RequestFramer pieces(Small());
  std::string rest;
  CHECK(FeedByteByByte(pieces, six, &rest) == Result::kError);
  CHECK(pieces.error().status == 400);
  RequestFramer four(Small());
  std::string four_in;
  CHECK(FeedByteByByte(four, "\r\n\r\nGET / HTTP/1.1\r\n\r\n", &four_in) == Result::kComplete);
}
