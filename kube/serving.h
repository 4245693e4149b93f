// Serving for Huygens daemons: a Prometheus metrics registry and a small HTTP server that exposes
// it on /metrics together with /healthz and /readyz.
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
//
// HttpServer serves the registry and health endpoints on a "host:port" address (port 0 picks an
// ephemeral port; port() reports the bound one). Checks and extra handlers are registered before
// Start(); the server calls them from its worker threads, so they must be thread-safe.
#ifndef HUYGENS_KUBE_SERVING_H_
#define HUYGENS_KUBE_SERVING_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace huygens::kube {

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
  const std::size_t label_count_;
  mutable std::mutex mu_;
  std::map<LabelValues, double> values_;
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
  const std::size_t label_count_;
  mutable std::mutex mu_;
  std::map<LabelValues, double> values_;
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
  const std::size_t label_count_;
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<LabelValues, Series> series_;
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
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;
};

// "text/plain; version=0.0.4; charset=utf-8"
std::string_view ExpositionContentType();

// Escaping rules of the text format (exposed for tests and other writers).
std::string EscapeLabelValue(std::string_view value);  // \ -> \\, " -> \", newline -> \n
std::string EscapeHelp(std::string_view help);          // \ -> \\, newline -> \n
// A sample value as Prometheus writes it: shortest round-trip decimal, "+Inf", "-Inf", "NaN".
std::string FormatSampleValue(double value);

// A health or readiness check: OK, or an error whose message says what is wrong.
using HealthCheck = std::function<absl::Status()>;

// The reply of an extra handler.
struct HttpReply {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};
// An extra POST handler: receives the request body.
using PostHandler = std::function<HttpReply(const std::string& body)>;

struct HttpServerOptions {
  // "host:port"; port 0 binds an ephemeral port. Default "127.0.0.1:0" (tests never collide);
  // daemons pass their configured address.
  std::string address = "127.0.0.1:0";
  // Worker threads. Default 4.
  int threads = 4;
};

// Parses "host:port" (host may be empty for all addresses, or [v6] in brackets).
// Errors: InvalidArgument naming the address when the port is missing or not in 0..65535.
absl::StatusOr<std::pair<std::string, int>> ParseHostPort(std::string_view address);

// The HTTP server: GET /metrics (registry, if given), GET /healthz, GET /readyz, and any extra
// POST handlers. /healthz runs the health checks; /readyz runs the health checks and then the
// readiness checks. Both answer 200 "ok" when all pass, else 500 with one line per failed check
// ("[-]name failed: message"); with ?verbose every check gets a line ("[+]name ok").
class HttpServer {
 public:
  // `registry` may be null (no /metrics) and must outlive the server.
  HttpServer(HttpServerOptions options, const MetricsRegistry* registry);
  ~HttpServer();  // stops the server
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // REQUIRES: before Start().
  void AddHealthCheck(std::string name, HealthCheck check);
  void AddReadyCheck(std::string name, HealthCheck check);
  void HandlePost(std::string path, PostHandler handler);

  // Binds and starts serving in a background thread.
  // Errors: InvalidArgument (bad address), Unavailable (cannot bind).
  absl::Status Start();
  // The bound port (after Start()), 0 before.
  int port() const { return port_; }
  // Stops serving and joins the thread; idempotent.
  void Stop();

 private:
  struct Impl;
  HttpServerOptions options_;
  const MetricsRegistry* registry_;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_SERVING_H_
