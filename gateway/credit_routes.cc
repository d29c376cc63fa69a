#include "gateway/credit_routes.h"

#include "base/log.h"
#include "gateway/http_errors.h"
#include "gateway/limit_requests.h"
#include "gateway/limit_routes.h"

namespace paintlock::gateway {

namespace {

using nlohmann::json;

HttpError CreditErrorFor(const locks::DbFailure& f) { return ErrorFor(f, Surface::kLimits); }
template <class T>
HttpError CreditErrorFor(const T& outcome) {
  return ErrorForCredits(outcome);
}

// Writes the error of any non-success alternative of `outcome`.
template <class Success, class Outcome>
void WriteCreditError(httplib::Response& res, const Outcome& outcome) {
  std::visit(
      [&](const auto& o) {
        using T = std::decay_t<decltype(o)>;
        if constexpr (!std::is_same_v<T, Success>) WriteError(res, CreditErrorFor(o));
      },
      outcome);
}

bool RequireJson(const httplib::Request& req, httplib::Response& res, const char* example) {
  if (MediaTypeOf(req) == "application/json") return true;
  WriteError(res, UnsupportedMediaType(std::string("Send the body as application/json: ") +
                                       example + "."));
  return false;
}

// A repeated commit, release or top-up answers exactly as the first did;
// this header (as Stripe's) tells the caller it was a replay.
void MarkReplay(httplib::Response& res, bool replayed) {
  if (replayed) res.set_header("Idempotent-Replayed", "true");
}

json HoldJson(const locks::CreditHoldView& v) {
  json j = {{"hold_id", v.id},  {"account_id", v.account_id}, {"amount", v.amount},
            {"state", v.state}, {"created_at", v.created_at}, {"expires_at", v.expires_at}};
  if (!v.closed_at.empty()) j["closed_at"] = v.closed_at;
  if (v.late) j["late"] = *v.late;
  if (v.balance_after) j["balance_after"] = *v.balance_after;
  return j;
}

void GetAccount(locks::CreditStore& credits, const httplib::Request& req, httplib::Response& res) {
  auto got = credits.Account(req.matches[1]);
  if (auto* f = std::get_if<locks::DbFailure>(&got))
    return WriteError(res, ErrorFor(*f, Surface::kLimits));
  const auto& v = std::get<std::optional<locks::CreditAccountView>>(got);
  if (!v) return WriteError(res, ErrorForCredits(locks::AccountNotFound{}));
  WriteJson(res, 200,
            {{"account_id", v->id},
             {"balance", v->balance},
             {"held", v->held},
             {"available", v->available},
             {"created_at", v->created_at},
             {"updated_at", v->updated_at}});
}

void TopUp(locks::CreditStore& credits, const httplib::Request& req, httplib::Response& res) {
  const std::string account = req.matches[1];
  if (!locks::IsValidAccountId(account)) {
    return WriteError(res, InvalidRequest("An account id is 1 to 64 letters, digits and _.:- "
                                          "(starting with a letter or digit).",
                                          "account_id"));
  }
  const std::string key = req.get_header_value("Idempotency-Key");
  if (key.empty()) {
    return WriteError(res, IdempotencyKeyRequired(
                               "A top-up needs an Idempotency-Key header (any unique string up to "
                               "255 characters), so that a retried request cannot credit twice."));
  }
  if (key.size() > 255) {
    return WriteError(res, InvalidRequest("The Idempotency-Key is longer than 255 characters.",
                                          "Idempotency-Key"));
  }
  if (!RequireJson(req, res, "{\"amount\": 100}")) return;
  auto parsed = ParseTopUpRequest(req.body);
  if (auto* e = std::get_if<FieldError>(&parsed)) return WriteError(res, ErrorFor(*e));

  locks::TopUpOutcome outcome = credits.TopUp(account, key, std::get<TopUpRequest>(parsed).amount);
  if (auto* done = std::get_if<locks::TopUpApplied>(&outcome)) {
    if (!done->replayed) {
      base::LogInfo("credits_topped_up", {{"account_id", account},
                                          {"amount", done->amount},
                                          {"balance_after", done->balance_after}});
    }
    MarkReplay(res, done->replayed);
    return WriteJson(res, 200,
                     {{"account_id", done->account_id},
                      {"amount", done->amount},
                      {"balance_after", done->balance_after},
                      {"credited_at", done->credited_at}});
  }
  WriteCreditError<locks::TopUpApplied>(res, outcome);
}

void OpenHold(locks::CreditStore& credits, const httplib::Request& req, httplib::Response& res) {
  HoldCall call;
  if (!ReadHold(req, res, &call)) return;
  WriteHold(call, credits.Hold(call.account, call.request.amount, call.request.ttl), res);
}

void GetHold(locks::CreditStore& credits, const httplib::Request& req, httplib::Response& res) {
  auto got = credits.GetHold(req.matches[1]);
  if (auto* f = std::get_if<locks::DbFailure>(&got))
    return WriteError(res, ErrorFor(*f, Surface::kLimits));
  const auto& v = std::get<std::optional<locks::CreditHoldView>>(got);
  if (!v) return WriteError(res, ErrorForCredits(locks::HoldNotFound{}));
  WriteJson(res, 200, HoldJson(*v));
}

void CommitHold(locks::CreditStore& credits, const httplib::Request& req, httplib::Response& res) {
  WriteCommit(credits.Commit(req.matches[1]), res);
}

void ReleaseHold(locks::CreditStore& credits, const httplib::Request& req, httplib::Response& res) {
  locks::ReleaseHoldOutcome outcome = credits.Release(req.matches[1]);
  if (auto* done = std::get_if<locks::HoldReleased>(&outcome)) {
    MarkReplay(res, done->replayed);
    return WriteJson(res, 200,
                     {{"hold_id", done->hold_id},
                      {"account_id", done->account_id},
                      {"amount", done->amount},
                      {"state", "released"},
                      {"released_at", done->released_at}});
  }
  WriteCreditError<locks::HoldReleased>(res, outcome);
}

}  // namespace

bool ReadHold(const httplib::Request& req, httplib::Response& res, HoldCall* call) {
  call->account = req.matches[1];
  if (!RequireJson(req, res, "{\"amount\": 10, \"ttl_seconds\": 300}")) return false;
  auto parsed = ParseHoldRequest(req.body);
  if (auto* e = std::get_if<FieldError>(&parsed)) return WriteError(res, ErrorFor(*e)), false;
  call->request = std::get<HoldRequest>(std::move(parsed));
  return true;
}

void WriteHold(const HoldCall& call, const locks::HoldOutcome& outcome, httplib::Response& res) {
  if (auto* hold = std::get_if<locks::HoldOpened>(&outcome)) {
    res.set_header("Location", "/v1/holds/" + hold->hold_id);
    return WriteJson(res, 201,
                     {{"hold_id", hold->hold_id},
                      {"account_id", call.account},
                      {"amount", call.request.amount},
                      {"expires_at", hold->expires_at},
                      {"available", hold->available}});
  }
  WriteCreditError<locks::HoldOpened>(res, outcome);
}

void WriteCommit(const locks::CommitOutcome& outcome, httplib::Response& res) {
  if (auto* done = std::get_if<locks::HoldCommitted>(&outcome)) {
    // No log line of its own: the request line and the hold's row say it all,
    // and this is the hot path.
    MarkReplay(res, done->replayed);
    return WriteJson(res, 200,
                     {{"hold_id", done->hold_id},
                      {"account_id", done->account_id},
                      {"amount", done->amount},
                      {"state", "committed"},
                      {"late", done->late},
                      {"committed_at", done->committed_at},
                      {"balance_after", done->balance_after}});
  }
  WriteCreditError<locks::HoldCommitted>(res, outcome);
}

void InstallCreditRoutes(httplib::Server& server, AuthorizeFn authorized,
                         locks::CreditStore& credits, IdempotentRequests* idempotency) {
  using Handler = void (*)(locks::CreditStore&, const httplib::Request&, httplib::Response&);
  // Each route: the API key first, then (`keyed`: an acting POST) the
  // Idempotency-Key, then the handler.
  auto route = [authorized, &credits](Handler handler, IdempotentRequests* keyed = nullptr) {
    return [authorized, &credits, handler, keyed](const httplib::Request& req,
                                                  httplib::Response& res) {
      if (!authorized(req, res)) return;
      ServeIdempotently(keyed, req, res, Surface::kLimits, [&] { handler(credits, req, res); });
    };
  };
  server.Get(R"(/v1/accounts/([^/]+))", route(GetAccount));
  // A top-up's key is its own (credit_topups, required): not this layer's.
  server.Post(R"(/v1/accounts/([^/]+)/credits)", route(TopUp));
  server.Post(kCreditHoldRoute, route(OpenHold, idempotency));
  server.Get(R"(/v1/holds/([^/]+))", route(GetHold));
  server.Post(kCreditCommitRoute, route(CommitHold, idempotency));
  server.Post(R"(/v1/holds/([^/]+)/release)", route(ReleaseHold, idempotency));
}

}  // namespace paintlock::gateway
