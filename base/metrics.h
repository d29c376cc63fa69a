// Process metrics in the Prometheus text exposition format (version 0.0.4).
//
// Counters and histograms are updated on request paths, so an update is a few
// relaxed atomic operations and never takes a lock: a counter is one
// std::atomic, a histogram one atomic per fixed bucket plus a count and a sum.
// A labelled family finds the series of a set of label values in a fixed-size
// open-addressing table read without a lock; only the first use of a new set
// of label values takes the family's insert mutex. A family holds at most
// `capacity` series: further label sets share one series whose every label is
// "other", so a caller that labels by something unbounded cannot grow memory
// or the scrape without limit. Label values must still come from bounded sets
// (route patterns, status codes, outcome names), never raw paths or ids.
//
// Gauges read at scrape time (pool sizes, open streams, rows in the database)
// are callbacks run by Render().
//
// Why not prometheus-cpp (Debian's prometheus-cpp-dev 1.0.1): its
// Histogram::Observe locks a per-series std::mutex and Family::Add, the only
// way to find a labelled series, locks the family's mutex on every call, so a
// request labelled by route and status would take two mutexes per request;
// its development package also pulls civetweb, libcurl and zlib headers for
// the exposer and push client we would not use. The exposition format is
// small and fixed, and base/metrics_test.cc checks it (promtool checks the
// gateway's real scrape in tests/metrics_test.cc).
//
// Thread-safe: every function may be called from any thread. A Registry and
// its families must outlive every use of the references it hands out.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace paintlock::base::metrics {

class Counter {
 public:
  void Inc(std::uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  std::uint64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

// Observations counted into fixed buckets (upper bounds, ascending, finite;
// +Inf is implicit). Render() writes them cumulative, as the format requires.
class Histogram {
 public:
  explicit Histogram(const std::vector<double>& bounds);
  void Observe(double value);

  struct Snapshot {
    std::vector<std::uint64_t> cumulative;  // one per bound, then +Inf (== count)
    double sum = 0;
    std::uint64_t count = 0;
  };
  // Each bucket is read atomically but not all at once: under concurrent
  // observations a snapshot may lag one of them, never run ahead of count.
  Snapshot Read() const;
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  const std::vector<double> bounds_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> buckets_;  // bounds_.size() + 1
  std::atomic<std::uint64_t> count_{0};
  std::atomic<double> sum_{0};
};

// Latency buckets, in seconds: the gateway's own requests, and calls to Stripe.
extern const std::vector<double> kRequestSecondsBuckets;
extern const std::vector<double> kUpstreamSecondsBuckets;

// A metric family: one name, one HELP, one TYPE, and a series per set of
// label values. M is Counter or Histogram.
template <class M>
class Family {
 public:
  // The series for `values`, one per label name in order (created at first
  // use). Never fails: over capacity, the shared "other" series.
  M& With(std::initializer_list<std::string_view> values);

  struct Series {
    std::vector<std::string> values;
    const M* metric;
  };
  // Every series, sorted by label values.
  std::vector<Series> Collect() const;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& label_names() const { return label_names_; }

  ~Family();

 private:
  friend class Registry;
  struct Entry {
    std::uint64_t hash;
    std::vector<std::string> values;
    M metric;
  };
  Family(std::string name, std::string help, std::vector<std::string> label_names,
         std::size_t capacity, std::function<Entry*(std::uint64_t, std::vector<std::string>)> make);
  Entry* Find(std::uint64_t hash, std::initializer_list<std::string_view> values) const;

  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const std::size_t capacity_;  // series before "other"
  const std::size_t slots_;     // table size: twice the capacity, a power of two
  const std::function<Entry*(std::uint64_t, std::vector<std::string>)> make_;
  std::unique_ptr<std::atomic<Entry*>[]> table_;  // written once per slot, under insert_mu_
  std::mutex insert_mu_;
  std::size_t size_ = 0;                // guarded by insert_mu_
  std::atomic<Entry*> other_{nullptr};  // written once, under insert_mu_
};

// A value read at scrape time: label values (one per label name) and the value.
struct Sample {
  std::vector<std::string> values;
  double value = 0;
};

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;
  ~Registry();

  // Registration happens at start-up; a name registered twice returns the
  // first family (its help, labels and buckets win), so every floor may ask
  // for its metrics from wherever it is first needed.
  Family<Counter>& AddCounter(const std::string& name, const std::string& help,
                              std::vector<std::string> label_names = {},
                              std::size_t capacity = 256);
  Family<Histogram>& AddHistogram(const std::string& name, const std::string& help,
                                  std::vector<std::string> label_names,
                                  const std::vector<double>& bounds, std::size_t capacity = 128);
  // `type` is "gauge" or "counter"; `read` runs at every Render() and returns
  // the current samples (none: only HELP and TYPE are written).
  void AddCallback(const std::string& name, const std::string& help, const std::string& type,
                   std::vector<std::string> label_names, std::function<std::vector<Sample>()> read);

  // Every family in the text format, sorted by name, ending with a newline.
  std::string Render() const;

 private:
  struct Callback {
    std::string name, help, type;
    std::vector<std::string> label_names;
    std::function<std::vector<Sample>()> read;
  };
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family<Counter>>> counters_;      // guarded by mu_
  std::vector<std::unique_ptr<Family<Histogram>>> histograms_;  // guarded by mu_
  std::vector<Callback> callbacks_;                             // guarded by mu_
};

// The process's registry: what base/, locks/, stripe/, webhooks/ and
// checkout/ count, rendered by the gateway's GET /metrics.
Registry& DefaultRegistry();

// The text format's pieces, for tests and for callers that render their own.
std::string EscapeLabelValue(std::string_view value);
std::string EscapeHelp(std::string_view help);
// A sample value or bucket bound: integers without a fraction, +Inf/-Inf/NaN
// as the format spells them, otherwise the shortest text that reads back.
std::string FormatNumber(double value);

}  // namespace paintlock::base::metrics
