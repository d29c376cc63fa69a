// Idempotency-Key on the server API's POSTs (README.md, "Retrying safely:
// Idempotency-Key"): a retried request with the same key and the same request
// is answered with the first answer, marked `Idempotent-Replayed: true`, and
// acts at most once, across any number of gateways.
//
// How a request with a key is served (locks/idempotency.h keeps the keys):
//   1. The key is checked (1..255 printable ASCII characters, else 400).
//   2. The key is claimed in its own statement, before anything acts. The
//      request is its fingerprint: SHA-256 of method, path, query parameters
//      and raw body. Another fingerprint under the key → 422
//      idempotency_key_reused; a recorded answer → replayed; a live claim by
//      a twin → 409 idempotency_key_in_use with Retry-After; the database
//      unreachable → the route's 503, and nothing acts.
//   3. The route acts; its answer is recorded for replay, unless it says
//      "nothing happened, try again" (KeepsAnswer false): then the claim is
//      dropped so a retry with the same key acts.
// A claim not recorded (the gateway died, or lost the database after acting)
// lapses after kClaimLease; a retry then acts again. Which routes are safe to
// repeat in that window is the README's table.
//
// Keys are never logged in full (their first 6 characters at most).
// Thread-safe: it holds only the thread-safe store.
#pragma once

#include <httplib.h>

#include <chrono>
#include <functional>
#include <string>

#include "gateway/http_errors.h"
#include "locks/idempotency.h"

namespace paintlock::gateway {

// How long a claim stands before a retry may take it over: longer than any
// request to these routes may run (the edge's request deadline, a Stripe
// call on take-over).
constexpr std::chrono::seconds kClaimLease{60};

// Whether the request carries an Idempotency-Key (good or not): a retry can
// then ask for its answer again.
bool CarriesIdempotencyKey(const httplib::Request& req);

// "" for a good key, else why it is not one.
std::string IdempotencyKeyProblem(const std::string& key);

// 64 lowercase hex characters: SHA-256 over the method, path, query
// parameters and body, each length-prefixed (no two requests share one).
std::string RequestFingerprint(const httplib::Request& req);

// True for an answer that is kept and replayed: every answer below 500
// except those that changed nothing and ask for a retry later (429, or any
// answer with Retry-After such as 409 painting_reserved or lease_held).
bool KeepsAnswer(const httplib::Response& res);

class IdempotentRequests {
 public:
  explicit IdempotentRequests(locks::IdempotencyStore& store) : store_(store) {}

  // Serves `req` with `act` (which writes its answer to `res`) as the header
  // says: without an Idempotency-Key, just act(); with one, as the file
  // comment says. `surface` words the 503 when the key cannot be claimed.
  void Serve(const httplib::Request& req, httplib::Response& res, Surface surface,
             const std::function<void()>& act);

 private:
  locks::IdempotencyStore& store_;
};

// requests->Serve(…), or act() when no idempotency layer is wired (null).
void ServeIdempotently(IdempotentRequests* requests, const httplib::Request& req,
                       httplib::Response& res, Surface surface, const std::function<void()>& act);

}  // namespace paintlock::gateway
