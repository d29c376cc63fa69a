// What the Stripe client counts (base/metrics.h): every HTTP exchange with
// Stripe by endpoint and status, its latency, and the retries. Thread-safe.
#pragma once

#include <string>

#include "base/metrics.h"

namespace paintlock::stripe {

struct StripeMetrics {
  base::metrics::Family<base::metrics::Counter>& requests;     // {endpoint, status}
  base::metrics::Family<base::metrics::Histogram>& durations;  // {endpoint}
  base::metrics::Family<base::metrics::Counter>& retries;      // {endpoint}
};

// Registered in base::metrics::DefaultRegistry() at the first call.
const StripeMetrics& Metrics();

// The endpoint label of a request: the method and the path with its query
// dropped and every id segment (one with a digit or an underscore, such as
// cs_test_a1) replaced by {id}: "POST /v1/checkout/sessions/{id}/expire".
std::string EndpointLabel(const char* method, const std::string& path);

// Counts one exchange; status 0 (no HTTP answer) is labelled "error".
void CountExchange(const char* method, const std::string& path, int status, double seconds);

}  // namespace paintlock::stripe
