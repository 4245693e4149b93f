#include "serving/metrics.h"

#include <charconv>
#include <cmath>

#include "absl/base/internal/raw_logging.h"
#include "fmt/format.h"

namespace huygens::serving {

namespace {

bool ValidName(std::string_view name, bool allow_colon) {
  if (name.empty()) return false;
  for (std::size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (allow_colon && c == ':') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

void CheckLabels(const LabelValues& labels, std::size_t expected) {
  ABSL_RAW_CHECK(labels.size() == expected, "metric: label value count differs from label names");
}

// `{a="x",b="y"}` for the given names and values plus an optional extra pair (for `le`); empty
// when there are no labels at all.
std::string LabelBlock(const std::vector<std::string>& names, const LabelValues& values,
                       std::string_view extra_name = {}, std::string_view extra_value = {}) {
  if (names.empty() && extra_name.empty()) return {};
  std::string out = "{";
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ',';
    out += fmt::format("{}=\"{}\"", names[i], EscapeLabelValue(values[i]));
  }
  if (!extra_name.empty()) {
    if (!names.empty()) out += ',';
    out += fmt::format("{}=\"{}\"", extra_name, extra_value);
  }
  out += '}';
  return out;
}

}  // namespace

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
  out.reserve(help.size());
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

std::string FormatSampleValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

std::string_view ExpositionContentType() { return "text/plain; version=0.0.4; charset=utf-8"; }

std::vector<double> LatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
}

// ---- families ----

void CounterFamily::Inc(const LabelValues& labels, double by) {
  CheckLabels(labels, label_count_);
  if (!(by >= 0)) return;
  absl::MutexLock lock(&mu_);
  values_[labels] += by;
}

double CounterFamily::Value(const LabelValues& labels) const {
  absl::MutexLock lock(&mu_);
  auto it = values_.find(labels);
  return it == values_.end() ? 0.0 : it->second;
}

void GaugeFamily::Set(const LabelValues& labels, double value) {
  CheckLabels(labels, label_count_);
  absl::MutexLock lock(&mu_);
  values_[labels] = value;
}

void GaugeFamily::Add(const LabelValues& labels, double by) {
  CheckLabels(labels, label_count_);
  absl::MutexLock lock(&mu_);
  values_[labels] += by;
}

double GaugeFamily::Value(const LabelValues& labels) const {
  absl::MutexLock lock(&mu_);
  auto it = values_.find(labels);
  return it == values_.end() ? 0.0 : it->second;
}

void GaugeFamily::Clear() {
  absl::MutexLock lock(&mu_);
  values_.clear();
}

void HistogramFamily::Observe(const LabelValues& labels, double value) {
  CheckLabels(labels, label_count_);
  absl::MutexLock lock(&mu_);
  Series& s = series_[labels];
  if (s.buckets.empty()) s.buckets.assign(bounds_.size(), 0);
  for (std::size_t i = 0; i < bounds_.size(); ++i) {
    if (value <= bounds_[i]) {
      ++s.buckets[i];
      break;
    }
  }
  ++s.count;
  s.sum += value;
}

std::uint64_t HistogramFamily::Count(const LabelValues& labels) const {
  absl::MutexLock lock(&mu_);
  auto it = series_.find(labels);
  return it == series_.end() ? 0 : it->second.count;
}

double HistogramFamily::Sum(const LabelValues& labels) const {
  absl::MutexLock lock(&mu_);
  auto it = series_.find(labels);
  return it == series_.end() ? 0.0 : it->second.sum;
}

std::map<LabelValues, double> CounterFamily::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return values_;
}

std::map<LabelValues, double> GaugeFamily::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return values_;
}

std::map<LabelValues, HistogramFamily::Series> HistogramFamily::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return series_;
}

// ---- registry ----

struct MetricsRegistry::Family {
  std::string name;
  std::string help;
  std::string type;
  std::vector<std::string> label_names;
  std::unique_ptr<CounterFamily> counter;
  std::unique_ptr<GaugeFamily> gauge;
  std::unique_ptr<HistogramFamily> histogram;

  void Render(std::string& out) const {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, EscapeHelp(help), name, type);
    if (counter != nullptr || gauge != nullptr) {
      for (const auto& [labels, value] : counter != nullptr ? counter->Snapshot() : gauge->Snapshot()) {
        out += fmt::format("{}{} {}\n", name, LabelBlock(label_names, labels),
                           FormatSampleValue(value));
      }
      return;
    }
    for (const auto& [labels, s] : histogram->Snapshot()) {
      std::uint64_t cumulative = 0;
      for (std::size_t i = 0; i < histogram->bounds_.size(); ++i) {
        cumulative += s.buckets[i];
        out += fmt::format("{}_bucket{} {}\n", name,
                           LabelBlock(label_names, labels, "le",
                                      FormatSampleValue(histogram->bounds_[i])),
                           cumulative);
      }
      out += fmt::format("{}_bucket{} {}\n", name, LabelBlock(label_names, labels, "le", "+Inf"),
                         s.count);
      out += fmt::format("{}_sum{} {}\n", name, LabelBlock(label_names, labels),
                         FormatSampleValue(s.sum));
      out += fmt::format("{}_count{} {}\n", name, LabelBlock(label_names, labels), s.count);
    }
  }
};

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

MetricsRegistry::Family& MetricsRegistry::Register(std::string name, std::string help,
                                                   std::vector<std::string> label_names,
                                                   std::string_view type) {
  ABSL_RAW_CHECK(ValidName(name, true), "metric: invalid metric name");
  for (const std::string& label : label_names) {
    ABSL_RAW_CHECK(ValidName(label, false) && label.rfind("__", 0) != 0,
                   "metric: invalid label name");
  }
  absl::MutexLock lock(&mu_);
  for (const auto& f : families_) {
    ABSL_RAW_CHECK(f->name != name, "metric: family registered twice");
  }
  auto family = std::make_unique<Family>();
  family->name = std::move(name);
  family->help = std::move(help);
  family->type = std::string(type);
  family->label_names = std::move(label_names);
  families_.push_back(std::move(family));
  return *families_.back();
}

CounterFamily& MetricsRegistry::AddCounter(std::string name, std::string help,
                                           std::vector<std::string> label_names) {
  std::size_t n = label_names.size();
  Family& f = Register(std::move(name), std::move(help), std::move(label_names), "counter");
  f.counter.reset(new CounterFamily(n));
  return *f.counter;
}

GaugeFamily& MetricsRegistry::AddGauge(std::string name, std::string help,
                                       std::vector<std::string> label_names) {
  std::size_t n = label_names.size();
  Family& f = Register(std::move(name), std::move(help), std::move(label_names), "gauge");
  f.gauge.reset(new GaugeFamily(n));
  return *f.gauge;
}

HistogramFamily& MetricsRegistry::AddHistogram(std::string name, std::string help,
                                               std::vector<std::string> label_names,
                                               std::vector<double> bounds) {
  for (const std::string& label : label_names) {
    ABSL_RAW_CHECK(label != "le", "metric: histogram label named le");
  }
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    ABSL_RAW_CHECK(std::isfinite(bounds[i]) && (i == 0 || bounds[i - 1] < bounds[i]),
                   "metric: histogram bounds must be finite and strictly increasing");
  }
  std::size_t n = label_names.size();
  Family& f = Register(std::move(name), std::move(help), std::move(label_names), "histogram");
  f.histogram.reset(new HistogramFamily(n, std::move(bounds)));
  return *f.histogram;
}

std::string MetricsRegistry::Expose() const {
  std::string out;
  absl::MutexLock lock(&mu_);
  for (const auto& f : families_) f->Render(out);
  return out;
}

}  // namespace huygens::serving
