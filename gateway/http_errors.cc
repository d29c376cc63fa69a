#include "gateway/http_errors.h"

#include "gateway/log.h"

namespace paintlock::gateway {

namespace {

// "2026-12-02T14:05:09Z" → "14:05:09 UTC": what a buyer reads in a sentence.
std::string ClockTime(const std::string& rfc3339) {
  if (rfc3339.size() >= 19) return rfc3339.substr(11, 8) + " UTC";
  return rfc3339;
}

std::string HtmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

}  // namespace

HttpError InvalidRequest(const std::string& message, const std::string& param) {
  HttpError e{400, "invalid_request", message, nlohmann::json::object(), 0};
  if (!param.empty()) e.extra["param"] = param;
  return e;
}

HttpError ErrorFor(const locks::Busy& busy) {
  HttpError e;
  e.status = 409;
  e.code = "painting_reserved";
  e.message = "Painting \"" + busy.painting +
              "\" is being bought by someone else right now. If they do not complete the "
              "purchase it will be free again at " + ClockTime(busy.free_at) + " (" +
              busy.free_at + ").";
  e.extra = {{"painting", busy.painting}, {"free_at", busy.free_at}};
  e.retry_after_seconds = std::max(1, busy.retry_after_seconds);
  return e;
}

HttpError ErrorFor(const locks::Sold& sold) {
  return {409, "painting_sold", "Painting \"" + sold.painting + "\" has been sold.",
          {{"painting", sold.painting}}, 0};
}

HttpError ErrorFor(const locks::Unknown& unknown) {
  return {404, "painting_not_found", "There is no painting \"" + unknown.painting + "\".",
          {{"painting", unknown.painting}}, 0};
}

HttpError ErrorFor(const MixedCurrency& mixed) {
  HttpError e = InvalidRequest(
      "The paintings in this cart are priced in different currencies; buy them separately.",
      "paintings");
  e.extra["currencies"] = mixed.currencies;
  return e;
}

HttpError ErrorFor(const StripeFailed& failed) {
  if (failed.unavailable) {
    return {503, "stripe_unavailable",
            "The payment provider could not be reached. Nothing was reserved or charged; "
            "please try again in a moment.",
            nlohmann::json::object(), 5};
  }
  return {502, "stripe_error",
          "The payment provider refused to start the checkout. Nothing was reserved or charged.",
          {{"stripe_error_type", failed.stripe_type}}, 0};
}

HttpError ErrorFor(const locks::DbFailure& failure) {
  switch (failure.kind) {
    case locks::DbFailureKind::kContended:
      return {409, "painting_busy",
              "Someone else is buying one of these paintings at this very moment. "
              "Please try again in a second.",
              nlohmann::json::object(), 1};
    case locks::DbFailureKind::kUnavailable:
      return {503, "unavailable",
              "The gateway cannot reach its database right now. Nothing was reserved or "
              "charged; please try again in a moment.",
              nlohmann::json::object(), 2};
    case locks::DbFailureKind::kInternal:
      break;
  }
  return {500, "internal",
          "Something went wrong on our side. Nothing was charged. Quote the request id if you "
          "contact the seller.",
          nlohmann::json::object(), 0};
}

void WriteJson(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  // Replacing invalid UTF-8 (with U+FFFD) rather than throwing: whatever a
  // request carried and a message quotes, the caller gets its answer.
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                  "application/json");
}

void WriteError(httplib::Response& res, const HttpError& error) {
  nlohmann::json body = error.extra.is_object() ? error.extra : nlohmann::json::object();
  body["code"] = error.code;
  body["message"] = error.message;
  if (!CurrentRequestId().empty()) body["request_id"] = CurrentRequestId();
  if (error.retry_after_seconds > 0) {
    res.set_header("Retry-After", std::to_string(error.retry_after_seconds));
  }
  WriteJson(res, error.status, body);
}

void WriteErrorPage(httplib::Response& res, const HttpError& error) {
  if (error.retry_after_seconds > 0) {
    res.set_header("Retry-After", std::to_string(error.retry_after_seconds));
  }
  res.status = error.status;
  res.set_content(
      "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width\"><title>Not available</title>"
      "<style>body{font:17px/1.5 system-ui,sans-serif;max-width:36em;margin:4em auto;"
      "padding:0 1em;color:#222}a{color:#134}</style></head><body><h1>Not available right now</h1>"
      "<p data-code=\"" + HtmlEscape(error.code) + "\">" + HtmlEscape(error.message) +
          "</p><p><a href=\"javascript:history.back()\">Back to the shop</a></p></body></html>",
      "text/html; charset=utf-8");
}

}  // namespace paintlock::gateway
