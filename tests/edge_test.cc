// The HTTP edge (gateway/edge/) against hostile and clumsy clients, end to
// end: a real gateway process, real PostgreSQL, raw loopback sockets.
//
// Loopback has the whole 127.0.0.0/8: tests that need many client addresses
// bind their sockets to 127.0.0.2, 127.0.0.3, … so the per-address cap sees
// distinct clients, and the buyer stays on 127.0.0.1.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <pqxx/pqxx>
#include <thread>

#include "tests/support/harness.h"
#include "tests/support/raw_client.h"

using namespace paintlock::testing;
using nlohmann::json;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

namespace {

// The gateway's peak resident memory so far, in kB (VmHWM).
long PeakRssKb(Gateway& gw) {
  std::ifstream status("/proc/" + std::to_string(gw.process().pid()) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

int OpenStreams(Gateway& gw) {
  Reply r = Request(gw.base(), "GET", "/readyz");
  return r.json.is_object() && r.json.contains("open_streams") ? r.json["open_streams"].get<int>()
                                                               : -1;
}

std::string StreamRequest() {
  return "GET /v1/paintings/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: "
         "text/event-stream\r\n\r\n";
}

std::string Authorization() { return std::string("Authorization: Bearer ") + kApiKey + "\r\n"; }

}  // namespace

TEST_CASE("edge: a POST with neither Content-Length nor chunked is answered at once, bodiless") {
  TestDatabase db({{"p1", 1000}});
  // A long request deadline: an answer within the receive bound below cannot
  // be the deadline's 408, nor a read running into a timeout.
  Gateway gw(db, kNoStripe, {{{"PAINTLOCK_REQUEST_DEADLINE_SECONDS", "60"}}});
  REQUIRE(PostJson(gw.base(), "/v1/accounts/acct/credits", {{"amount", 100}},
                   [] {
                     auto h = ApiKeyHeader();
                     h.emplace("Idempotency-Key", "k1");
                     return h;
                   }())
              .status == 200);
  Reply hold = PostJson(gw.base(), "/v1/accounts/acct/holds",
                        {{"amount", 30}, {"ttl_seconds", 300}}, ApiKeyHeader());
  REQUIRE(hold.status == 201);
  const std::string id = hold.json["hold_id"];

  RawClient client(gw.port());
  REQUIRE(client.Send("POST /v1/holds/" + id + "/commit HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                      Authorization() + "\r\n"));
  // httplib alone read to EOF here and answered 400 after its 10 s timeout.
  REQUIRE(client.ReadResponse(milliseconds(5000)) == 200);
  CHECK(client.Json()["state"] == "committed");
  CHECK(client.Json()["balance_after"] == 70);

  // A bodiless POST to a route that needs a body gets that route's 400.
  RawClient empty(gw.port());
  REQUIRE(empty.Send("POST /v1/accounts/acct/holds HTTP/1.1\r\nHost: 127.0.0.1\r\n" +
                     Authorization() + "Content-Type: application/json\r\n\r\n"));
  REQUIRE(empty.ReadResponse(milliseconds(5000)) == 400);
  CHECK(empty.Json()["code"] == "invalid_request");
}

TEST_CASE("edge: keep-alive and pipelined requests are answered in order on one connection") {
  TestDatabase db;
  Gateway gw(db, kNoStripe);
  RawClient client(gw.port());
  REQUIRE(
      client.Send("GET /v1/paintings/p1 HTTP/1.1\r\nHost: x\r\n\r\n"
                  "GET /v1/paintings/p2 HTTP/1.1\r\nHost: x\r\n\r\n"));
  REQUIRE(client.ReadResponse(milliseconds(5000)) == 200);
  CHECK(client.Json()["id"] == "p1");
  REQUIRE(client.ReadResponse(milliseconds(5000)) == 200);
  CHECK(client.Json()["id"] == "p2");
  REQUIRE(client.Send("GET /v1/paintings/p3 HTTP/1.1\r\nHost: x\r\n\r\n"));
  REQUIRE(client.ReadResponse(milliseconds(5000)) == 200);
  CHECK(client.Json()["id"] == "p3");
}

TEST_CASE("edge: a keep-alive connection idle after its answers is closed at the idle timeout") {
  // After an answer the worker hands the connection straight back to epoll;
  // the reactor must still own its idle deadline.
  TestDatabase db;
  Gateway gw(db, kNoStripe, {{{"PAINTLOCK_IDLE_TIMEOUT_SECONDS", "1"}}});
  RawClient client(gw.port());
  for (const char* id : {"p1", "p2", "p3"}) {
    REQUIRE(client.Send(std::string("GET /v1/paintings/") + id + " HTTP/1.1\r\nHost: x\r\n\r\n"));
    REQUIRE(client.ReadResponse(milliseconds(5000)) == 200);
    CHECK(client.Json()["id"] == id);
  }
  const auto answered = Clock::now();
  CHECK(client.WaitClosed(milliseconds(10000)));
  CHECK(Clock::now() - answered >= milliseconds(900));  // not before the timeout
}

TEST_CASE("edge: a chunked 10 MB body gets 413 and the gateway's memory stays bounded") {
  TestDatabase db;
  Gateway gw(db, kNoStripe);
  REQUIRE(Request(gw.base(), "GET", "/v1/paintings").status == 200);
  const long before = PeakRssKb(gw);
  REQUIRE(before > 0);

  constexpr int kClients = 4;
  std::vector<int> statuses(kClients);
  std::vector<std::string> codes(kClients);
  RunConcurrently(kClients, [&](int i) {
    RawClient client(gw.port());
    REQUIRE(
        client.Send("POST /v1/checkout HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    "Transfer-Encoding: chunked\r\n\r\n"));
    std::thread sender([&] {
      const std::string chunk = "10000\r\n" + std::string(0x10000, 'a') + "\r\n";
      for (int sent = 0; sent < 160; ++sent) {  // 160 × 64 KiB = 10 MiB
        if (!client.Send(chunk)) break;
      }
    });
    statuses[i] = client.ReadResponse(milliseconds(20000));
    codes[i] = client.Json().value("code", "");
    shutdown(client.fd(), SHUT_RDWR);  // ends the sender if it still sends
    sender.join();
  });
  for (int i = 0; i < kClients; ++i) {
    CHECK(statuses[i] == 413);
    CHECK(codes[i] == "request_too_large");
  }
  const long after = PeakRssKb(gw);
  MESSAGE("gateway VmHWM before " << before << " kB, after four 10 MiB chunked bodies " << after
                                  << " kB");
  CHECK(after - before < 20 * 1024);
  CHECK(Request(gw.base(), "GET", "/v1/paintings").status == 200);
}

TEST_CASE("edge: a header flood gets 431 headers_too_large") {
  TestDatabase db;
  Gateway gw(db, kNoStripe);
  RawClient client(gw.port());
  REQUIRE(client.Send("GET /v1/paintings HTTP/1.1\r\nHost: x\r\n"));
  std::thread sender([&] {
    std::string lines;
    for (int i = 0; i < 1000; ++i) lines += "X-Flood-" + std::to_string(i) + ": aaaaaaaaaa\r\n";
    for (int round = 0; round < 100; ++round) {  // 100k header lines
      if (!client.Send(lines)) break;
    }
  });
  const int status = client.ReadResponse(milliseconds(20000));
  shutdown(client.fd(), SHUT_RDWR);
  sender.join();
  CHECK(status == 431);
  CHECK(client.Json()["code"] == "headers_too_large");
  CHECK(Request(gw.base(), "GET", "/v1/paintings").status == 200);
}

TEST_CASE("edge: static files: no symlink out of the storefront, no dotfiles, no NUL") {
  char dir_template[] = "/tmp/paintlock-shop-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  char outside_template[] = "/tmp/paintlock-outside-XXXXXX";
  const std::string outside = mkdtemp(outside_template);
  std::ofstream(dir + "/index.html") << "<h1>shop</h1>";
  std::ofstream(dir + "/shop.css") << "body{}";
  std::ofstream(dir + "/.env") << "SECRET=1";
  mkdir((dir + "/.git").c_str(), 0700);
  std::ofstream(dir + "/.git/config") << "[core]";
  std::ofstream(outside + "/secret.txt") << "outside";
  REQUIRE(symlink((outside + "/secret.txt").c_str(), (dir + "/leak.txt").c_str()) == 0);
  REQUIRE(symlink(outside.c_str(), (dir + "/leakdir").c_str()) == 0);
  REQUIRE(symlink((dir + "/shop.css").c_str(), (dir + "/alias.css").c_str()) == 0);
  REQUIRE(symlink((dir + "/.env").c_str(), (dir + "/env.txt").c_str()) == 0);

  TestDatabase db;
  Gateway gw(db, kNoStripe, {{{"PAINTLOCK_STOREFRONT_DIR", dir}}});
  Reply index = Request(gw.base(), "GET", "/shop/");
  CHECK(index.status == 200);
  CHECK(index.body == "<h1>shop</h1>");
  Reply css = Request(gw.base(), "GET", "/shop/shop.css");
  CHECK(css.status == 200);
  CHECK(css.Header("Content-Type") == "text/css; charset=utf-8");
  CHECK(Request(gw.base(), "GET", "/shop/alias.css").status == 200);  // a symlink inside is fine

  for (const std::string path :
       {"/shop/.env", "/shop/.git/config", "/shop/%2eenv", "/shop/leak.txt",
        "/shop/leakdir/secret.txt", "/shop/env.txt", "/shop/../shop/.env", "/shop/shop.css%00.txt",
        "/shop/shop.css%00", "/shop/nothing-here.css"}) {
    CAPTURE(path);
    RawClient client(gw.port());
    REQUIRE(client.Send("GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n"));
    REQUIRE(client.ReadResponse(milliseconds(5000)) == 404);
    CHECK(client.Json()["code"] == "not_found");
    CHECK(client.body().find("outside") == std::string::npos);
    CHECK(client.body().find("SECRET") == std::string::npos);
  }
  // A raw NUL byte in the target never reaches a handler.
  RawClient nul(gw.port());
  REQUIRE(nul.Send(std::string("GET /shop/shop.css") + '\0' + ".txt HTTP/1.1\r\nHost: x\r\n\r\n"));
  REQUIRE(nul.ReadResponse(milliseconds(5000)) == 400);
  CHECK(nul.Json()["code"] == "invalid_request");
  std::system(("rm -rf '" + dir + "' '" + outside + "'").c_str());
}

namespace {

// Two commits keep both of what serves commits busy — two workers, or the
// reactor's two asynchronous connections — and a third, whose client leaves
// while it waits, must never run.
void CommitWhoseClientLeftIsNeverRun(const std::string& async_connections) {
  TestDatabase db({{"p1", 1000}});
  // Two workers (or two connections), and a lock wait long enough to keep them both busy.
  Gateway gw(db, kNoStripe,
             {{{"PAINTLOCK_HTTP_THREADS", "2"},
               {"PAINTLOCK_DB_ASYNC_CONNECTIONS", async_connections},
               {"PAINTLOCK_METRICS", "api-key"},
               {"PAINTLOCK_DB_LOCK_TIMEOUT_MS", "30000"},
               {"PAINTLOCK_DB_STATEMENT_TIMEOUT_MS", "60000"}}});
  auto key = [](const char* k) {
    auto h = ApiKeyHeader();
    h.emplace("Idempotency-Key", k);
    return h;
  };
  REQUIRE(PostJson(gw.base(), "/v1/accounts/acct/credits", {{"amount", 100}}, key("k1")).status ==
          200);
  std::vector<std::string> holds;
  for (int amount : {10, 20, 40}) {
    Reply r = PostJson(gw.base(), "/v1/accounts/acct/holds",
                       {{"amount", amount}, {"ttl_seconds", 300}}, ApiKeyHeader());
    REQUIRE(r.status == 201);
    holds.push_back(r.json["hold_id"]);
  }

  // The test holds the account's row lock: both block in a commit.
  pqxx::connection blocker(db.url());
  pqxx::work tx(blocker);
  tx.exec("SELECT 1 FROM credit_accounts WHERE id = 'acct' FOR UPDATE");
  std::vector<Reply> committed(2);
  std::thread first([&] {
    committed[0] = Request(gw.base(), "POST", "/v1/holds/" + holds[0] + "/commit", "",
                           "application/json", ApiKeyHeader());
  });
  std::thread second([&] {
    committed[1] = Request(gw.base(), "POST", "/v1/holds/" + holds[1] + "/commit", "",
                           "application/json", ApiKeyHeader());
  });
  CHECK(Eventually([&] { return db.LockWaiters() == "2"; }));

  // The third commit arrives whole while neither is free, and its client
  // closes before one is.
  {
    RawClient gone(gw.port());
    REQUIRE(gone.Send("POST /v1/holds/" + holds[2] + "/commit HTTP/1.1\r\nHost: x\r\n" +
                      Authorization() + "Content-Length: 0\r\n\r\n"));
    if (async_connections != "0") {
      // The reactor has taken it and it waits for a connection: only then does
      // its client leave (else the reactor would find it gone before taking it).
      CHECK(Eventually([&] {
        return Request(gw.base(), "GET", "/metrics", "", "", ApiKeyHeader())
                   .body.find("\npaintlock_db_async_waiting 1\n") != std::string::npos;
      }));
    }
  }
  tx.abort();
  first.join();
  second.join();
  CHECK(committed[0].status == 200);
  CHECK(committed[1].status == 200);
  const std::string gone_path = "/v1/holds/" + holds[2] + "/commit";
  CHECK(Eventually([&] {
    for (const auto& line : gw.process().Events("client_gone_before_handler")) {
      if (line.value("path", "") == gone_path) return true;
    }
    return false;
  }));
  // "Nothing": the hold is still held, and the balance moved by the first two only.
  CHECK(db.Scalar("SELECT state FROM credit_holds WHERE id = '" + holds[2] + "'") == "held");
  CHECK(db.Scalar("SELECT balance FROM credit_accounts WHERE id = 'acct'") == "70");
}

}  // namespace

TEST_CASE(
    "edge: a commit whose client left before a worker was free is never run: the balance does "
    "not move") {
  CommitWhoseClientLeftIsNeverRun("0");  // commits served by workers
}

TEST_CASE(
    "edge: a commit whose client left before the reactor had a free connection is never run: the "
    "balance does not move") {
  CommitWhoseClientLeftIsNeverRun("2");  // commits served by the reactor (gateway/reactor_routes.h)
}

TEST_CASE("edge: a closed availability stream frees its slot at once, not at a heartbeat") {
  TestDatabase db;
  constexpr int kMax = 3;
  // Heartbeats far apart: a slot freed only when a write fails would stay
  // taken for five minutes.
  Gateway gw(db, kNoStripe,
             {{{"PAINTLOCK_MAX_STREAMS", std::to_string(kMax)},
               {"PAINTLOCK_STREAM_HEARTBEAT_SECONDS", "300"}}});
  std::vector<std::unique_ptr<RawClient>> open;
  for (int i = 0; i < kMax; ++i) {
    open.push_back(std::make_unique<RawClient>(gw.port()));
    REQUIRE(open.back()->Send(StreamRequest()));
    REQUIRE(open.back()->ReadResponse(milliseconds(5000), /*head_only=*/true) == 200);
  }
  {
    RawClient refused(gw.port());
    REQUIRE(refused.Send(StreamRequest()));
    REQUIRE(refused.ReadResponse(milliseconds(5000)) == 503);
    CHECK(refused.Json()["code"] == "too_many_streams");
  }
  open[1]->Close();  // a tab closes
  CHECK(Eventually([&] { return OpenStreams(gw) == kMax - 1; }, milliseconds(5000)));
  // A browser's request (it offers compression; events must stay plain text).
  RawClient again(gw.port());
  REQUIRE(
      again.Send("GET /v1/paintings/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 "Accept: text/event-stream\r\nAccept-Encoding: gzip, deflate, br\r\n\r\n"));
  REQUIRE(again.ReadResponse(milliseconds(5000), /*head_only=*/true) == 200);
  CHECK(again.head().find("Content-Encoding") == std::string::npos);
  // Changes after the first chunk are pushed by the reactor.
  REQUIRE(again.WaitFor("\"id\":\"p9\",\"state\":\"available\"", milliseconds(5000)));
  REQUIRE(PostJson(gw.base(), "/v1/reservations", {{"paintings", {"p9"}}}, ApiKeyHeader()).status ==
          201);
  CHECK(again.WaitFor("\"id\":\"p9\",\"state\":\"reserved\"", milliseconds(10000)));
}

TEST_CASE("edge: connections beyond the per-address cap are refused at once, others still served") {
  TestDatabase db;
  Gateway gw(db, kNoStripe, {{{"PAINTLOCK_MAX_CONNECTIONS_PER_ADDRESS", "5"}}});
  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 5; ++i) {
    idle.push_back(std::make_unique<RawClient>(gw.port(), "127.0.0.5"));
    REQUIRE(idle.back()->connected());
  }
  // Admission is in order of accept: once the fifth is counted, a sixth is refused.
  CHECK(Eventually([&] {
    RawClient probe(gw.port(), "127.0.0.5");
    return probe.ReadResponse(milliseconds(2000)) == 503 &&
           probe.Json()["code"] == "too_many_connections";
  }));
  CHECK(Request(gw.base(), "GET", "/v1/paintings").status == 200);
  RawClient other(gw.port(), "127.0.0.6");
  REQUIRE(other.Send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  CHECK(other.ReadResponse(milliseconds(5000)) == 200);
}

TEST_CASE(
    "edge: abuse: 300 trickling connections and 300 streams while a buyer checks out: every "
    "checkout answers") {
  TestDatabase db;
  FakeStripe stripe;
  Gateway gw(db, stripe.base(),
             {{{"PAINTLOCK_MAX_STREAMS", "400"},
               {"PAINTLOCK_REQUEST_DEADLINE_SECONDS", "3"},
               {"PAINTLOCK_HTTP_THREADS", "8"},
               {"PAINTLOCK_CHECKOUT_RATE_LIMIT", "off"}}});
  constexpr int kTricklers = 300, kStreams = 300, kPerAddress = 30;

  // 300 availability streams from ten addresses.
  std::vector<std::unique_ptr<RawClient>> streams;
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(
        std::make_unique<RawClient>(gw.port(), "127.0.1." + std::to_string(1 + i / kPerAddress)));
    REQUIRE(streams.back()->Send(StreamRequest()));
  }
  int streaming = 0;
  for (auto& s : streams) streaming += s->ReadResponse(milliseconds(10000), true) == 200;
  CHECK(streaming == kStreams);

  // 300 connections that send one byte of a request every 200 ms, from ten
  // other addresses; each is replaced when the gateway cuts it off.
  std::atomic<bool> done{false};
  std::atomic<int> trickling{0}, cut_off{0};
  std::thread trickler([&] {
    const std::string request = "GET /v1/paintings HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    std::vector<std::unique_ptr<RawClient>> slow(kTricklers);
    std::vector<size_t> sent(kTricklers, 0);
    auto open_one = [&](int i) {
      slow[i] =
          std::make_unique<RawClient>(gw.port(), "127.0.2." + std::to_string(1 + i / kPerAddress));
      sent[i] = 0;
    };
    for (int i = 0; i < kTricklers; ++i) open_one(i);
    while (!done) {
      for (int i = 0; i < kTricklers && !done; ++i) {
        pollfd p{slow[i]->fd(), POLLIN, 0};
        const bool answered = poll(&p, 1, 0) > 0;
        const char byte = request[std::min(sent[i], request.size() - 1)];
        if (answered || !slow[i]->Send(std::string(1, byte))) {
          cut_off += answered && slow[i]->ReadResponse(milliseconds(100)) == 408;
          open_one(i);
          continue;
        }
        if (sent[i]++ == 0) ++trickling;
      }
      std::this_thread::sleep_for(
          milliseconds(200));  // the trickle's pace, not a wait for a result
    }
  });

  REQUIRE(Eventually([&] { return trickling.load() >= kTricklers; }));

  // The buyer: every checkout answers, with its real outcome.
  int answered = 0;
  for (int i = 1; i <= 12; ++i) {
    Reply r = PostJson(gw.base(), "/v1/checkout", {{"paintings", {"p" + std::to_string(i)}}});
    CAPTURE(r.body);
    CHECK(r.status == 201);
    answered += r.status == 201;
  }
  // The tricklers were cut off by the request deadline, not left to hold on.
  CHECK(Eventually([&] { return cut_off.load() >= kTricklers; }, milliseconds(20000)));
  done = true;
  trickler.join();
  CHECK(answered == 12);
  // The streams saw the buyer's holds.
  CHECK(streams.front()->WaitFor("\"id\":\"p12\",\"state\":\"reserved\"", milliseconds(10000)));
  CheckInvariants(db);
}

TEST_CASE(
    "edge: a hung Stripe holds at most PAINTLOCK_STRIPE_MAX_WAITING workers: excess checkouts get "
    "503 at once, other requests are served") {
  TestDatabase db;
  FakeStripe stripe;
  stripe.Control(
      "POST", "/_test/faults",
      {{"delay_next", 100}, {"delay_ms", 30000}, {"path_prefix", "/v1/checkout/sessions"}});
  Gateway gw(db, stripe.base(),
             {{{"PAINTLOCK_HTTP_THREADS", "4"},
               {"PAINTLOCK_STRIPE_MAX_WAITING", "2"},
               {"STRIPE_DEADLINE_MS", "8000"},
               {"STRIPE_TIMEOUT_MS", "20000"},
               {"STRIPE_MAX_RETRIES", "0"},
               {"PAINTLOCK_CHECKOUT_RATE_LIMIT", "off"}}});
  constexpr int kBuyers = 8;
  std::vector<Reply> replies(kBuyers);
  std::atomic<int> answered{0};
  std::vector<std::thread> buyers;
  for (int i = 0; i < kBuyers; ++i) {
    buyers.emplace_back([&, i] {
      replies[i] =
          PostJson(gw.base(), "/v1/checkout", {{"paintings", {"p" + std::to_string(i + 1)}}});
      ++answered;
    });
  }
  // Two checkouts wait on Stripe (until STRIPE_DEADLINE_MS); the other six
  // are refused without waiting.
  REQUIRE(Eventually([&] { return answered.load() >= kBuyers - 2; }, milliseconds(20000)));
  // Two workers are hung on Stripe; the other two serve everyone else, long
  // before the hung calls' deadline.
  RawClient client(gw.port());
  REQUIRE(client.Send("GET /v1/paintings HTTP/1.1\r\nHost: x\r\n\r\n"));
  CHECK(client.ReadResponse(milliseconds(4000)) == 200);
  // The hung two end at STRIPE_DEADLINE_MS, before the 20 s read timeout and the fake's 30 s.
  for (auto& t : buyers) t.join();
  for (const auto& r : replies) {
    CAPTURE(r.body);
    CHECK(r.status == 503);
    CHECK(r.json.value("code", "") == "stripe_unavailable");
    CHECK(!r.Header("Retry-After").empty());
  }
  CHECK(Eventually([&] { return !gw.process().Events("stripe_budget_full").empty(); }));
  // Nothing stays held for a checkout that could not start.
  CHECK(db.Scalar("SELECT count(*) FROM reservations WHERE state = 'held'") == "0");
  CheckInvariants(db);
}
