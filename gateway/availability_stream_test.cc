#include "gateway/availability_stream.h"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <thread>

using namespace paintlock::gateway;
using std::chrono::milliseconds;

namespace {

std::vector<std::string> Ids(const AvailabilityStream::Changes& c) {
  std::vector<std::string> out;
  for (const auto& e : c.items) {
    out.push_back(e->availability.painting + ":" + e->availability.state);
  }
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
  CHECK(next.items[0]->availability.free_at == "2026-12-02T14:05:09Z");
  // Its event was formatted once, with the sequence it was given.
  CHECK(next.items[0]->seq == 3);
  CHECK(next.items[0]->event ==
        FormatAvailabilityEvent("e1", 3, {"p2", "reserved", "2026-12-02T14:05:09Z"}));
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

TEST_CASE("storefront: a reader in batches gets every painting once, and what changes between") {
  AvailabilityStreamOptions options;
  options.epoch = "e1";
  AvailabilityStream board(options);
  board.Update({{"p1", "available", ""},
                {"p2", "available", ""},
                {"p3", "available", ""},
                {"p4", "available", ""},
                {"p5", "available", ""}});
  auto first = board.WaitForChanges(0, milliseconds(0), 2);
  CHECK(Ids(first) == std::vector<std::string>{"p1:available", "p2:available"});
  CHECK(first.more);
  CHECK(first.upto == 2);
  // p1 (already read) and p4 (not yet) change between two batches: each is
  // read again, or for the first time, in its new state, after the rest.
  board.Update({{"p1", "sold", ""}, {"p4", "sold", ""}});
  std::vector<std::string> rest;
  std::uint64_t after = first.upto;
  for (;;) {
    auto batch = board.WaitForChanges(after, milliseconds(0), 2);
    CHECK(batch.items.size() <= 2);
    for (const auto& id : Ids(batch)) rest.push_back(id);
    after = batch.upto;
    if (!batch.more) break;
  }
  CHECK(rest == std::vector<std::string>{"p3:available", "p5:available", "p1:sold", "p4:sold"});
  CHECK(after == 7);
  // A batch that takes exactly what is left says there is no more.
  auto none = board.WaitForChanges(after, milliseconds(0), 2);
  CHECK(none.items.empty());
  CHECK(!none.more);
  // A limit of none is taken as one: a batch always advances.
  auto one = board.WaitForChanges(0, milliseconds(0), 0);
  CHECK(one.items.size() == 1);
  CHECK(one.more);
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

TEST_CASE("storefront: an event's data is the bytes nlohmann writes for the same fields") {
  const std::vector<Availability> cases = {
      {"p1", "available", ""},
      {"p2", "reserved", "2026-12-02T14:05:09Z"},
      {"p3", "reserved", "2026-12-02T14:05:09Z", 3},
      {"p4", "available", "", 1},
      {"a.b_c-9", "sold", "", 0},
      {"q\"uote", "st\\ate\n\x01", "\xc3\xa9t\xe9", 9223372036854775807LL},
  };
  for (const Availability& a : cases) {
    nlohmann::json data = {{"id", a.painting}, {"state", a.state}};
    if (!a.free_at.empty()) data["free_at"] = a.free_at;
    if (a.line_length > 0) data["line_length"] = a.line_length;
    CAPTURE(a.painting);
    CHECK(FormatAvailabilityEvent("e9", 42, a) ==
          "id: e9-42\nevent: painting\ndata: " +
              data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n");
  }
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

TEST_CASE("storefront: a line member's stream is told its own place, its turn, and its end, once") {
  const std::string me = std::string(64, 'b');
  const std::string ahead = std::string(64, 'a');
  LineFollow follow;
  follow.digests = {me};
  Availability held{"p7",
                    "reserved",
                    "2026-12-02T14:05:00Z",
                    2,
                    {{ahead, false, "2026-12-02T14:05:00Z", "2026-12-02T14:07:00Z"},
                     {me, false, "2026-12-02T14:07:00Z", "2026-12-02T14:09:00Z"}}};
  CHECK(FormatLineEvents(held, &follow) ==
        "event: line\ndata: {\"id\":\"p7\",\"line_length\":2,\"position\":2,\"state\":\"waiting\","
        "\"window_from\":\"2026-12-02T14:07:00Z\",\"window_until\":\"2026-12-02T14:09:00Z\"}\n\n");
  // Told already: nothing again.
  CHECK(FormatLineEvents(held, &follow).empty());

  // The one ahead let its turn pass: this member's turn runs.
  Availability turn{"p7",
                    "reserved",
                    "2026-12-02T14:09:00Z",
                    1,
                    {{me, true, "2026-12-02T14:07:00Z", "2026-12-02T14:09:00Z"}}};
  const std::string told = FormatLineEvents(turn, &follow);
  CHECK(told.find("\"state\":\"your_turn\"") != std::string::npos);
  CHECK(told.find("\"position\":1") != std::string::npos);
  CHECK(told.find(ahead) == std::string::npos);  // no other member's digest, ever

  // It bought: the entry stopped waiting. "ended" once, then nothing.
  Availability bought{"p7", "reserved", "2026-12-02T14:16:00Z", 0, {}};
  CHECK(FormatLineEvents(bought, &follow) ==
        "event: line\ndata: {\"id\":\"p7\",\"state\":\"ended\"}\n\n");
  CHECK(FormatLineEvents(bought, &follow).empty());
  Availability sold{"p7", "sold", "", 0, {}};
  CHECK(FormatLineEvents(sold, &follow).empty());

  // A member whose line closes by a sale is told "closed".
  LineFollow other;
  other.digests = {ahead};
  CHECK(FormatLineEvents(held, &other).find("\"position\":1") != std::string::npos);
  CHECK(FormatLineEvents(sold, &other) ==
        "event: line\ndata: {\"id\":\"p7\",\"state\":\"closed\"}\n\n");

  // A stream following no place, or a token in no line, hears nothing of lines.
  LineFollow none;
  CHECK(FormatLineEvents(held, &none).empty());
  LineFollow stranger;
  stranger.digests = {std::string(64, 'c')};
  CHECK(FormatLineEvents(held, &stranger).empty());
  CHECK(FormatLineEvents(sold, &stranger).empty());
}

TEST_CASE(
    "storefront: a new stream of a line member starts with its place, whatever its resume point") {
  AvailabilityStreamOptions options;
  options.epoch = "e1";
  AvailabilityStream board(options);
  const std::string me = std::string(64, 'b');
  board.Update({{"p1", "available", ""},
                {"p7",
                 "reserved",
                 "2026-12-02T14:05:00Z",
                 1,
                 {{me, false, "2026-12-02T14:05:00Z", "2026-12-02T14:07:00Z"}}}});
  LineFollow follow;
  follow.digests = {me};
  // Not from a board that is not current: nothing is told, nothing recorded.
  board.SetCurrent(false);
  CHECK_FALSE(board.LineSnapshot(&follow).has_value());
  CHECK(follow.told.empty());
  board.SetCurrent(true);
  const std::string snapshot = board.LineSnapshot(&follow).value();
  CHECK(snapshot.find("\"id\":\"p7\"") != std::string::npos);
  CHECK(snapshot.find("\"position\":1") != std::string::npos);
  CHECK(board.LineSnapshot(&follow).value().empty());  // told
}

TEST_CASE("storefront: a board that is not current sends nothing, and a reader waits until it is") {
  AvailabilityStreamOptions options;
  options.epoch = "e1";
  AvailabilityStream board(options);
  int woken = 0;
  board.SetChangeObserver([&] { ++woken; });
  board.Update({{"p1", "available", ""}, {"p2", "available", ""}});
  REQUIRE(woken == 1);
  // The feed stopped reading: what the board holds may be stale.
  board.SetCurrent(false);
  auto stale = board.WaitForChanges(0, milliseconds(0));
  CHECK(stale.items.empty());
  CHECK(stale.upto == 0);  // the reader is owed all of it still
  CHECK_FALSE(stale.closed);

  // A reader blocked meanwhile wakes when the full read makes it current,
  // even if that read changed nothing on the board.
  std::thread feed([&] {
    while (board.WaitingReaders() == 0) std::this_thread::yield();
    CHECK(board.Update({{"p1", "available", ""}, {"p2", "available", ""}}) == 0);
    board.SetCurrent(true);
  });
  auto current = board.WaitForChanges(0, milliseconds(10000));
  feed.join();
  CHECK(Ids(current) == std::vector<std::string>{"p1:available", "p2:available"});
  CHECK(current.upto == 2);
  CHECK(woken == 2);  // the reactor's pushed streams are woken too
}

TEST_CASE("storefront: the watch observer hears the first stream open and the last one close") {
  AvailabilityStreamOptions options;
  AvailabilityStream board(options);
  board.Update({{"p1", "available", ""}});
  int told = 0;
  board.SetWatchObserver([&] { ++told; });
  httplib::Request req;
  httplib::Response first, second;
  board.Serve(req, first);
  CHECK(board.OpenStreams() == 1);
  CHECK(told == 1);
  board.Serve(req, second);
  CHECK(board.OpenStreams() == 2);
  CHECK(told == 1);             // not for the second
  first = httplib::Response();  // its content provider (and slot) goes
  CHECK(board.OpenStreams() == 1);
  CHECK(told == 1);
  second = httplib::Response();
  CHECK(board.OpenStreams() == 0);
  CHECK(told == 2);
}
