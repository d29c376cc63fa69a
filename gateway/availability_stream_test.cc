#include "gateway/availability_stream.h"

#include <doctest/doctest.h>

#include <thread>

using namespace paintlock::gateway;
using std::chrono::milliseconds;

namespace {

std::vector<std::string> Ids(const AvailabilityStream::Changes& c) {
  std::vector<std::string> out;
  for (const auto& [seq, a] : c.items) out.push_back(a.painting + ":" + a.state);
  return out;
}

}  // namespace

TEST_CASE("storefront: a new reader gets every painting, then only what changed") {
  AvailabilityStreamOptions options;
  options.epoch = "e1";
  AvailabilityStream board(options);
  CHECK(board.Update({{"p1", "available", ""}, {"p2", "available", ""}}) == 2);
  auto all = board.WaitForChanges(0, milliseconds(0));
  CHECK(Ids(all) == std::vector<std::string>{"p1:available", "p2:available"});
  CHECK(all.upto == 2);

  // The same truth read again changes nothing and wakes nobody.
  CHECK(board.Update({{"p1", "available", ""}, {"p2", "available", ""}}) == 0);
  CHECK(board.WaitForChanges(all.upto, milliseconds(0)).items.empty());

  CHECK(board.Update({{"p2", "reserved", "2026-12-02T14:05:09Z"}}) == 1);
  auto next = board.WaitForChanges(all.upto, milliseconds(0));
  REQUIRE(next.items.size() == 1);
  CHECK(next.items[0].second.free_at == "2026-12-02T14:05:09Z");
  CHECK(next.upto == 3);
}

TEST_CASE("storefront: a painting that changes many times is sent once, in its latest state") {
  AvailabilityStreamOptions options;
  options.epoch = "e1";
  AvailabilityStream board(options);
  board.Update({{"p1", "available", ""}, {"p2", "available", ""}});
  const std::uint64_t seen = board.WaitForChanges(0, milliseconds(0)).upto;
  board.Update({{"p1", "reserved", "2026-12-02T14:05:09Z"}});
  board.Update({{"p2", "reserved", "2026-12-02T14:06:00Z"}});
  board.Update({{"p1", "sold", ""}});
  auto c = board.WaitForChanges(seen, milliseconds(0));
  // In the order of their last change.
  CHECK(Ids(c) == std::vector<std::string>{"p2:reserved", "p1:sold"});
}

TEST_CASE("storefront: Last-Event-ID resumes only within the same epoch and sequence") {
  AvailabilityStreamOptions options;
  options.epoch = "abc123";
  AvailabilityStream board(options);
  board.Update({{"p1", "available", ""}, {"p2", "available", ""}, {"p3", "sold", ""}});
  CHECK(board.ResumePoint("abc123-2") == 2);
  CHECK(board.ResumePoint("abc123-3") == 3);
  CHECK(board.ResumePoint("abc123-4") == 0);  // ahead of this board: start over
  CHECK(board.ResumePoint("other-2") == 0);   // another process or run
  CHECK(board.ResumePoint("abc1234-2") == 0);
  CHECK(board.ResumePoint("abc123-") == 0);
  CHECK(board.ResumePoint("abc123-x2") == 0);
  CHECK(board.ResumePoint("") == 0);
  CHECK(board.ResumePoint("abc123-99999999999999999999999") == 0);
}

TEST_CASE("storefront: a waiting reader wakes on a change and on Close") {
  AvailabilityStreamOptions options;
  AvailabilityStream board(options);
  CHECK(board.epoch().size() == 12);
  // The writer acts only once the reader is blocked, so the wake-up is what
  // is tested (not a change that was already there when the reader came).
  auto once_waiting = [&] {
    while (board.WaitingReaders() == 0) std::this_thread::yield();
  };
  std::thread writer([&] {
    once_waiting();
    board.Update({{"p1", "sold", ""}});
  });
  auto c = board.WaitForChanges(0, milliseconds(10000));
  writer.join();
  CHECK(Ids(c) == std::vector<std::string>{"p1:sold"});

  std::thread closer([&] {
    once_waiting();
    board.Close();
  });
  auto closed = board.WaitForChanges(c.upto, milliseconds(10000));
  closer.join();
  CHECK(closed.closed);
  CHECK(closed.items.empty());
}

TEST_CASE("storefront: events carry the epoch, the sequence and a small JSON payload") {
  CHECK(FormatAvailabilityEvent("e1", 7, {"p7", "reserved", "2026-12-02T14:05:09Z"}) ==
        "id: e1-7\nevent: painting\n"
        "data: {\"free_at\":\"2026-12-02T14:05:09Z\",\"id\":\"p7\",\"state\":\"reserved\"}\n\n");
  CHECK(FormatAvailabilityEvent("e1", 8, {"p7", "sold", ""}) ==
        "id: e1-8\nevent: painting\ndata: {\"id\":\"p7\",\"state\":\"sold\"}\n\n");
}

TEST_CASE("storefront: streams beyond max_streams are refused with 503, and slots come back") {
  AvailabilityStreamOptions options;
  options.max_streams = 1;
  AvailabilityStream board(options);
  httplib::Request req;
  {
    httplib::Response first;
    board.Serve(req, first);
    CHECK(board.OpenStreams() == 1);
    httplib::Response second;
    board.Serve(req, second);
    CHECK(second.status == 503);
    CHECK(second.get_header_value("Retry-After") == "10");
    CHECK(board.OpenStreams() == 1);
  }  // the first response, and its content provider, are gone
  CHECK(board.OpenStreams() == 0);
  board.Close();
  httplib::Response after_close;
  board.Serve(req, after_close);
  CHECK(after_close.status == 503);
}
