#include "base/metrics.h"

#include <doctest/doctest.h>

#include <string>
#include <thread>

namespace paintlock::base::metrics {

TEST_CASE("metrics: label values escape backslash, quote and newline, and nothing else") {
  CHECK(EscapeLabelValue(R"(a\b"c)") == R"(a\\b\"c)");
  CHECK(EscapeLabelValue("line\nnext") == R"(line\nnext)");
  CHECK(EscapeLabelValue("/v1/paintings/{}") == "/v1/paintings/{}");
  CHECK(EscapeHelp("a \"quoted\" \\ help\nline") == "a \"quoted\" \\\\ help\\nline");
}

TEST_CASE("metrics: numbers are written as the text format reads them") {
  CHECK(FormatNumber(0) == "0");
  CHECK(FormatNumber(42) == "42");
  CHECK(FormatNumber(0.005) == "0.005");
  CHECK(FormatNumber(2.5) == "2.5");
  CHECK(std::stod(FormatNumber(1.0 / 3)) == 1.0 / 3);  // reads back exactly
  CHECK(FormatNumber(1.0 / 3).size() <= 19);
  CHECK(FormatNumber(1e300 * 1e300) == "+Inf");
}

TEST_CASE("metrics: a counter family writes HELP, TYPE and one line per label set") {
  Registry r;
  auto& requests = r.AddCounter("paintlock_test_total", "Requests \"seen\".", {"route", "status"});
  requests.With({"/v1/b", "200"}).Inc();
  requests.With({"/v1/a", "404"}).Inc(2);
  requests.With({"/v1/b", "200"}).Inc();
  requests.With({"say \"hi\"\n", "500"}).Inc();
  CHECK(r.Render() ==
        "# HELP paintlock_test_total Requests \"seen\".\n"
        "# TYPE paintlock_test_total counter\n"
        "paintlock_test_total{route=\"/v1/a\",status=\"404\"} 2\n"
        "paintlock_test_total{route=\"/v1/b\",status=\"200\"} 2\n"
        "paintlock_test_total{route=\"say \\\"hi\\\"\\n\",status=\"500\"} 1\n");
}

TEST_CASE("metrics: a histogram's buckets are cumulative, end in +Inf and agree with _count") {
  Registry r;
  auto& latency = r.AddHistogram("paintlock_test_seconds", "Latency.", {"route"}, {0.1, 0.5, 1});
  auto& h = latency.With({"/x"});
  h.Observe(0.05);
  h.Observe(0.1);  // a bound is inclusive: le="0.1"
  h.Observe(0.3);
  h.Observe(7);
  CHECK(r.Render() ==
        "# HELP paintlock_test_seconds Latency.\n"
        "# TYPE paintlock_test_seconds histogram\n"
        "paintlock_test_seconds_bucket{route=\"/x\",le=\"0.1\"} 2\n"
        "paintlock_test_seconds_bucket{route=\"/x\",le=\"0.5\"} 3\n"
        "paintlock_test_seconds_bucket{route=\"/x\",le=\"1\"} 3\n"
        "paintlock_test_seconds_bucket{route=\"/x\",le=\"+Inf\"} 4\n"
        "paintlock_test_seconds_sum{route=\"/x\"} " +
            FormatNumber(0.05 + 0.1 + 0.3 + 7) +
            "\n"
            "paintlock_test_seconds_count{route=\"/x\"} 4\n");
}

TEST_CASE("metrics: families are rendered sorted by name, callbacks read at each render") {
  Registry r;
  int open = 3;
  r.AddCallback("paintlock_b_open", "Open things.", "gauge", {"kind"}, [&open] {
    return std::vector<Sample>{{{"stream"}, double(open)}};
  });
  r.AddCounter("paintlock_a_total", "Unlabelled.").With({}).Inc();
  const std::string first = r.Render();
  CHECK(first.find("paintlock_a_total 1\n") < first.find("# HELP paintlock_b_open"));
  CHECK(first.find("paintlock_b_open{kind=\"stream\"} 3\n") != std::string::npos);
  open = 5;
  CHECK(r.Render().find("paintlock_b_open{kind=\"stream\"} 5\n") != std::string::npos);
}

TEST_CASE("metrics: a family over capacity counts new label sets in one \"other\" series") {
  Registry r;
  auto& f = r.AddCounter("paintlock_capped_total", "Capped.", {"id"}, 2);
  f.With({"a"}).Inc();
  f.With({"b"}).Inc();
  f.With({"c"}).Inc();
  f.With({"d"}).Inc();
  f.With({"a"}).Inc();
  const std::string text = r.Render();
  CHECK(text.find("paintlock_capped_total{id=\"a\"} 2\n") != std::string::npos);
  CHECK(text.find("paintlock_capped_total{id=\"other\"} 2\n") != std::string::npos);
  CHECK(text.find("id=\"c\"") == std::string::npos);
}

TEST_CASE("metrics: registering a name twice gives the same family") {
  Registry r;
  auto& a = r.AddCounter("paintlock_same_total", "First.", {"x"});
  auto& b = r.AddCounter("paintlock_same_total", "Second.", {"x"});
  CHECK(&a == &b);
}

TEST_CASE("metrics: concurrent updates from many threads are all counted") {
  Registry r;
  auto& c = r.AddCounter("paintlock_race_total", "Race.", {"k"});
  auto& h = r.AddHistogram("paintlock_race_seconds", "Race.", {"k"}, {1});
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      const std::string key = "k" + std::to_string(t % 4);
      for (int i = 0; i < 1000; ++i) {
        c.With({key}).Inc();
        h.With({key}).Observe(0.5);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::uint64_t total = 0, observed = 0;
  for (const auto& s : c.Collect()) total += s.metric->Value();
  for (const auto& s : h.Collect()) observed += s.metric->Read().count;
  CHECK(total == 8000);
  CHECK(observed == 8000);
  CHECK(c.Collect().size() == 4);
}

}  // namespace paintlock::base::metrics
