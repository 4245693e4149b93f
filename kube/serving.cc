#include "kube/serving.h"

#include <httplib.h>

#include <atomic>
#include <charconv>
#include <cmath>
#include <thread>

#include "absl/base/internal/raw_logging.h"
#include "fmt/format.h"

namespace huygens::kube {

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
  std::lock_guard<std::mutex> lock(mu_);
  values_[labels] += by;
}

double CounterFamily::Value(const LabelValues& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = values_.find(labels);
  return it == values_.end() ? 0.0 : it->second;
}

void GaugeFamily::Set(const LabelValues& labels, double value) {
  CheckLabels(labels, label_count_);
  std::lock_guard<std::mutex> lock(mu_);
  values_[labels] = value;
}

void GaugeFamily::Add(const LabelValues& labels, double by) {
  CheckLabels(labels, label_count_);
  std::lock_guard<std::mutex> lock(mu_);
  values_[labels] += by;
}

double GaugeFamily::Value(const LabelValues& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = values_.find(labels);
  return it == values_.end() ? 0.0 : it->second;
}

void GaugeFamily::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  values_.clear();
}

void HistogramFamily::Observe(const LabelValues& labels, double value) {
  CheckLabels(labels, label_count_);
  std::lock_guard<std::mutex> lock(mu_);
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
  std::lock_guard<std::mutex> lock(mu_);
  auto it = series_.find(labels);
  return it == series_.end() ? 0 : it->second.count;
}

double HistogramFamily::Sum(const LabelValues& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = series_.find(labels);
  return it == series_.end() ? 0.0 : it->second.sum;
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
      std::mutex& mu = counter != nullptr ? counter->mu_ : gauge->mu_;
      const auto& values = counter != nullptr ? counter->values_ : gauge->values_;
      std::lock_guard<std::mutex> lock(mu);
      for (const auto& [labels, value] : values) {
        out += fmt::format("{}{} {}\n", name, LabelBlock(label_names, labels),
                           FormatSampleValue(value));
      }
      return;
    }
    std::lock_guard<std::mutex> lock(histogram->mu_);
    for (const auto& [labels, s] : histogram->series_) {
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
  std::lock_guard<std::mutex> lock(mu_);
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
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& f : families_) f->Render(out);
  return out;
}

// ---- HTTP server ----

absl::StatusOr<std::pair<std::string, int>> ParseHostPort(std::string_view address) {
  std::size_t colon = address.rfind(':');
  if (colon == std::string_view::npos) {
    return absl::InvalidArgumentError(
        fmt::format("address {:?}: want host:port (port 0 for any free port)", address));
  }
  std::string host(address.substr(0, colon));
  std::string_view port_text = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "0.0.0.0";
  int port = -1;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        fmt::format("address {:?}: port {:?} is not a number in 0..65535", address, port_text));
  }
  return std::make_pair(host, port);
}

struct HttpServer::Impl {
  httplib::Server server;
  std::thread listener;
  std::atomic<bool> listener_done{false};
  std::vector<std::pair<std::string, HealthCheck>> health;
  std::vector<std::pair<std::string, HealthCheck>> ready;
  bool started = false;
};

HttpServer::HttpServer(HttpServerOptions options, const MetricsRegistry* registry)
    : options_(std::move(options)), registry_(registry), impl_(std::make_unique<Impl>()) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::AddHealthCheck(std::string name, HealthCheck check) {
  ABSL_RAW_CHECK(!impl_->started, "HttpServer: checks are added before Start()");
  impl_->health.emplace_back(std::move(name), std::move(check));
}

void HttpServer::AddReadyCheck(std::string name, HealthCheck check) {
  ABSL_RAW_CHECK(!impl_->started, "HttpServer: checks are added before Start()");
  impl_->ready.emplace_back(std::move(name), std::move(check));
}

void HttpServer::HandlePost(std::string path, PostHandler handler) {
  ABSL_RAW_CHECK(!impl_->started, "HttpServer: handlers are added before Start()");
  impl_->server.Post(path, [handler = std::move(handler)](const httplib::Request& req,
                                                          httplib::Response& res) {
    HttpReply reply = handler(req.body);
    res.status = reply.status;
    res.set_content(reply.body, reply.content_type.c_str());
  });
}

namespace {

// Runs the check lists in order; kube-apiserver's healthz output shape.
void RunChecks(std::string_view what,
               const std::vector<const std::vector<std::pair<std::string, HealthCheck>>*>& lists,
               const httplib::Request& req, httplib::Response& res) {
  bool verbose = req.has_param("verbose");
  bool healthy = true;
  std::string lines;
  for (const auto* list : lists) {
    for (const auto& [name, check] : *list) {
      absl::Status status = check();
      if (status.ok()) {
        if (verbose) lines += fmt::format("[+]{} ok\n", name);
      } else {
        healthy = false;
        lines += fmt::format("[-]{} failed: {}\n", name, std::string(status.message()));
      }
    }
  }
  res.status = healthy ? 200 : 500;
  std::string body = lines;
  if (healthy) {
    body += verbose ? fmt::format("{} check passed\n", what) : "ok";
  } else {
    body += fmt::format("{} check failed\n", what);
  }
  res.set_content(body, "text/plain; charset=utf-8");
}

}  // namespace

absl::Status HttpServer::Start() {
  ABSL_RAW_CHECK(!impl_->started, "HttpServer: Start() called twice");
  auto hostport = ParseHostPort(options_.address);
  if (!hostport.ok()) return hostport.status();
  Impl* impl = impl_.get();
  const MetricsRegistry* registry = registry_;
  if (registry != nullptr) {
    impl->server.Get("/metrics", [registry](const httplib::Request&, httplib::Response& res) {
      res.set_content(registry->Expose(), std::string(ExpositionContentType()).c_str());
    });
  }
  impl->server.Get("/healthz", [impl](const httplib::Request& req, httplib::Response& res) {
    RunChecks("healthz", {&impl->health}, req, res);
  });
  impl->server.Get("/readyz", [impl](const httplib::Request& req, httplib::Response& res) {
    RunChecks("readyz", {&impl->health, &impl->ready}, req, res);
  });
  std::size_t threads = static_cast<std::size_t>(std::max(1, options_.threads));
  // SO_REUSEADDR only: cpp-httplib's default SO_REUSEPORT would let a second process share the
  // port silently instead of failing to bind.
  impl->server.set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  impl->server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  const auto& [host, port] = *hostport;
  int bound = port == 0 ? impl->server.bind_to_any_port(host)
                        : (impl->server.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return absl::UnavailableError(fmt::format("serving: cannot bind {:?}", options_.address));
  }
  port_ = bound;
  impl->started = true;
  impl->listener = std::thread([impl] {
    impl->server.listen_after_bind();
    impl->listener_done = true;
  });
  // cpp-httplib's stop() does nothing until the listener runs: wait for it, so that a Stop()
  // right after Start() cannot leave the thread listening forever.
  while (!impl->server.is_running() && !impl->listener_done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return absl::OkStatus();
}

void HttpServer::Stop() {
  if (!impl_->started) return;
  impl_->server.stop();
  if (impl_->listener.joinable()) impl_->listener.join();
}

}  // namespace huygens::kube
