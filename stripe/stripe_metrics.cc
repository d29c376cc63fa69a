#include "stripe/stripe_metrics.h"

#include <cctype>

namespace paintlock::stripe {

namespace metrics = base::metrics;

const StripeMetrics& Metrics() {
  static const StripeMetrics m{
      metrics::DefaultRegistry().AddCounter(
          "paintlock_stripe_requests_total",
          "HTTP requests sent to Stripe, by endpoint and status (error: no HTTP answer).",
          {"endpoint", "status"}),
      metrics::DefaultRegistry().AddHistogram(
          "paintlock_stripe_request_duration_seconds",
          "Time of one HTTP request to Stripe (each retry is one request), by endpoint.",
          {"endpoint"}, metrics::kUpstreamSecondsBuckets),
      metrics::DefaultRegistry().AddCounter(
          "paintlock_stripe_retries_total",
          "Requests to Stripe sent again after a transient failure, by endpoint.", {"endpoint"}),
  };
  return m;
}

std::string EndpointLabel(const char* method, const std::string& path) {
  std::string label = std::string(method) + " ";
  const std::string bare = path.substr(0, path.find('?'));
  std::size_t start = 1;
  while (start <= bare.size()) {
    std::size_t end = bare.find('/', start);
    if (end == std::string::npos) end = bare.size();
    const std::string segment = bare.substr(start, end - start);
    bool id = segment != "v1" && !segment.empty();
    if (id) {
      id = false;
      for (char c : segment) id = id || c == '_' || std::isdigit(static_cast<unsigned char>(c));
    }
    label += "/" + (id ? std::string("{id}") : segment);
    start = end + 1;
  }
  return label;
}

void CountExchange(const char* method, const std::string& path, int status, double seconds) {
  const std::string endpoint = EndpointLabel(method, path);
  const std::string status_label = status == 0 ? "error" : std::to_string(status);
  Metrics().requests.With({endpoint, status_label}).Inc();
  Metrics().durations.With({endpoint}).Observe(seconds);
}

}  // namespace paintlock::stripe
