#include "gateway/server.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <chrono>
#include <ctime>
#include <regex>

#include "gateway/cors.h"
#include "gateway/edge/static_files.h"
#include "gateway/http_errors.h"
#include "gateway/log.h"
#include "gateway/request_parsing.h"
#include "gateway/storefront_routes.h"
#include "webhooks/event.h"
#include "webhooks/signature.h"

namespace paintlock::gateway {

namespace {

thread_local std::chrono::steady_clock::time_point t_request_start;

std::string NewRequestId() {
  unsigned char bytes[12];
  RAND_bytes(bytes, sizeof bytes);
  static const char kHex[] = "0123456789abcdef";
  std::string id;
  for (unsigned char b : bytes) {
    id.push_back(kHex[b >> 4]);
    id.push_back(kHex[b & 0xf]);
  }
  return id;
}

bool SaneRequestId(const std::string& id) {
  static const std::regex re("^[A-Za-z0-9._-]{8,64}$");
  return std::regex_match(id, re);
}

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

std::string MediaType(const httplib::Request& req) {
  std::string ct = req.get_header_value("Content-Type");
  ct = ct.substr(0, ct.find(';'));
  for (auto& c : ct) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  while (!ct.empty() && ct.back() == ' ') ct.pop_back();
  return ct;
}

nlohmann::json PaintingJson(const locks::PaintingView& v) {
  nlohmann::json j = {{"id", v.entry.id},
                      {"title", v.entry.title},
                      {"price_minor", v.entry.price_minor},
                      {"currency", v.entry.currency},
                      {"state", v.state}};
  if (!v.free_at.empty()) j["free_at"] = v.free_at;
  return j;
}

nlohmann::json ReservationJson(const locks::ReservationView& v) {
  nlohmann::json j = {{"reservation_id", v.id},
                      {"state", v.state},
                      {"paintings", v.paintings},
                      {"held_until", v.held_until},
                      {"hold_live", v.state == "held" && v.hold_live && v.holds},
                      {"amount_minor", v.amount_minor},
                      {"currency", v.currency},
                      {"created_at", v.created_at}};
  if (!v.released_reason.empty()) j["released_reason"] = v.released_reason;
  if (!v.stripe_session_id.empty()) j["stripe_session_id"] = v.stripe_session_id;
  if (!v.stripe_status.empty()) j["stripe_status"] = v.stripe_status;
  return j;
}

HttpError NotFound(const std::string& code, const std::string& message) {
  return {404, code, message, nlohmann::json::object(), 0};
}

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

}  // namespace

void HttpApi::Install(httplib::Server& server) {
  // Connections, workers and framing limits are the edge's
  // (gateway/edge/edge_server.h); these settings hold for a plain httplib::Server.
  server.set_payload_max_length(config_.max_body_bytes);
  server.set_keep_alive_max_count(100000);
  // Announced in Keep-Alive headers; the edge closes idle connections after it.
  server.set_keep_alive_timeout(static_cast<time_t>(config_.idle_timeout.count()));
  server.set_read_timeout(10, 0);
  server.set_write_timeout(10, 0);
  server.set_tcp_nodelay(true);

  server.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    std::string id = req.get_header_value("X-Request-Id");
    if (!SaneRequestId(id)) id = NewRequestId();
    SetCurrentRequestId(id);
    t_request_start = std::chrono::steady_clock::now();
    res.set_header("X-Request-Id", id);
    res.set_header("Cache-Control", "no-store");
    // Issue 5: CORS on the public endpoints; preflights are answered here.
    if (ApplyCors(config_.allowed_origins, req, res)) return httplib::Server::HandlerResponse::Handled;
    return httplib::Server::HandlerResponse::Unhandled;
  });

  server.set_logger([](const httplib::Request& req, const httplib::Response& res) {
    if (CurrentRequestId().empty()) return;  // never routed (rejected while reading)
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                                t_request_start)
                          .count();
    // A licence key in a path is a secret: never log it.
    const bool secret_path = StartsWith(req.path, "/v1/licenses/");
    nlohmann::json fields = {{"method", req.method},
                             {"path", secret_path ? std::string("/v1/licenses/(redacted)") : req.path},
                             {"status", res.status},
                             {"duration_ms", std::round(ms * 100) / 100}};
    if (res.status >= 500) {
      LogWarn("request", fields);
    } else {
      LogInfo("request", fields);
    }
    SetCurrentRequestId("");
  });

  server.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.get_header_value("X-Request-Id").empty()) {
      std::string id = NewRequestId();
      SetCurrentRequestId(id);
      res.set_header("X-Request-Id", id);
    }
    switch (res.status) {
      case 404:
        WriteError(res, NotFound("not_found", "There is no such endpoint."));
        break;
      case 413:
        WriteError(res, {413, "request_too_large", "The request body is too large.",
                         nlohmann::json::object(), 0});
        break;
      case 400:
        WriteError(res, InvalidRequest("The request could not be read."));
        break;
      default:
        WriteError(res, {res.status, "http_error", "The request could not be served.",
                         nlohmann::json::object(), 0});
    }
  });

  server.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        std::string what = "unknown exception";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        LogError("unhandled_exception", {{"path", req.path}, {"error", what}});
        WriteError(res, ErrorFor(locks::DbFailure{locks::DbFailureKind::kInternal, ""}));
      });

  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    WriteJson(res, 200, {{"status", "ok"}});
  });
  server.Get("/readyz", [this](const auto& req, auto& res) { Ready(req, res); });
  // Issue 5: /paintlock.js and /v1/paintings/stream, before /v1/paintings/{id}.
  InstallStorefrontRoutes(server, config_, s_.availability);
  server.Get("/v1/paintings", [this](const auto& req, auto& res) { Paintings(req, res); });
  server.Get(R"(/v1/paintings/([^/]+))", [this](const auto& req, auto& res) { Painting(req, res); });
  server.Post("/v1/checkout", [this](const auto& req, auto& res) { StartCheckout(req, res); });
  server.Get("/v1/checkout/success", [this](const auto& req, auto& res) { CheckoutSuccess(req, res); });
  server.Post("/v1/reservations", [this](const auto& req, auto& res) { CreateReservation(req, res); });
  server.Get(R"(/v1/reservations/([^/]+))", [this](const auto& req, auto& res) { GetReservation(req, res); });
  server.Delete(R"(/v1/reservations/([^/]+))",
                [this](const auto& req, auto& res) { DeleteReservation(req, res); });
  server.Post("/v1/webhooks/stripe", [this](const auto& req, auto& res) { StripeWebhook(req, res); });
  InstallLimitRoutes(server, {[this](const auto& req, auto& res) { return Authorized(req, res); },
                              s_.credits, s_.rate_limiter, s_.leases});
  if (s_.quotas) InstallQuotaRoutes(server, config_, *s_.quotas, s_.visitors);  // issue 6

  if (!config_.storefront_dir.empty()) {
    if (!edge::InstallStaticFiles(server, "/shop", config_.storefront_dir)) {
      LogWarn("storefront_dir_missing", {{"dir", config_.storefront_dir}});
    }
    server.Get("/", [](const httplib::Request&, httplib::Response& res) {
      res.set_redirect("/shop/", 303);
    });
  }
}

void HttpApi::Ready(const httplib::Request&, httplib::Response& res) {
  auto ping = s_.db.Run("ping", [](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    n.exec_prepared("ping");
    return true;
  });
  if (std::holds_alternative<locks::DbFailure>(ping)) {
    WriteError(res, {503, "not_ready", "The database is not reachable.", nlohmann::json::object(), 2});
    return;
  }
  nlohmann::json body = {{"status", "ready"}};
  if (s_.availability) body["open_streams"] = s_.availability->OpenStreams();  // issue 5
  WriteJson(res, 200, body);
}

void HttpApi::Paintings(const httplib::Request&, httplib::Response& res) {
  auto list = s_.catalogue.List();
  if (auto* f = std::get_if<locks::DbFailure>(&list)) return WriteError(res, ErrorFor(*f));
  nlohmann::json items = nlohmann::json::array();
  for (const auto& v : std::get<std::vector<locks::PaintingView>>(list)) items.push_back(PaintingJson(v));
  WriteJson(res, 200, {{"paintings", items}});
}

void HttpApi::Painting(const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.matches[1];
  if (!IsValidPaintingId(id)) return WriteError(res, ErrorFor(locks::Unknown{id.substr(0, 64)}));
  auto got = s_.catalogue.Get(id);
  if (auto* f = std::get_if<locks::DbFailure>(&got)) return WriteError(res, ErrorFor(*f));
  const auto& v = std::get<std::optional<locks::PaintingView>>(got);
  if (!v) return WriteError(res, ErrorFor(locks::Unknown{id}));
  WriteJson(res, 200, PaintingJson(*v));
}

void HttpApi::StartCheckout(const httplib::Request& req, httplib::Response& res) {
  // Per-visitor limit (issue 7), before anything is parsed or reserved.
  if (s_.checkout_limit && !s_.checkout_limit->Admit(req, res)) return;
  const std::string media = MediaType(req);
  const bool form = media == "application/x-www-form-urlencoded";
  if (!form && media != "application/json") {
    return WriteError(res, {415, "unsupported_media_type",
                            "Send the cart as application/json ({\"paintings\": [\"p1\"]}) or as an "
                            "HTML form (painting=p1&painting=p2).",
                            nlohmann::json::object(), 0});
  }
  std::string error, param;
  auto cart = form ? ParseCartForm(req.body, &error, &param)
                   : ParseCartJson(req.body, /*allow_buyer=*/false, &error, &param);
  auto fail = [&](const HttpError& e) {
    // Issue 5: a form post that loses goes to PAINTLOCK_UNAVAILABLE_URL when set.
    if (form && RedirectToUnavailablePage(config_.unavailable_url, e, res)) return;
    form ? WriteErrorPage(res, e) : WriteError(res, e);
  };
  if (!cart) return fail(InvalidRequest(error, param));

  CheckoutOutcome outcome = s_.checkout.Start(cart->paintings);
  if (auto* started = std::get_if<CheckoutStarted>(&outcome)) {
    if (form) {
      res.set_redirect(started->checkout_url, 303);
      return;
    }
    WriteJson(res, 201, {{"reservation_id", started->reservation_id},
                         {"checkout_url", started->checkout_url},
                         {"held_until", started->held_until}});
    return;
  }
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (!std::is_same_v<T, CheckoutStarted>) fail(ErrorFor(o));
      },
      outcome);
}

void HttpApi::CheckoutSuccess(const httplib::Request& req, httplib::Response& res) {
  static const std::regex session_re("^cs_[A-Za-z0-9_]{1,250}$");
  const std::string session_id = req.get_param_value("session_id");
  if (!std::regex_match(session_id, session_re)) {
    return WriteError(res, InvalidRequest("session_id must be a Checkout Session id (cs_…).",
                                          "session_id"));
  }
  // The buyer has paid or is paying: whatever happens here, send them on to
  // the storefront. The webhook applies the same facts if we cannot now.
  auto retrieved = s_.stripe.RetrieveCheckoutSession(session_id);
  if (const auto* err = stripe::ErrorOf(retrieved)) {
    if (err->http_status == 404) {
      return WriteError(res, NotFound("session_not_found", "There is no such checkout session."));
    }
    LogWarn("success_page_retrieve_failed", {{"session_id", session_id}, {"stripe_status", err->http_status}});
  } else {
    const auto& session = std::get<stripe::CheckoutSession>(retrieved);
    if (session.status == "complete") {
      s_.fulfilment.Apply(webhooks::FactsOf(session), "", "session.retrieved", "success_page");
    }
  }
  res.set_redirect(ReplaceAll(config_.success_url, "{CHECKOUT_SESSION_ID}", session_id), 303);
}

bool HttpApi::Authorized(const httplib::Request& req, httplib::Response& res) {
  const std::string header = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  bool ok = false;
  if (!config_.api_key.empty() && StartsWith(header, prefix.c_str())) {
    const std::string given = header.substr(prefix.size());
    ok = given.size() == config_.api_key.size() &&
         CRYPTO_memcmp(given.data(), config_.api_key.data(), given.size()) == 0;
  }
  if (!ok) {
    res.set_header("WWW-Authenticate", "Bearer");
    WriteError(res, {401, "unauthorized",
                     config_.api_key.empty()
                         ? "The reservations API is disabled: set PAINTLOCK_API_KEY on the gateway."
                         : "Send the API key as Authorization: Bearer <PAINTLOCK_API_KEY>.",
                     nlohmann::json::object(), 0});
  }
  return ok;
}

void HttpApi::CreateReservation(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res)) return;
  if (MediaType(req) != "application/json") {
    return WriteError(res, {415, "unsupported_media_type",
                            "Send {\"paintings\": [...]} as application/json.",
                            nlohmann::json::object(), 0});
  }
  std::string error, param;
  auto cart = ParseCartJson(req.body, /*allow_buyer=*/true, &error, &param);
  if (!cart) return WriteError(res, InvalidRequest(error, param));
  Checkout::ReserveResult result = s_.checkout.Reserve(cart->paintings, cart->buyer_ref);
  if (auto* granted = std::get_if<locks::Granted>(&result)) {
    res.set_header("Location", "/v1/reservations/" + granted->reservation_id);
    WriteJson(res, 201, {{"reservation_id", granted->reservation_id},
                         {"held_until", granted->held_until},
                         {"paintings", cart->paintings}});
    return;
  }
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (!std::is_same_v<T, locks::Granted>) WriteError(res, ErrorFor(o));
      },
      result);
}

void HttpApi::GetReservation(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res)) return;
  auto got = s_.reservations.Get(req.matches[1]);
  if (auto* f = std::get_if<locks::DbFailure>(&got)) return WriteError(res, ErrorFor(*f));
  const auto& v = std::get<std::optional<locks::ReservationView>>(got);
  if (!v) return WriteError(res, NotFound("reservation_not_found", "There is no such reservation."));
  WriteJson(res, 200, ReservationJson(*v));
}

void HttpApi::DeleteReservation(const httplib::Request& req, httplib::Response& res) {
  if (!Authorized(req, res)) return;
  const std::string id = req.matches[1];
  auto got = s_.reservations.Get(id);
  if (auto* f = std::get_if<locks::DbFailure>(&got)) return WriteError(res, ErrorFor(*f));
  const auto& v = std::get<std::optional<locks::ReservationView>>(got);
  if (!v) return WriteError(res, NotFound("reservation_not_found", "There is no such reservation."));

  // A reservation with a Stripe session is released only once the session can
  // no longer be paid: expire it first; if it was paid, the painting is sold.
  if (v->state == "held" && !v->stripe_session_id.empty()) {
    auto expired = s_.stripe.ExpireCheckoutSession(v->stripe_session_id);
    if (const auto* err = stripe::ErrorOf(expired)) {
      if (err->Unavailable()) {
        return WriteError(res, ErrorFor(StripeFailed{true, err->type, err->message}));
      }
      auto retrieved = s_.stripe.RetrieveCheckoutSession(v->stripe_session_id);
      if (const auto* rerr = stripe::ErrorOf(retrieved)) {
        return WriteError(res, ErrorFor(StripeFailed{rerr->Unavailable(), rerr->type, rerr->message}));
      }
      s_.fulfilment.Apply(webhooks::FactsOf(std::get<stripe::CheckoutSession>(retrieved)), "",
                          "session.retrieved", "gateway");
    }
  }
  auto released = s_.reservations.Release(id, "released_by_api", "gateway");
  if (auto* f = std::get_if<locks::DbFailure>(&released)) return WriteError(res, ErrorFor(*f));
  const auto& r = std::get<locks::ReleaseOutcome>(released);
  if (r.result == locks::ReleaseResult::kNotFound) {
    return WriteError(res, NotFound("reservation_not_found", "There is no such reservation."));
  }
  if (r.state == "sold" || r.state == "awaiting_payment" || r.state == "refund_pending") {
    return WriteError(res, {409, "reservation_paid",
                            "This reservation has been paid (or a payment is settling); it cannot be "
                            "released.",
                            {{"state", r.state}}, 0});
  }
  WriteJson(res, 200, {{"reservation_id", id}, {"state", r.state}});
}

void HttpApi::StripeWebhook(const httplib::Request& req, httplib::Response& res) {
  // Verify the raw body before parsing anything.
  const auto check = webhooks::VerifySignature(
      req.get_header_value("Stripe-Signature"), req.body, config_.stripe_webhook_secrets,
      static_cast<std::int64_t>(std::time(nullptr)), config_.webhook_tolerance.count());
  if (check != webhooks::SignatureCheck::kValid) {
    LogWarn("webhook_rejected", {{"reason", webhooks::ToString(check)}});
    return WriteError(res, {400, "invalid_signature",
                            std::string("Webhook signature refused: ") + webhooks::ToString(check) + ".",
                            nlohmann::json::object(), 0});
  }
  std::string error;
  auto event = webhooks::DecodeEvent(req.body, &error);
  if (!event) {
    LogWarn("webhook_malformed", {{"error", error}});
    return WriteError(res, InvalidRequest("Malformed event: " + error));
  }
  if (s_.quotas && webhooks::IsSubscriptionEventType(event->type)) {
    return ApplySubscriptionWebhook(*s_.quotas, req.body, res);  // issue 6: licences
  }
  if (!webhooks::IsHandledType(event->type)) {
    LogInfo("webhook_ignored", {{"event_id", event->id}, {"event_type", event->type}});
    return WriteJson(res, 200, {{"received", true}, {"handled", false}});
  }
  auto applied = s_.fulfilment.Apply(event->session, event->id, event->type, "webhook");
  if (auto* failure = std::get_if<webhooks::FulfilmentFailure>(&applied)) {
    // Not applied (or a refund still owed): Stripe retries, and the retry is safe.
    const bool internal = *failure == webhooks::FulfilmentFailure::kInternal;
    return WriteError(res, {internal ? 500 : 503, internal ? "internal" : "unavailable",
                            "The event was not applied; retry later.", nlohmann::json::object(),
                            internal ? 0 : 5});
  }
  const auto& result = std::get<webhooks::FulfilmentResult>(applied);
  WriteJson(res, 200, {{"received", true}, {"handled", true}, {"outcome", result.outcome}});
}

}  // namespace paintlock::gateway
