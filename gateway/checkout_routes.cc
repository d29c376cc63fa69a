// POST /v1/checkout — the storefront's Buy button (JSON or an HTML form):
// reserve every painting or none, create the Stripe Checkout Session, answer
// 201 with its URL (JSON) or 303 to it (form). A form post that loses goes to
// PAINTLOCK_UNAVAILABLE_URL when set, else gets a small HTML page.
//
// GET /v1/checkout/success?session_id=… — where Stripe sends the buyer:
// applies what Stripe says of the session (as the webhook will), then sends
// the buyer to the storefront page that matches what the database now holds.

#include "base/log.h"
#include "gateway/edge/edge_server.h"
#include "gateway/http_errors.h"
#include "gateway/limit_routes.h"
#include "gateway/middleware.h"
#include "gateway/request_parsing.h"
#include "gateway/routes.h"
#include "gateway/storefront_routes.h"
#include "stripe/client.h"

namespace paintlock::gateway {

namespace {

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

void StartCheckout(const Api& api, const httplib::Request& req, httplib::Response& res) {
  const Services& s = api.services;
  // Per-visitor limit, before anything is parsed or reserved.
  if (s.checkout_limit && !s.checkout_limit->Admit(req, res)) return;
  const std::string media = MediaTypeOf(req);
  const bool form = media == "application/x-www-form-urlencoded";
  if (!form && media != "application/json") {
    return WriteError(res, UnsupportedMediaType(
                               "Send the cart as application/json ({\"paintings\": [\"p1\"]}) or "
                               "as an HTML form (painting=p1&painting=p2)."));
  }
  std::string error, param;
  auto cart = form ? ParseCartForm(req.body, &error, &param)
                   : ParseCartJson(req.body, /*allow_buyer=*/false, &error, &param);
  auto fail = [&](const HttpError& e) {
    if (form && RedirectToUnavailablePage(api.config.unavailable_url, e, res)) return;
    form ? WriteErrorPage(res, e) : WriteError(res, e);
  };
  if (!cart) return fail(InvalidRequest(error, param));

  checkout::CheckoutOutcome outcome =
      s.checkout.Start(cart->paintings, cart->line_token, edge::ClientStillThere);
  if (auto* started = std::get_if<checkout::CheckoutStarted>(&outcome)) {
    if (form) return res.set_redirect(started->checkout_url, 303);
    nlohmann::json body = {{"reservation_id", started->reservation_id},
                           {"checkout_url", started->checkout_url},
                           {"held_until", started->held_until}};
    if (started->offline) {
      // Sold from the catalogue snapshot while the database is down: nothing
      // is held, so there is no hold to announce.
      body["held_until"] = nullptr;
      body["offline"] = true;
    }
    return WriteJson(res, 201, body);
  }
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (!std::is_same_v<T, checkout::CheckoutStarted>) fail(ErrorFor(o));
      },
      outcome);
}

void CheckoutSuccess(const Api& api, const httplib::Request& req, httplib::Response& res) {
  const std::string session_id = req.get_param_value("session_id");
  if (!stripe::IsCheckoutSessionId(session_id)) {
    return WriteError(
        res, InvalidRequest("session_id must be a Checkout Session id (cs_…).", "session_id"));
  }
  const std::string success =
      ReplaceAll(api.config.success_url, "{CHECKOUT_SESSION_ID}", session_id);
  // The buyer has paid or is paying: send them on to the storefront, whose
  // success page reads the reservation's state. The webhook applies the same
  // facts if we cannot now.
  auto retrieved = api.services.stripe.RetrieveCheckoutSession(session_id);
  if (const auto* err = stripe::ErrorOf(retrieved)) {
    if (err->http_status == 404) return WriteError(res, SessionNotFound());
    base::LogWarn("success_page_retrieve_failed",
                  {{"session_id", session_id}, {"stripe_status", err->http_status}});
    return res.set_redirect(success, 303);
  }
  const auto& session = std::get<stripe::CheckoutSession>(retrieved);
  if (session.status != "complete") return res.set_redirect(success, 303);
  const auto applied = api.services.fulfilment.Apply(webhooks::FactsOf(session), "",
                                                     "session.retrieved", "success_page");
  if (const auto* failure = std::get_if<webhooks::FulfilmentFailure>(&applied)) {
    // Not recorded now; the webhook (which Stripe retries) will. Say so.
    base::LogWarn(
        "success_page_apply_failed",
        {{"session_id", session_id},
         {"failure", *failure == webhooks::FulfilmentFailure::kRefundPending ? "refund_pending"
                     : *failure == webhooks::FulfilmentFailure::kDatabaseUnavailable
                         ? "database_unavailable"
                         : "internal"}});
    return res.set_redirect(success, 303);
  }
  const std::string& outcome = std::get<webhooks::FulfilmentResult>(applied).outcome;
  if (outcome == "refunded" || outcome == "already_refunded") {
    // Someone else bought a painting of this cart while the buyer paid late:
    // the payment was refunded. Never show such a buyer "sold to you".
    base::LogInfo("success_page_refunded", {{"session_id", session_id}});
    return WriteErrorPage(res, PaymentRefunded());
  }
  res.set_redirect(success, 303);
}

}  // namespace

void InstallCheckoutRoutes(httplib::Server& server, const Api& api) {
  server.Post("/v1/checkout", [&api](const auto& req, auto& res) { StartCheckout(api, req, res); });
  server.Get("/v1/checkout/success",
             [&api](const auto& req, auto& res) { CheckoutSuccess(api, req, res); });
}

}  // namespace paintlock::gateway
