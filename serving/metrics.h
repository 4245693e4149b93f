// The Prometheus metrics registry of the Huygens daemons (exposed by serving/http_server.h on
// /metrics).
//
// MetricsRegistry holds metric families (counters, gauges, histograms), each with a fixed list of
// label names; a series is one tuple of label values. Expose() renders the registry in the
// Prometheus text exposition format 0.0.4: per family `# HELP` (backslash and newline escaped) and
// `# TYPE`, then one line per series in label-value order; label values escape backslash, double
// quote and newline; a histogram renders cumulative `<name>_bucket{le="..."}` lines ending with
// le="+Inf", then `<name>_sum` and `<name>_count`.
// Invariants: family names are unique in a registry; a series' label values match its family's
// label names in number; a histogram's bucket bounds are strictly increasing and finite.
// Thread-safety: every family method and Expose() may be called from any thread; families live as
// long as their registry and their references stay valid.
#ifndef HUYGENS_SERVING_METRICS_H_
#define HUYGENS_SERVING_METRICS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace huygens::serving {

// Label values of one series, in the order of the family's label names.
using LabelValues = std::vector<std::string>;

// A monotonically increasing counter per label tuple (Prometheus type `counter`).
class CounterFamily {
 public:
  // Adds `by` (>= 0; negative amounts are ignored, a counter never decreases).
  // REQUIRES: labels.size() == number of label names.
  void Inc(const LabelValues& labels = {}, double by = 1.0);
  // The current value; 0 for a series never incremented.
  double Value(const LabelValues& labels = {}) const;

 private:
  friend class MetricsRegistry;
  explicit CounterFamily(std::size_t label_count) : label_count_(label_count) {}
  std::map<LabelValues, double> Snapshot() const;  // every series, for Expose
  const std::size_t label_count_;
  mutable absl::Mutex mu_;
  std::map<LabelValues, double> values_ ABSL_GUARDED_BY(mu_);
};

// A value that goes up and down per label tuple (Prometheus type `gauge`).
class GaugeFamily {
 public:
  // REQUIRES: labels.size() == number of label names (for all three).
  void Set(const LabelValues& labels, double value);
  void Add(const LabelValues& labels, double by);
  double Value(const LabelValues& labels = {}) const;
  // Drops every series (for gauges recomputed from scratch, such as per-node values).
  void Clear();

 private:
  friend class MetricsRegistry;
  explicit GaugeFamily(std::size_t label_count) : label_count_(label_count) {}
  std::map<LabelValues, double> Snapshot() const;  // every series, for Expose
  const std::size_t label_count_;
  mutable absl::Mutex mu_;
  std::map<LabelValues, double> values_ ABSL_GUARDED_BY(mu_);
};

// Observations counted into fixed buckets per label tuple (Prometheus type `histogram`).
class HistogramFamily {
 public:
  // Counts `value` in every bucket whose upper bound is >= value (and +Inf), adds it to the sum.
  // REQUIRES: labels.size() == number of label names.
  void Observe(const LabelValues& labels, double value);
  // Number of observations and their sum for one series (0, 0 if never observed).
  std::uint64_t Count(const LabelValues& labels = {}) const;
  double Sum(const LabelValues& labels = {}) const;

 private:
  friend class MetricsRegistry;
  struct Series {
    std::vector<std::uint64_t> buckets;  // non-cumulative count per finite bound
    std::uint64_t count = 0;
    double sum = 0;
  };
  HistogramFamily(std::size_t label_count, std::vector<double> bounds)
      : label_count_(label_count), bounds_(std::move(bounds)) {}
  std::map<LabelValues, Series> Snapshot() const;  // every series, for Expose
  const std::size_t label_count_;
  const std::vector<double> bounds_;
  mutable absl::Mutex mu_;
  std::map<LabelValues, Series> series_ ABSL_GUARDED_BY(mu_);
};

// Default histogram buckets for latencies in seconds: 1 ms .. 10 s (like client_golang's
// DefBuckets, extended down to 1 ms because a scheduling decision is sub-millisecond).
std::vector<double> LatencyBuckets();

// A set of metric families rendered together.
class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Registers a family. Names and label names must match [a-zA-Z_:][a-zA-Z0-9_:]* (label names
  // without ':' and not starting with "__"); histogram label names may not include "le".
  // REQUIRES: the name is not registered yet (a broken invariant at start: checked, aborts).
  CounterFamily& AddCounter(std::string name, std::string help,
                            std::vector<std::string> label_names = {});
  GaugeFamily& AddGauge(std::string name, std::string help,
                        std::vector<std::string> label_names = {});
  // REQUIRES: bounds strictly increasing and finite (+Inf is implicit).
  HistogramFamily& AddHistogram(std::string name, std::string help,
                                std::vector<std::string> label_names, std::vector<double> bounds);

  // The whole registry in text exposition format 0.0.4 (content type ExpositionContentType()).
  std::string Expose() const;

 private:
  struct Family;
  Family& Register(std::string name, std::string help, std::vector<std::string> label_names,
                   std::string_view type);
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<Family>> families_ ABSL_GUARDED_BY(mu_);
};

// "text/plain; version=0.0.4; charset=utf-8"
std::string_view ExpositionContentType();

// Escaping rules of the text format (exposed for tests and other writers).
std::string EscapeLabelValue(std::string_view value);  // \ -> \\, " -> \", newline -> \n
std::string EscapeHelp(std::string_view help);          // \ -> \\, newline -> \n
// A sample value as Prometheus writes it: shortest round-trip decimal, "+Inf", "-Inf", "NaN".
std::string FormatSampleValue(double value);

}  // namespace huygens::serving

#endif  // HUYGENS_SERVING_METRICS_H_
