#include "base/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace paintlock::base::metrics {

const std::vector<double> kRequestSecondsBuckets = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                    0.5,   1,    2.5,   5,    10};
const std::vector<double> kUpstreamSecondsBuckets = {0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                                     2.5,   5,    10,  20,   60};

Histogram::Histogram(const std::vector<double>& bounds)
    : bounds_(bounds), buckets_(new std::atomic<std::uint64_t>[bounds.size() + 1]) {
  for (std::size_t i = 0; i <= bounds_.size(); ++i) buckets_[i].store(0);
}

void Histogram::Observe(double value) {
  const std::size_t i = static_cast<std::size_t>(
      std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin());
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  double sum = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(sum, sum + value, std::memory_order_relaxed)) {
  }
  count_.fetch_add(1, std::memory_order_release);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  // count first: every observation it includes has already bumped its
  // bucket, so the +Inf bucket (the sum of the buckets) is at least count.
  s.count = count_.load(std::memory_order_acquire);
  s.sum = sum_.load(std::memory_order_relaxed);
  std::uint64_t running = 0;
  for (std::size_t i = 0; i <= bounds_.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative.push_back(running);
  }
  // The text format requires the +Inf bucket to equal _count.
  s.count = std::max(s.count, running);
  s.cumulative.back() = s.count;
  return s;
}

namespace {

constexpr char kOther[] = "other";

std::uint64_t HashOf(std::initializer_list<std::string_view> values) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a, with a separator between values
  for (std::string_view v : values) {
    for (unsigned char c : v) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xffu) * 1099511628211ull;
  }
  return h;
}

bool SameValues(const std::vector<std::string>& stored,
                std::initializer_list<std::string_view> values) {
  if (stored.size() != values.size()) return false;
  auto it = stored.begin();
  for (std::string_view v : values) {
    if (*it++ != v) return false;
  }
  return true;
}

std::size_t SlotsFor(std::size_t capacity) {
  std::size_t slots = 8;
  while (slots < 2 * capacity) slots *= 2;
  return slots;
}

std::string LabelText(const std::vector<std::string>& names, const std::vector<std::string>& values,
                      const std::string& extra_name = "", const std::string& extra_value = "") {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < values.size(); ++i) {
    out += (out.empty() ? "" : ",") + names[i] + "=\"" + EscapeLabelValue(values[i]) + "\"";
  }
  if (!extra_name.empty()) {
    out += (out.empty() ? "" : ",") + extra_name + "=\"" + EscapeLabelValue(extra_value) + "\"";
  }
  return out.empty() ? out : "{" + out + "}";
}

void WriteHeader(std::string& out, const std::string& name, const std::string& help,
                 const char* type) {
  out += "# HELP " + name + " " + EscapeHelp(help) + "\n";
  out += "# TYPE " + name + " " + type + "\n";
}

}  // namespace

template <class M>
Family<M>::Family(std::string name, std::string help, std::vector<std::string> label_names,
                  std::size_t capacity,
                  std::function<Entry*(std::uint64_t, std::vector<std::string>)> make)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      capacity_(std::max<std::size_t>(capacity, 1)),
      slots_(SlotsFor(capacity_)),
      make_(std::move(make)),
      table_(new std::atomic<Entry*>[slots_]) {
  for (std::size_t i = 0; i < slots_; ++i) table_[i].store(nullptr);
}

template <class M>
Family<M>::~Family() {
  for (std::size_t i = 0; i < slots_; ++i) delete table_[i].load();
  delete other_.load();
}

template <class M>
typename Family<M>::Entry* Family<M>::Find(std::uint64_t hash,
                                           std::initializer_list<std::string_view> values) const {
  for (std::size_t i = 0; i < slots_; ++i) {
    Entry* e = table_[(hash + i) & (slots_ - 1)].load(std::memory_order_acquire);
    if (!e) return nullptr;  // entries are never removed: the probe ends at a hole
    if (e->hash == hash && SameValues(e->values, values)) return e;
  }
  return nullptr;
}

template <class M>
M& Family<M>::With(std::initializer_list<std::string_view> values) {
  const std::uint64_t hash = HashOf(values);
  if (Entry* e = Find(hash, values)) return e->metric;

  std::lock_guard<std::mutex> lock(insert_mu_);
  if (Entry* e = Find(hash, values)) return e->metric;  // inserted meanwhile
  if (size_ >= capacity_ || values.size() != label_names_.size()) {
    Entry* other = other_.load(std::memory_order_acquire);
    if (!other) {
      other = make_(0, std::vector<std::string>(label_names_.size(), kOther));
      other_.store(other, std::memory_order_release);
    }
    return other->metric;
  }
  std::size_t slot = hash & (slots_ - 1);
  while (table_[slot].load(std::memory_order_relaxed)) slot = (slot + 1) & (slots_ - 1);
  Entry* e = make_(hash, std::vector<std::string>(values.begin(), values.end()));
  table_[slot].store(e, std::memory_order_release);
  ++size_;
  return e->metric;
}

template <class M>
std::vector<typename Family<M>::Series> Family<M>::Collect() const {
  std::vector<Series> out;
  for (std::size_t i = 0; i < slots_; ++i) {
    if (const Entry* e = table_[i].load(std::memory_order_acquire)) {
      out.push_back({e->values, &e->metric});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const Series& a, const Series& b) { return a.values < b.values; });
  if (const Entry* other = other_.load(std::memory_order_acquire)) {
    out.push_back({other->values, &other->metric});
  }
  return out;
}

template class Family<Counter>;
template class Family<Histogram>;

Registry::~Registry() = default;

Family<Counter>& Registry::AddCounter(const std::string& name, const std::string& help,
                                      std::vector<std::string> label_names, std::size_t capacity) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& f : counters_) {
    if (f->name() == name) return *f;
  }
  using Entry = Family<Counter>::Entry;
  counters_.emplace_back(
      new Family<Counter>(name, help, std::move(label_names), capacity,
                          [](std::uint64_t hash, std::vector<std::string> values) {
                            return new Entry{hash, std::move(values), {}};
                          }));
  return *counters_.back();
}

Family<Histogram>& Registry::AddHistogram(const std::string& name, const std::string& help,
                                          std::vector<std::string> label_names,
                                          const std::vector<double>& bounds, std::size_t capacity) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& f : histograms_) {
    if (f->name() == name) return *f;
  }
  using Entry = Family<Histogram>::Entry;
  histograms_.emplace_back(
      new Family<Histogram>(name, help, std::move(label_names), capacity,
                            [bounds](std::uint64_t hash, std::vector<std::string> values) {
                              return new Entry{hash, std::move(values), Histogram(bounds)};
                            }));
  return *histograms_.back();
}

void Registry::AddCallback(const std::string& name, const std::string& help,
                           const std::string& type, std::vector<std::string> label_names,
                           std::function<std::vector<Sample>()> read) {
  std::lock_guard<std::mutex> lock(mu_);
  callbacks_.push_back({name, help, type, std::move(label_names), std::move(read)});
}

std::string Registry::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::string> by_name;  // each family's text, sorted by name
  for (const auto& f : counters_) {
    std::string& out = by_name[f->name()];
    WriteHeader(out, f->name(), f->help(), "counter");
    for (const auto& s : f->Collect()) {
      out += f->name() + LabelText(f->label_names(), s.values) + " " +
             FormatNumber(static_cast<double>(s.metric->Value())) + "\n";
    }
  }
  for (const auto& f : histograms_) {
    std::string& out = by_name[f->name()];
    WriteHeader(out, f->name(), f->help(), "histogram");
    for (const auto& s : f->Collect()) {
      const Histogram::Snapshot snap = s.metric->Read();
      const auto& bounds = s.metric->bounds();
      for (std::size_t i = 0; i < snap.cumulative.size(); ++i) {
        const std::string le = i < bounds.size() ? FormatNumber(bounds[i]) : "+Inf";
        out += f->name() + "_bucket" + LabelText(f->label_names(), s.values, "le", le) + " " +
               FormatNumber(static_cast<double>(snap.cumulative[i])) + "\n";
      }
      const std::string labels = LabelText(f->label_names(), s.values);
      out += f->name() + "_sum" + labels + " " + FormatNumber(snap.sum) + "\n";
      out += f->name() + "_count" + labels + " " + FormatNumber(static_cast<double>(snap.count)) +
             "\n";
    }
  }
  for (const auto& c : callbacks_) {
    std::string& out = by_name[c.name];
    WriteHeader(out, c.name, c.help, c.type.c_str());
    for (const auto& s : c.read()) {
      out += c.name + LabelText(c.label_names, s.values) + " " + FormatNumber(s.value) + "\n";
    }
  }
  std::string text;
  for (const auto& [name, family] : by_name) text += family;
  return text;
}

Registry& DefaultRegistry() {
  static Registry* registry = new Registry();  // never destroyed: used until exit
  return *registry;
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatNumber(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", value);
    return buf;
  }
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  return buf;
}

}  // namespace paintlock::base::metrics
