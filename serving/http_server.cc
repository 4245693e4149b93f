#include "serving/http_server.h"

#include <httplib.h>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <thread>

#include "absl/base/internal/raw_logging.h"
#include "fmt/format.h"

namespace huygens::serving {

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

absl::StatusOr<std::string> ReplaceHost(std::string_view address, std::string_view ip) {
  auto hostport = ParseHostPort(address);
  if (!hostport.ok()) return hostport.status();
  std::string host(ip);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned char parsed[sizeof(in6_addr)];
  if (::inet_pton(AF_INET, host.c_str(), parsed) == 1) return fmt::format("{}:{}", host, hostport->second);
  if (::inet_pton(AF_INET6, host.c_str(), parsed) == 1) return fmt::format("[{}]:{}", host, hostport->second);
  return absl::InvalidArgumentError(fmt::format("bind address {:?} is not an IPv4 or IPv6 address", ip));
}

struct HttpServer::Impl {
  explicit Impl(const std::optional<TlsOptions>& tls)
      : server(tls ? std::make_unique<httplib::SSLServer>(
                         tls->cert_file.c_str(), tls->key_file.c_str(),
                         tls->client_ca_file.empty() ? nullptr : tls->client_ca_file.c_str())
                   : std::make_unique<httplib::Server>()) {}
  std::unique_ptr<httplib::Server> server;
  std::thread listener;
  std::atomic<bool> listener_done{false};
  std::vector<std::pair<std::string, HealthCheck>> health;
  std::vector<std::pair<std::string, HealthCheck>> ready;
  bool started = false;
};

HttpServer::HttpServer(HttpServerOptions options, const MetricsRegistry* registry)
    : options_(std::move(options)), registry_(registry), impl_(std::make_unique<Impl>(options_.tls)) {}

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
  impl_->server->Post(path, [handler = std::move(handler)](const httplib::Request& req,
                                                          httplib::Response& res) {
    HttpReply reply = handler(req.body);
    res.status = reply.status;
    res.set_content(reply.body, reply.content_type.c_str());
  });
}

namespace {

// The subject common name of the TLS peer's certificate ("" when there is none).
std::string PeerCommonName(const SSL* ssl) {
  if (ssl == nullptr) return "";
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (cert == nullptr) return "";
  char name[256] = {};
  const int n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, name, sizeof(name));
  X509_free(cert);
  return n > 0 ? std::string(name, static_cast<std::size_t>(n)) : "";
}

// Runs the check lists in order; kube-apiserver's healthz output shape. A failure answers
// `failed_status`.
void RunChecks(std::string_view what, int failed_status,
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
  res.status = healthy ? 200 : failed_status;
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
  if (!impl->server->is_valid()) {  // only an SSLServer can be invalid: its files did not load
    return absl::InvalidArgumentError(fmt::format(
        "serving {}: TLS certificate {:?}, key {:?} or client CA {:?} cannot be loaded (unreadable, not PEM, or "
        "the key does not match the certificate)",
        options_.address, options_.tls->cert_file, options_.tls->key_file, options_.tls->client_ca_file));
  }
  if (options_.tls && !options_.tls->allowed_client_names.empty()) {
    impl->server->set_pre_routing_handler(
        [allowed = options_.tls->allowed_client_names](const httplib::Request& req, httplib::Response& res) {
          const std::string name = PeerCommonName(req.ssl);
          if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) {
            return httplib::Server::HandlerResponse::Unhandled;
          }
          res.status = 403;
          res.set_content(fmt::format("client certificate {:?} is not allowed here\n", name), "text/plain");
          return httplib::Server::HandlerResponse::Handled;
        });
  }
  const MetricsRegistry* registry = registry_;
  if (registry != nullptr) {
    impl->server->Get("/metrics", [registry](const httplib::Request&, httplib::Response& res) {
      res.set_content(registry->Expose(), std::string(ExpositionContentType()).c_str());
    });
  }
  impl->server->Get("/healthz", [impl](const httplib::Request& req, httplib::Response& res) {
    RunChecks("healthz", 500, {&impl->health}, req, res);
  });
  impl->server->Get("/readyz", [impl](const httplib::Request& req, httplib::Response& res) {
    RunChecks("readyz", 503, {&impl->health, &impl->ready}, req, res);
  });
  std::size_t threads = static_cast<std::size_t>(std::max(1, options_.threads));
  // SO_REUSEADDR only: cpp-httplib's default SO_REUSEPORT would let a second process share the
  // port silently instead of failing to bind.
  impl->server->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  impl->server->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  // cpp-httplib's stop() waits for each kept-alive connection to sit idle this long (default
  // 5 s): kube-scheduler keeps one open to the extender, which held every SIGTERM for 5 s.
  impl->server->set_keep_alive_timeout(1);
  const auto& [host, port] = *hostport;
  int bound = port == 0 ? impl->server->bind_to_any_port(host)
                        : (impl->server->bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return absl::UnavailableError(fmt::format("serving: cannot bind {:?}", options_.address));
  }
  port_ = bound;
  impl->started = true;
  impl->listener = std::thread([impl] {
    impl->server->listen_after_bind();
    impl->listener_done = true;
  });
  // cpp-httplib's stop() does nothing until the listener runs: wait for it, so that a Stop()
  // right after Start() cannot leave the thread listening forever.
  while (!impl->server->is_running() && !impl->listener_done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return absl::OkStatus();
}

void HttpServer::Stop() {
  if (!impl_->started) return;
  impl_->server->stop();
  if (impl_->listener.joinable()) impl_->listener.join();
}

}  // namespace huygens::serving
