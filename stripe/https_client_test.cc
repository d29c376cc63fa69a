// HttpsStripeClient against an in-process httplib server standing in for
// Stripe: loopback only, port 0, injected sleep (retries never wait), a fixed
// jitter seed, and no assertion on elapsed time.
#include "stripe/https_client.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/form.h"
#include "base/log.h"
#include "base/loopback.h"

namespace paintlock::stripe {
namespace {

using std::chrono::milliseconds;

constexpr char kSecretKey[] = "sk_test_paintlock_do_not_log_me";

struct Recorded {
  std::string method;
  std::string path;    // as decoded by httplib
  std::string target;  // as sent
  std::string body;
  httplib::Headers headers;
  httplib::Params params;  // httplib's own decoding of a form body
  int remote_port = 0;

  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
  bool HasHeader(const std::string& name) const { return headers.count(name) > 0; }
};

struct Reply {
  Reply() = default;
  Reply(int status_in, std::string body_in, std::map<std::string, std::string> headers_in = {},
        bool stall_in = false)
      : status(status_in),
        body(std::move(body_in)),
        headers(std::move(headers_in)),
        stall(stall_in) {}

  int status = 200;
  std::string body;
  std::map<std::string, std::string> headers;
  bool stall = false;  // hold the answer until the stand-in is released
};

// A scripted Stripe: answers requests with the scripted replies in order (the
// last one repeats) and records what it received.
class StripeStandIn {
 public:
  explicit StripeStandIn(
      std::unique_ptr<httplib::Server> server = std::make_unique<httplib::Server>())
      : server_(std::move(server)) {
    REQUIRE(server_->is_valid());
    auto handler = [this](const httplib::Request& req, httplib::Response& res) {
      Handle(req, res);
    };
    server_->set_tcp_nodelay(true);
    server_->Get(".*", handler);
    server_->Post(".*", handler);
    port_ = server_->bind_to_any_port("127.0.0.1");
    REQUIRE(port_ > 0);
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    // stop() is a no-op until the accept loop runs; wait for it so the
    // destructor can never hang.
    while (!server_->is_running()) std::this_thread::sleep_for(milliseconds(1));
  }

  ~StripeStandIn() {
    Release();
    server_->stop();
    thread_.join();
  }

  void Script(std::vector<Reply> replies) {
    std::lock_guard<std::mutex> lock(mu_);
    replies_ = std::move(replies);
    next_ = 0;
  }

  std::vector<Recorded> Requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

  // Lets stalled handlers answer.
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

  int port() const { return port_; }
  std::string HttpBase() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string HttpsBase() const { return "https://127.0.0.1:" + std::to_string(port_); }

 private:
  void Handle(const httplib::Request& req, httplib::Response& res) {
    Reply reply;
    {
      std::unique_lock<std::mutex> lock(mu_);
      requests_.push_back(
          {req.method, req.path, req.target, req.body, req.headers, req.params, req.remote_port});
      if (!replies_.empty()) reply = replies_[std::min(next_++, replies_.size() - 1)];
      if (reply.stall) cv_.wait_for(lock, std::chrono::seconds(10), [this] { return released_; });
    }
    res.status = reply.status;
    for (const auto& [name, value] : reply.headers) res.set_header(name, value);
    res.set_content(reply.body, "application/json");
  }

  std::unique_ptr<httplib::Server> server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Reply> replies_;      // guarded by mu_
  std::size_t next_ = 0;            // guarded by mu_
  std::vector<Recorded> requests_;  // guarded by mu_
  bool released_ = false;           // guarded by mu_
};

std::string SessionJson(const std::string& id = "cs_test_1", const std::string& status = "open") {
  return R"({"id":")" + id + R"(","object":"checkout.session","status":")" + status +
         R"(","payment_status":"unpaid","url":"https://checkout.stripe.com/c/pay/)" + id +
         R"(","payment_intent":null,"client_reference_id":"res_1","currency":"eur",)"
         R"("amount_total":125990,"expires_at":1796212800,"created":1796209200,)"
         R"("livemode":false,"mode":"payment","metadata":{"reservation_id":"res_1"}})";
}

std::string ErrorJson(const std::string& type, const std::string& message,
                      const std::string& extra = "") {
  return R"({"error":{"type":")" + type + R"(","message":")" + message + "\"" + extra + "}}";
}

struct Sleeps {
  std::vector<milliseconds> calls;
};

HttpsClientOptions Options(const std::string& base, Sleeps* sleeps) {
  HttpsClientOptions o;
  o.api_base = base;
  o.secret_key = kSecretKey;
  o.connect_timeout = std::chrono::seconds(5);
  o.read_timeout = std::chrono::seconds(10);
  o.jitter_seed = 42;
  o.sleep = [sleeps](milliseconds d) { sleeps->calls.push_back(d); };
  return o;
}

std::unique_ptr<HttpsStripeClient> MustCreate(const HttpsClientOptions& o) {
  std::string error;
  auto client = HttpsStripeClient::Create(o, &error);
  INFO(error);
  REQUIRE(client != nullptr);
  return client;
}

std::string CreateError(const HttpsClientOptions& o) {
  std::string error;
  auto client = HttpsStripeClient::Create(o, &error);
  CHECK(client == nullptr);
  CHECK_FALSE(error.empty());
  if (!o.secret_key.empty()) CHECK(error.find(o.secret_key) == std::string::npos);
  return error;
}

CreateSessionParams SampleParams() {
  CreateSessionParams p;
  p.idempotency_key = "res_1";
  p.line_items = {{"Nymph\xC3\xA9"
                   "as & Co",
                   125000, "eur"},
                  {"Study #2", 990, "eur"}};
  p.success_url = "https://shop.example/ok?session_id={CHECKOUT_SESSION_ID}";
  p.cancel_url = "https://shop.example/cart";
  p.expires_at_unix = 1796212800;
  p.client_reference_id = "res_1";
  p.metadata = {{"reservation_id", "res_1"}};
  return p;
}

std::string FormValue(const std::string& body, const std::string& key) {
  base::FormFields fields;
  REQUIRE(base::DecodeForm(body, &fields));
  for (const auto& [k, v] : fields) {
    if (k == key) return v;
  }
  return "<missing>";
}

// A loopback port with nothing listening on it.
int UnusedPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr = paintlock::base::LoopbackAddress();
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Collects what the process writes to stdout (where base/log.h writes).
class StdoutCapture {
 public:
  StdoutCapture() {
    char path[] = "/tmp/paintlock-stdout-XXXXXX";
    int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    path_ = path;
    paintlock::base::FlushLog();  // earlier lines stay out of the capture
    std::fflush(stdout);
    saved_ = ::dup(1);
    ::dup2(fd, 1);
    ::close(fd);
  }
  std::string Finish() {
    // Log lines are written by the logger's own thread: wait for them, or a
    // line logged just before may reach the real stdout after the restore.
    paintlock::base::FlushLog();
    std::fflush(stdout);
    ::dup2(saved_, 1);
    ::close(saved_);
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    std::filesystem::remove(path_);
    return text.str();
  }

 private:
  std::string path_;
  int saved_ = -1;
};

// ---- Factory ---------------------------------------------------------------

TEST_CASE("Create accepts https anywhere and http on loopback only") {
  Sleeps sleeps;
  for (const char* ok :
       {"https://api.stripe.com", "https://api.stripe.com/", "https://api.stripe.com:8443",
        "HTTPS://API.Stripe.com", "http://127.0.0.1:12111", "http://127.9.8.7",
        "http://localhost:1/", "http://[::1]:12111", "https://[2001:db8::1]:443"}) {
    std::string error;
    CAPTURE(ok);
    auto client = HttpsStripeClient::Create(Options(ok, &sleeps), &error);
    CHECK(client != nullptr);
    CHECK(error.empty());
  }
}

TEST_CASE("Create refuses plain http to a non-loopback host, naming the problem") {
  Sleeps sleeps;
  for (const char* base : {"http://api.stripe.com", "http://10.0.0.1:12111", "http://128.0.0.1",
                           "http://[::2]:80", "http://localhost.evil.example"}) {
    CAPTURE(base);
    std::string error = CreateError(Options(base, &sleeps));
    CHECK(error.find("plain http") != std::string::npos);
    CHECK(error.find("loopback") != std::string::npos);
  }
}

TEST_CASE("Create refuses malformed api_base values") {
  Sleeps sleeps;
  for (const char* base :
       {"", "api.stripe.com", "ftp://api.stripe.com", "https://", "https://api.stripe.com/v1",
        "https://api.stripe.com/v1/", "https://api.stripe.com?x=1", "https://api.stripe.com#f",
        "https://user@api.stripe.com", "https://api.stripe.com:", "https://api.stripe.com:0",
        "https://api.stripe.com:65536", "https://api.stripe.com:12ab", "http://::1:80",
        "http://[::1", "http://[::1]x", "http://[zz::1]:80", "https://api stripe.com"}) {
    CAPTURE(base);
    std::string error = CreateError(Options(base, &sleeps));
    CHECK(error.find("api_base") != std::string::npos);
  }
}

TEST_CASE("Create validates the key, version, CA file, timeouts and retry settings") {
  Sleeps sleeps;
  const std::string base = "https://api.stripe.com";
  HttpsClientOptions o = Options(base, &sleeps);

  SUBCASE("empty key") {
    o.secret_key = "";
    CHECK(CreateError(o).find("secret_key") != std::string::npos);
  }
  SUBCASE("key with a newline (header injection) is refused without echoing it") {
    o.secret_key = "sk_test_abc\r\nX-Evil: 1";
    std::string error = CreateError(o);
    CHECK(error.find("secret_key") != std::string::npos);
    CHECK(error.find("sk_test_abc") == std::string::npos);
  }
  SUBCASE("empty version") {
    o.stripe_version = "";
    CHECK(CreateError(o).find("stripe_version") != std::string::npos);
  }
  SUBCASE("missing CA file") {
    o.ca_file = "/nonexistent/paintlock-ca.pem";
    CHECK(CreateError(o).find("ca_file") != std::string::npos);
  }
  SUBCASE("CA file that holds no certificate") {
    char path[] = "/tmp/paintlock-not-a-ca-XXXXXX";
    int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, "hello\n", 6) == 6);
    ::close(fd);
    o.ca_file = path;
    CHECK(CreateError(o).find("ca_file") != std::string::npos);
    std::filesystem::remove(path);
  }
  SUBCASE("non-positive timeout") {
    o.read_timeout = milliseconds(0);
    CHECK(CreateError(o).find("timeout") != std::string::npos);
  }
  SUBCASE("negative retries") {
    o.max_retries = -1;
    CHECK(CreateError(o).find("max_retries") != std::string::npos);
  }
  SUBCASE("max delay below base delay") {
    o.retry_base_delay = milliseconds(1000);
    o.retry_max_delay = milliseconds(10);
    CHECK(CreateError(o).find("retry") != std::string::npos);
  }
  SUBCASE("the defaults are sane") {
    HttpsClientOptions d;
    CHECK(d.api_base == "https://api.stripe.com");
    CHECK(d.stripe_version == "2026-10-28.endive");
    CHECK(d.connect_timeout == std::chrono::seconds(5));
    CHECK(d.read_timeout == std::chrono::seconds(20));
    CHECK(d.max_retries == 2);
    CHECK(d.retry_base_delay == milliseconds(500));
    CHECK(d.retry_max_delay == std::chrono::seconds(5));
    d.secret_key = kSecretKey;
    std::string error;
    CHECK(HttpsStripeClient::Create(d, &error) != nullptr);
  }
}

TEST_CASE("RetryDelay: exponential, capped, halved-to-full jitter, never below base") {
  const milliseconds base(500), max(5000);
  CHECK(RetryDelay(1, base, max, 0.0) == milliseconds(500));  // 250 raised to base
  CHECK(RetryDelay(1, base, max, 0.999) == milliseconds(499 + 1));
  CHECK(RetryDelay(2, base, max, 0.0) == milliseconds(500));
  CHECK(RetryDelay(2, base, max, 0.5) == milliseconds(750));
  CHECK(RetryDelay(3, base, max, 0.0) == milliseconds(1000));
  CHECK(RetryDelay(3, base, max, 0.5) == milliseconds(1500));
  CHECK(RetryDelay(5, base, max, 0.0) == milliseconds(2500));  // 8000 capped to 5000, halved
  CHECK(RetryDelay(5, base, max, 0.9999) <= max);
  CHECK(RetryDelay(1000, base, max, 0.5) == milliseconds(3750));  // no overflow
  CHECK(RetryDelay(1, milliseconds(0), milliseconds(0), 0.5) == milliseconds(0));
}

// ---- Requests --------------------------------------------------------------

TEST_CASE("CreateCheckoutSession sends the form fields and headers Stripe expects") {
  StripeStandIn stripe;
  stripe.Script({{200, SessionJson()}});
  Sleeps sleeps;
  auto client = MustCreate(Options(stripe.HttpBase(), &sleeps));

  CreateSessionParams p = SampleParams();
  StripeResult<CheckoutSession> result = client->CreateCheckoutSession(p);
  REQUIRE(ErrorOf(result) == nullptr);

  std::vector<Recorded> requests = stripe.Requests();
  REQUIRE(requests.size() == 1);
  const Recorded& r = requests[0];
  CHECK(r.method == "POST");
  CHECK(r.path == "/v1/checkout/sessions");
  CHECK(r.Header("Authorization") == std::string("Bearer ") + kSecretKey);
  CHECK(r.Header("Stripe-Version") == "2026-10-28.endive");
  CHECK(r.Header("Content-Type") == "application/x-www-form-urlencoded");
  CHECK(r.Header("Idempotency-Key") == "res_1");
  CHECK(r.Header("User-Agent").find("paintlock") != std::string::npos);

  CHECK(FormValue(r.body, "mode") == "payment");
  CHECK(FormValue(r.body, "line_items[0][quantity]") == "1");
  CHECK(FormValue(r.body, "line_items[0][price_data][currency]") == "eur");
  CHECK(FormValue(r.body, "line_items[0][price_data][unit_amount]") == "125000");
  CHECK(FormValue(r.body, "line_items[0][price_data][product_data][name]") ==
        "Nymph\xC3\xA9"
        "as & Co");
  CHECK(FormValue(r.body, "line_items[1][quantity]") == "1");
  CHECK(FormValue(r.body, "line_items[1][price_data][unit_amount]") == "990");
  CHECK(FormValue(r.body, "line_items[1][price_data][product_data][name]") == "Study #2");
  CHECK(FormValue(r.body, "success_url") == p.success_url);
  CHECK(FormValue(r.body, "cancel_url") == p.cancel_url);
  CHECK(FormValue(r.body, "expires_at") == "1796212800");
  CHECK(FormValue(r.body, "client_reference_id") == "res_1");
  CHECK(FormValue(r.body, "metadata[reservation_id]") == "res_1");
  // httplib's independent form decoder reads the same values.
  auto param = [&r](const std::string& k) {
    auto it = r.params.find(k);
    return it == r.params.end() ? std::string("<missing>") : it->second;
  };
  CHECK(param("line_items[0][price_data][product_data][name]") ==
        "Nymph\xC3\xA9"
        "as & Co");
  CHECK(param("success_url") == p.success_url);
  CHECK(param("metadata[reservation_id]") == "res_1");
}

TEST_CASE("Checkout Session JSON is parsed, tolerating nulls, expansions and missing fields") {
  StripeStandIn stripe;
  Sleeps sleeps;
  auto client = MustCreate(Options(stripe.HttpBase(), &sleeps));

  SUBCASE("full open session, url present, payment_intent null") {
    stripe.Script({{200, SessionJson("cs_test_a1")}});
    auto result = client->RetrieveCheckoutSession("cs_test_a1");
    REQUIRE(ErrorOf(result) == nullptr);
    const CheckoutSession& s = std::get<CheckoutSession>(result);
    CHECK(s.id == "cs_test_a1");
    CHECK(s.status == "open");
    CHECK(s.payment_status == "unpaid");
    CHECK(s.url == "https://checkout.stripe.com/c/pay/cs_test_a1");
    CHECK(s.payment_intent.empty());
    CHECK(s.client_reference_id == "res_1");
    CHECK(s.currency == "eur");
    CHECK(s.amount_total == 125990);
    CHECK(s.expires_at_unix == 1796212800);
    CHECK(s.created_unix == 1796209200);
    CHECK(s.metadata == std::map<std::string, std::string>{{"reservation_id", "res_1"}});
  }
  SUBCASE("complete session: url null, payment_intent expanded") {
    stripe.Script({{200, R"({"id":"cs_2","object":"checkout.session","status":"complete",
        "payment_status":"paid","url":null,"client_reference_id":null,"amount_total":null,
        "payment_intent":{"id":"pi_123","object":"payment_intent","amount":500},
        "metadata":{"a":"1","n":7,"z":null},"some_future_field":{"x":[1,2]}})"}});
    auto result = client->RetrieveCheckoutSession("cs_2");
    REQUIRE(ErrorOf(result) == nullptr);
    const CheckoutSession& s = std::get<CheckoutSession>(result);
    CHECK(s.status == "complete");
    CHECK(s.payment_status == "paid");
    CHECK(s.url.empty());
    CHECK(s.payment_intent == "pi_123");
    CHECK(s.client_reference_id.empty());
    CHECK(s.amount_total == 0);
    CHECK(s.metadata == std::map<std::string, std::string>{{"a", "1"}, {"n", "7"}});
  }
  SUBCASE("minimal session: only id; payment_intent as a plain id") {
    stripe.Script({{200, R"({"id":"cs_3","payment_intent":"pi_9"})"}});
    auto result = client->RetrieveCheckoutSession("cs_3");
    REQUIRE(ErrorOf(result) == nullptr);
    CHECK(std::get<CheckoutSession>(result).id == "cs_3");
    CHECK(std::get<CheckoutSession>(result).payment_intent == "pi_9");
    CHECK(std::get<CheckoutSession>(result).status.empty());
  }
  SUBCASE("a 200 that is not a session is an api_error, not a session") {
    for (const char* body : {"<html>ok</html>", "{}", R"({"id":"re_1","object":"refund"})",
                             R"(["cs_1"])", R"({"id":42})"}) {
      CAPTURE(body);
      stripe.Script({{200, body}});
      auto result = client->RetrieveCheckoutSession("cs_x");
      REQUIRE(ErrorOf(result) != nullptr);
      CHECK(ErrorOf(result)->type == "api_error");
      CHECK(ErrorOf(result)->http_status == 200);
      CHECK_FALSE(ErrorOf(result)->Unavailable());
    }
  }
}

TEST_CASE("RetrieveCheckoutSession is a GET without a body or Idempotency-Key") {
  StripeStandIn stripe;
  stripe.Script({{200, SessionJson()}});
  Sleeps sleeps;
  auto client = MustCreate(Options(stripe.HttpBase(), &sleeps));
  REQUIRE(ErrorOf(client->RetrieveCheckoutSession("cs_test_1")) == nullptr);
  // An id can never change the path: '/', '?' and '#' are escaped.
  client->RetrieveCheckoutSession("cs_1/expire?x=1#f");

  auto requests = stripe.Requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].method == "GET");
  CHECK(requests[0].path == "/v1/checkout/sessions/cs_test_1");
  CHECK(requests[0].body.empty());
  CHECK_FALSE(requests[0].HasHeader("Idempotency-Key"));
  CHECK(requests[0].Header("Authorization") == std::string("Bearer ") + kSecretKey);
  CHECK(requests[0].Header("Stripe-Version") == "2026-10-28.endive");
  CHECK(requests[1].target == "/v1/checkout/sessions/cs_1%2Fexpire%3Fx%3D1%23f");
}

TEST_CASE("ExpireCheckoutSession posts to /expire with a per-call key reused by its retries") {
  StripeStandIn stripe;
  Sleeps sleeps;
  auto client = MustCreate(Options(stripe.HttpBase(), &sleeps));

  stripe.Script({{500, ErrorJson("api_error", "boom")}, {200, SessionJson("cs_e", "expired")}});
  auto first = client->ExpireCheckoutSession("cs_e");
  REQUIRE(ErrorOf(first) == nullptr);
  CHECK(std::get<CheckoutSession>(first).status == "expired");

  stripe.Script({{200, SessionJson("cs_e", "expired")}});
  REQUIRE(ErrorOf(client->ExpireCheckoutSession("cs_e")) == nullptr);

  auto requests = stripe.Requests();
  REQUIRE(requests.size() == 3);
  for (const Recorded& r : requests) {
    CHECK(r.method == "POST");
    CHECK(r.path == "/v1/checkout/sessions/cs_e/expire");
    CHECK(r.Header("Idempotency-Key").rfind("expire-cs_e-", 0) == 0);
    CHECK(r.Header("Content-Type") == "application/x-www-form-urlencoded");
  }
  CHECK(requests[0].Header("Idempotency-Key") == requests[1].Header("Idempotency-Key"));
  CHECK(requests[1].Header("Idempotency-Key") != requests[2].Header("Idempotency-Key"));
}

TEST_CASE("Expiring a session that is not open surfaces Stripe's 400 without retrying") {
  StripeStandIn stripe;
  stripe.Script({{400, ErrorJson("invalid_request_error",
                                 "Only Checkout Sessions with a status in [\\\"open\\\"] can be "
                                 "expired. This Checkout Session has a status of `complete`.")}});
  Sleeps sleeps;
  auto client = MustCreate(Options(stripe.HttpBase(), &sleeps));
  auto result = client->ExpireCheckoutSession("cs_done");
  REQUIRE(ErrorOf(result) != nullptr);
  CHECK(ErrorOf(result)->http_status == 400);
  CHECK(ErrorOf(result)->type == "invalid_request_error");
  CHECK(ErrorOf(result)->code.empty());
  CHECK(ErrorOf(result)->message.find("status in [\"open\"]") != std::string::npos);
  CHECK_FALSE(ErrorOf(result)->Unavailable());
  CHECK(stripe.Requests().size() == 1);
  CHECK(sleeps.calls.empty());
}

TEST_CASE("CreateRefund posts payment_intent with the caller's key and parses the refund") {
  StripeStandIn stripe;
  stripe.Script({{200, R"({"id":"re_1","object":"refund","status":"succeeded",
                          "payment_intent":"pi_1","amount":125990,"currency":"eur"})"}});
  Sleeps sleeps;
  auto client = MustCreate(Options(stripe.HttpBase(), &sleeps));
  auto result = client->CreateRefund("pi_1", "refund-res_1");
  REQUIRE(ErrorOf(result) == nullptr);
  const Refund& refund = std::get<Refund>(result);
  CHECK(refund.id == "re_1");
  CHECK(refund.status == "succeeded");
  CHECK(refund.payment_intent == "pi_1");
  CHECK(refund.amount == 125990);

  auto requests = stripe.Requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].method == "POST");
  CHECK(requests[0].path == "/v1/refunds");
  CHECK(requests[0].body == "payment_intent=pi_1");
  CHECK(requests[0].Header("Idempotency-Key") == "refund-res_1");
  CHECK(requests[0].Header("Content-Type") == "application/x-www-form-urlencoded");
}

TEST_CASE("Arguments Stripe could only refuse are refused locally, without a request") {
  StripeStandIn stripe;
  Sleeps sleeps;
  auto client = MustCreate(Options(stripe.HttpBase(), &sleeps));
  CreateSessionParams p = SampleParams();

  p.idempotency_key = "";
  auto no_key = client->CreateCheckoutSession(p);
  REQUIRE(ErrorOf(no_key) != nullptr);
  CHECK(ErrorOf(no_key)->http_status == 400);
  CHECK(ErrorOf(no_key)->type == "invalid_request_error");
  CHECK(ErrorOf(no_key)->param == "idempotency_key");

  p.idempotency_key = std::string(256, 'k');
  CHECK(ErrorOf(client->CreateCheckoutSession(p))->param == "idempotency_key");
  p.idempotency_key = "res\n1";
  CHECK(ErrorOf(client->CreateCheckoutSession(p))->param == "idempotency_key");
  CHECK(ErrorOf(client->CreateRefund("pi_1", ""))->param == "idempotency_key");
  CHECK(ErrorOf(client->CreateRefund("", "k"))->param == "payment_intent");
  CHECK(ErrorOf(client->RetrieveCheckoutSession(""))->param == "id");
  CHECK(ErrorOf(client->ExpireCheckoutSession(""))->param == "id");
  CHECK(ErrorOf(client->ExpireCheckoutSession(std::string(300, 'c')))->param == "id");
  CHECK_FALSE(ErrorOf(client->RetrieveCheckoutSession(""))->Unavailable());
  CHECK(stripe.Requests().empty());
}

// ---- Retries ---------------------------------------------------------------

TEST_CASE("500, 500, 200: success after two retries, same key, growing delays") {
  StripeStandIn stripe;
  stripe.Script({{500, ErrorJson("api_error", "first")},
                 {500, ErrorJson("api_error", "second")},
                 {200, SessionJson()}});
  Sleeps sleeps;
  auto client = MustCreate(Options(stripe.HttpBase(), &sleeps));

  auto result = client->CreateCheckoutSession(SampleParams());
  REQUIRE(ErrorOf(result) == nullptr);
  CHECK(std::get<CheckoutSession>(result).id == "cs_test_1");

  auto requests = stripe.Requests();
  REQUIRE(requests.size() == 3);
  for (const Recorded& r : requests) {
    CHECK(r.Header("Idempotency-Key") == "res_1");
    CHECK(r.body == requests[0].body);
  }
  REQUIRE(sleeps.calls.size() == 2);
  CHECK(sleeps.calls[0] == milliseconds(500));  // min(500·2^0, 5000), jittered, floored at base
  CHECK(sleeps.calls[1] >= milliseconds(500));
  CHECK(sleeps.calls[1] <= milliseconds(1000));
  CHECK(sleeps.calls[1] > sleeps.calls[0]);
}

TEST_CASE("409 and 429 are retried") {
  for (int status : {409, 429}) {
    CAPTURE(status);
    StripeStandIn stripe;
    stripe.Script({{status, ErrorJson(status == 409 ? "idempotency_error" : "invalid_request_error",
                                      "try later")},
                   {200, SessionJson()}});
    Sleeps sleeps;
    auto client = MustCreate(Options(stripe.HttpBase(), &sleeps));
    auto result = client->CreateCheckoutSession(SampleParams());
    REQUIRE(ErrorOf(result) == nullptr);
    auto requests = stripe.Requests();
    REQUIRE(requests.size() == 2);
    CHECK(requests[0].Header("Idempotency-Key") == requests[1].Header("Idempotency-Key"));
    CHECK(sleeps.calls.size() == 1);
  }
}

TEST_CASE("Stripe-Should-Retry overrides the status rule") {
  StripeStandIn stripe;
  Sleeps sleeps;
  auto client = MustCreate(Options(stripe.HttpBase(), &sleeps));

  SUBCASE("false on a 500: no retry, the 500 is returned") {
    stripe.Script(
        {{500, ErrorJson("api_error", "stored failure"), {{"Stripe-Should-Retry", "false"}}},
         {200, SessionJson()}});
    auto result = client->CreateCheckoutSession(SampleParams());
    REQUIRE(ErrorOf(result) != nullptr);
    CHECK(ErrorOf(result)->http_status == 500);
    CHECK(ErrorOf(result)->message == "stored failure");
    CHECK(ErrorOf(result)->Unavailable());
    CHECK(stripe.Requests().size() == 1);
    CHECK(sleeps.calls.empty());
  }
  SUBCASE("true on a 400: retried") {
    stripe.Script({{400,
                    ErrorJson("invalid_request_error", "lock timeout"),
                    {{"Stripe-Should-Retry", "true"}}},
                   {200, SessionJson()}});
    REQUIRE(ErrorOf(client->CreateCheckoutSession(SampleParams())) == nullptr);
    CHECK(stripe.Requests().size() == 2);
    CHECK(sleeps.calls.size() == 1);
  }
}

TEST_CASE("400 invalid_request_error: no retry, Stripe's fields surface") {
  StripeStandIn stripe;
  stripe.Script({{400, ErrorJson("invalid_request_error",
                                 "The `expires_at` timestamp must be at least 30 minutes ahead.",
                                 R"(,"code":"parameter_invalid_integer","param":"expires_at")")},
                 {200, SessionJson()}});
  Sleeps sleeps;
  auto client = MustCreate(Options(stripe.HttpBase(), &sleeps));
  auto result = client->CreateCheckoutSession(SampleParams());
  REQUIRE(ErrorOf(result) != nullptr);
  const StripeError& e = *ErrorOf(result);
  CHECK(e.http_status == 400);
  CHECK(e.type == "invalid_request_error");
  CHECK(e.code == "parameter_invalid_integer");
  CHECK(e.param == "expires_at");
  CHECK(e.message == "The `expires_at` timestamp must be at least 30 minutes ahead.");
  CHECK_FALSE(e.Unavailable());
  CHECK(stripe.Requests().size() == 1);
  CHECK(sleeps.calls.empty());
}

TEST_CASE("Other refusals (401, 402, 403, 404) are not retried") {
  for (int status : {401, 402, 403, 404}) {
    CAPTURE(status);
    StripeStandIn stripe;
    stripe.Script({{status, ErrorJson("invalid_request_error", "no")}, {200, SessionJson()}});
    Sleeps sleeps;
    auto client = MustCreate(Options(stripe.HttpBase(), &sleeps));
    auto result = client->RetrieveCheckoutSession("cs_1");
    REQUIRE(ErrorOf(result) != nullptr);
    CHECK(ErrorOf(result)->http_status == status);
    CHECK(stripe.Requests().size() == 1);
  }
}

TEST_CASE("Retries exhausted: the last error is returned and says Unavailable") {
  StripeStandIn stripe;
  stripe.Script({{503, ErrorJson("api_error", "attempt 1")},
                 {503, ErrorJson("api_error", "attempt 2")},
                 {503, ErrorJson("api_error", "attempt 3")},
                 {200, SessionJson()}});
  Sleeps sleeps;
  auto client = MustCreate(Options(stripe.HttpBase(), &sleeps));
  auto result = client->CreateCheckoutSession(SampleParams());
  REQUIRE(ErrorOf(result) != nullptr);
  CHECK(ErrorOf(result)->http_status == 503);
  CHECK(ErrorOf(result)->type == "api_error");
  CHECK(ErrorOf(result)->message == "attempt 3");
  CHECK(ErrorOf(result)->Unavailable());
  CHECK(stripe.Requests().size() == 3);  // 1 + max_retries (2)
  CHECK(sleeps.calls.size() == 2);
}

TEST_CASE("max_retries = 0 sends exactly once") {
  StripeStandIn stripe;
  stripe.Script({{500, ErrorJson("api_error", "x")}, {200, SessionJson()}});
  Sleeps sleeps;
  HttpsClientOptions o = Options(stripe.HttpBase(), &sleeps);
  o.max_retries = 0;
  auto client = MustCreate(o);
  CHECK(ErrorOf(client->CreateCheckoutSession(SampleParams())) != nullptr);
  CHECK(stripe.Requests().size() == 1);
  CHECK(sleeps.calls.empty());
}

TEST_CASE("Delays grow and cap with more retries") {
  StripeStandIn stripe;
  stripe.Script({{502, "<html>bad gateway</html>"}});
  Sleeps sleeps;
  HttpsClientOptions o = Options(stripe.HttpBase(), &sleeps);
  o.max_retries = 6;
  auto client = MustCreate(o);
  auto result = client->RetrieveCheckoutSession("cs_1");
  REQUIRE(ErrorOf(result) != nullptr);
  // A non-JSON error body is an api_error with a generic message.
  CHECK(ErrorOf(result)->type == "api_error");
  CHECK(ErrorOf(result)->http_status == 502);
  CHECK(ErrorOf(result)->message.find("502") != std::string::npos);
  CHECK(stripe.Requests().size() == 7);
  REQUIRE(sleeps.calls.size() == 6);
  const milliseconds caps[] = {milliseconds(500),  milliseconds(1000), milliseconds(2000),
                               milliseconds(4000), milliseconds(5000), milliseconds(5000)};
  for (std::size_t i = 0; i < sleeps.calls.size(); ++i) {
    CAPTURE(i);
    CHECK(sleeps.calls[i] <= caps[i]);
    CHECK(sleeps.calls[i] >= std::max(milliseconds(500), caps[i] / 2));
  }
}

TEST_CASE("The same jitter seed gives the same delays") {
  StripeStandIn stripe;
  stripe.Script({{500, ErrorJson("api_error", "x")}});
  Sleeps a, b;
  HttpsClientOptions oa = Options(stripe.HttpBase(), &a), ob = Options(stripe.HttpBase(), &b);
  oa.max_retries = ob.max_retries = 4;
  MustCreate(oa)->RetrieveCheckoutSession("cs_1");
  MustCreate(ob)->RetrieveCheckoutSession("cs_1");
  CHECK(a.calls == b.calls);
  CHECK(a.calls.size() == 4);
}

TEST_CASE("Connection refused: http_status 0, connection_error, retried") {
  Sleeps sleeps;
  auto client = MustCreate(Options("http://127.0.0.1:" + std::to_string(UnusedPort()), &sleeps));
  auto result = client->CreateCheckoutSession(SampleParams());
  REQUIRE(ErrorOf(result) != nullptr);
  const StripeError& e = *ErrorOf(result);
  CHECK(e.http_status == 0);
  CHECK(e.type == "connection_error");
  CHECK(e.Unavailable());
  CHECK(e.message.find("Connection") != std::string::npos);
  CHECK(e.message.find(kSecretKey) == std::string::npos);
  CHECK(sleeps.calls.size() == 2);
}

TEST_CASE("Read timeout: retried with the same Idempotency-Key") {
  StripeStandIn stripe;
  stripe.Script({{200, SessionJson("cs_slow"), {}, /*stall=*/true}, {200, SessionJson("cs_fast")}});
  Sleeps sleeps;
  HttpsClientOptions o = Options(stripe.HttpBase(), &sleeps);
  o.read_timeout = milliseconds(500);
  auto client = MustCreate(o);
  auto result = client->CreateCheckoutSession(SampleParams());
  stripe.Release();
  REQUIRE(ErrorOf(result) == nullptr);
  CHECK(std::get<CheckoutSession>(result).id == "cs_fast");
  auto requests = stripe.Requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].Header("Idempotency-Key") == "res_1");
  CHECK(requests[1].Header("Idempotency-Key") == "res_1");
  CHECK(sleeps.calls.size() == 1);
}

TEST_CASE("Retries are logged without the secret key or the request body") {
  StripeStandIn stripe;
  stripe.Script(
      {{500, ErrorJson("api_error", "x"), {{"Request-Id", "req_abc"}}}, {200, SessionJson()}});
  Sleeps sleeps;
  auto client = MustCreate(Options(stripe.HttpBase(), &sleeps));
  StdoutCapture capture;
  auto result = client->CreateCheckoutSession(SampleParams());
  std::string out = capture.Finish();
  REQUIRE(ErrorOf(result) == nullptr);
  CHECK(out.find("\"event\":\"stripe_retry\"") != std::string::npos);
  CHECK(out.find("\"path\":\"/v1/checkout/sessions\"") != std::string::npos);
  CHECK(out.find("\"method\":\"POST\"") != std::string::npos);
  CHECK(out.find("\"status\":500") != std::string::npos);
  CHECK(out.find("\"attempt\":1") != std::string::npos);
  CHECK(out.find("req_abc") != std::string::npos);
  CHECK(out.find(kSecretKey) == std::string::npos);
  CHECK(out.find("Study") == std::string::npos);
  CHECK(out.find("shop.example") == std::string::npos);
}

// ---- Connections -------------------------------------------------------------

TEST_CASE("Sequential calls reuse one keep-alive connection") {
  StripeStandIn stripe;
  stripe.Script({{200, SessionJson()}});
  Sleeps sleeps;
  auto client = MustCreate(Options(stripe.HttpBase(), &sleeps));
  for (int i = 0; i < 3; ++i) REQUIRE(ErrorOf(client->RetrieveCheckoutSession("cs_1")) == nullptr);
  std::set<int> ports;
  for (const Recorded& r : stripe.Requests()) ports.insert(r.remote_port);
  CHECK(ports.size() == 1);
}

TEST_CASE("Concurrent calls from many threads all succeed") {
  StripeStandIn stripe;
  stripe.Script({{200, SessionJson()}});
  Sleeps sleeps;  // never called: no failures
  auto client = MustCreate(Options(stripe.HttpBase(), &sleeps));
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&client, &ok] {
      for (int i = 0; i < 10; ++i) {
        if (ErrorOf(client->RetrieveCheckoutSession("cs_1")) == nullptr) ++ok;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(ok.load() == 40);
  CHECK(stripe.Requests().size() == 40);
}

// ---- TLS ----------------------------------------------------------------------

// A throwaway CA and server certificates made with the openssl CLI.
class TestPki {
 public:
  TestPki() {
    char dir[] = "/tmp/paintlock-stripe-tls-XXXXXX";
    REQUIRE(::mkdtemp(dir) != nullptr);
    dir_ = dir;
    Run("openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
        " -keyout " +
        Path("ca.key") + " -out " + Path("ca.pem") +
        " -days 2 -subj '/CN=paintlock test CA'"
        " -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign");
  }
  ~TestPki() { std::filesystem::remove_all(dir_); }

  // Issues `name`.pem/`name`.key signed by the CA with the given subject CN
  // and subjectAltName.
  void Issue(const std::string& name, const std::string& cn, const std::string& san) {
    std::ofstream(Path(name + ".ext")) << "subjectAltName=" << san
                                       << "\nbasicConstraints=CA:FALSE"
                                          "\nextendedKeyUsage=serverAuth\n";
    Run("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " +
        Path(name + ".key") + " -out " + Path(name + ".csr") + " -subj '/CN=" + cn + "'");
    Run("openssl x509 -req -in " + Path(name + ".csr") + " -CA " + Path("ca.pem") + " -CAkey " +
        Path("ca.key") + " -set_serial " + std::to_string(++serial_) + " -days 2 -out " +
        Path(name + ".pem") + " -extfile " + Path(name + ".ext"));
  }

  std::string Path(const std::string& file) const { return dir_ + "/" + file; }

 private:
  static void Run(const std::string& command) {
    INFO(command);
    REQUIRE(std::system((command + " >/dev/null 2>&1").c_str()) == 0);
  }

  std::string dir_;
  int serial_ = 0;
};

std::unique_ptr<httplib::Server> TlsServer(const TestPki& pki, const std::string& name) {
  return std::make_unique<httplib::SSLServer>(pki.Path(name + ".pem").c_str(),
                                              pki.Path(name + ".key").c_str());
}

TEST_CASE("TLS: the server certificate must chain to a trusted CA and name the host") {
  TestPki pki;
  pki.Issue("ip", "127.0.0.1", "IP:127.0.0.1");
  pki.Issue("other", "example.invalid", "DNS:example.invalid");
  // httplib alone would accept this one: it falls back to the CN although
  // the certificate has SANs. OpenSSL's RFC 6125 check refuses it.
  pki.Issue("cn_only", "127.0.0.1", "DNS:example.invalid");
  pki.Issue("localhost", "localhost", "DNS:localhost");
  pki.Issue("localhost_cn_only", "localhost", "DNS:example.invalid");
  Sleeps sleeps;

  SUBCASE("default trust store: the test CA is unknown, nothing reaches the handler") {
    StripeStandIn stripe(TlsServer(pki, "ip"));
    stripe.Script({{200, SessionJson()}});
    auto client = MustCreate(Options(stripe.HttpsBase(), &sleeps));
    auto result = client->RetrieveCheckoutSession("cs_1");
    REQUIRE(ErrorOf(result) != nullptr);
    CHECK(ErrorOf(result)->http_status == 0);
    CHECK(ErrorOf(result)->type == "connection_error");
    CHECK(ErrorOf(result)->message.find("SSLServerVerification") != std::string::npos);
    CHECK(stripe.Requests().empty());
    CHECK(sleeps.calls.empty());  // a certificate failure will not cure itself
  }
  SUBCASE("ca_file = the test CA: accepted") {
    StripeStandIn stripe(TlsServer(pki, "ip"));
    stripe.Script({{200, SessionJson()}});
    HttpsClientOptions o = Options(stripe.HttpsBase(), &sleeps);
    o.ca_file = pki.Path("ca.pem");
    auto client = MustCreate(o);
    auto result = client->CreateCheckoutSession(SampleParams());
    REQUIRE(ErrorOf(result) == nullptr);
    CHECK(std::get<CheckoutSession>(result).id == "cs_test_1");
    auto requests = stripe.Requests();
    REQUIRE(requests.size() == 1);
    CHECK(requests[0].Header("Idempotency-Key") == "res_1");
  }
  SUBCASE("a trusted certificate for another name is refused") {
    for (std::string name : {"other", "cn_only"}) {
      CAPTURE(name);
      StripeStandIn stripe(TlsServer(pki, name));
      stripe.Script({{200, SessionJson()}});
      HttpsClientOptions o = Options(stripe.HttpsBase(), &sleeps);
      o.ca_file = pki.Path("ca.pem");
      auto client = MustCreate(o);
      auto result = client->RetrieveCheckoutSession("cs_1");
      REQUIRE(ErrorOf(result) != nullptr);
      CHECK(ErrorOf(result)->http_status == 0);
      CHECK(ErrorOf(result)->type == "connection_error");
      CHECK(stripe.Requests().empty());
    }
  }
  SUBCASE("a DNS name is checked against the DNS SANs, never the CN when SANs exist") {
    for (std::string name : {"localhost", "other", "localhost_cn_only"}) {
      CAPTURE(name);
      StripeStandIn stripe(TlsServer(pki, name));
      stripe.Script({{200, SessionJson()}});
      HttpsClientOptions o = Options("https://localhost:" + std::to_string(stripe.port()), &sleeps);
      o.ca_file = pki.Path("ca.pem");
      auto client = MustCreate(o);
      auto result = client->RetrieveCheckoutSession("cs_1");
      if (name == "localhost") {
        CHECK(ErrorOf(result) == nullptr);
        CHECK(stripe.Requests().size() == 1);
      } else {
        REQUIRE(ErrorOf(result) != nullptr);
        CHECK(ErrorOf(result)->type == "connection_error");
        CHECK(stripe.Requests().empty());
      }
    }
  }
}

}  // namespace
}  // namespace paintlock::stripe
