#include "serving/http_server.h"

#include <httplib.h>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <thread>
#include <type_traits>

#include "absl/base/internal/raw_logging.h"
#include "fmt/format.h"
#include "serving/http_connections.h"

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

namespace {

// Connections idle between two requests are closed after this long; it also bounds how long
// Stop() could wait for one, were its socket not shut down (kube-scheduler keeps one open to the
// extender).
constexpr std::chrono::seconds kKeepAliveIdle{1};
constexpr int kMaxRequestsPerConnection = 100;
constexpr std::chrono::seconds kWriteTimeout{10};

// Answers a request whose body AnnouncedBody refuses.
void Refuse(const RequestBody& body, httplib::Response& res) {
  res.status = body.refusal_status;
  res.set_header("Connection", "close");
  res.set_content(body.refusal + "\n", "text/plain; charset=utf-8");
}

// An httplib server (Base: httplib::Server, or httplib::SSLServer for HTTPS) whose accepted
// sockets go to a ConnectionPool instead of httplib's own connection loop; httplib parses, routes
// and answers each request.
template <class Base>
class PooledServer final : public Base {
 public:
  template <class... BaseArgs>
  explicit PooledServer(const ConnectionLimits& limits, BaseArgs&&... base_args)
      : Base(std::forward<BaseArgs>(base_args)...),
        pool_(limits, TlsContext(),
              [this](httplib::Stream& stream, bool close_connection, bool& connection_closed,
                     const std::function<void(httplib::Request&)>& setup_request) {
                return this->process_request(stream, close_connection, connection_closed, setup_request);
              }) {}

  ConnectionPool& pool() { return pool_; }
  // The listening socket (INVALID_SOCKET before binding and after stop()).
  const std::atomic<socket_t>& listening_socket() const { return this->svr_sock_; }

 private:
  SSL_CTX* TlsContext() const {
    if constexpr (std::is_same_v<Base, httplib::SSLServer>) {
      return this->ssl_context();
    } else {
      return nullptr;
    }
  }
  // Called on the listening thread (InlineTaskQueue) for each accepted socket.
  bool process_and_close_socket(socket_t sock) override {
    pool_.Admit(sock);
    return true;
  }

  ConnectionPool pool_;
};

// httplib's task queue, running each task at once on the listening thread: a task only hands an
// accepted socket to the ConnectionPool (PooledServer::process_and_close_socket).
class InlineTaskQueue final : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

}  // namespace

struct HttpServer::Impl {
  explicit Impl(const HttpServerOptions& options) {
    const ConnectionLimits limits{.max_connections = std::max(1, options.max_connections),
                                  .max_connections_per_client = std::max(1, options.max_connections_per_client),
                                  .request_timeout = options.request_timeout,
                                  .keep_alive_idle = kKeepAliveIdle,
                                  .write_timeout = kWriteTimeout,
                                  .max_header_bytes = kMaxHeaderBytes,
                                  .max_body_bytes = options.max_body_bytes,
                                  .max_requests_per_connection = kMaxRequestsPerConnection};
    if (options.tls) {
      const TlsOptions& tls = *options.tls;
      auto ssl = std::make_unique<PooledServer<httplib::SSLServer>>(
          limits, tls.cert_file.c_str(), tls.key_file.c_str(),
          tls.client_ca_file.empty() ? nullptr : tls.client_ca_file.c_str());
      pool = &ssl->pool();
      listening = &ssl->listening_socket();
      server = std::move(ssl);
    } else {
      auto plain = std::make_unique<PooledServer<httplib::Server>>(limits);
      pool = &plain->pool();
      listening = &plain->listening_socket();
      server = std::move(plain);
    }
  }
  std::unique_ptr<httplib::Server> server;
  ConnectionPool* pool = nullptr;  // server's
  const std::atomic<socket_t>* listening = nullptr;  // server's
  std::thread listener;
  std::atomic<bool> listener_done{false};
  std::vector<std::pair<std::string, HealthCheck>> health;
  std::vector<std::pair<std::string, HealthCheck>> ready;
  bool started = false;
};

HttpServer::HttpServer(HttpServerOptions options, const MetricsRegistry* registry)
    : options_(std::move(options)), registry_(registry), impl_(std::make_unique<Impl>(options_)) {}

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
  // Before routing, which would read the body: the client's name (TLS), then the body's length.
  std::vector<std::string> allowed_names;
  if (options_.tls) allowed_names = options_.tls->allowed_client_names;
  const std::size_t max_body_bytes = options_.max_body_bytes;
  impl->server->set_pre_routing_handler([allowed = std::move(allowed_names), max_body_bytes](
                                            const httplib::Request& req, httplib::Response& res) {
    if (!allowed.empty()) {
      const std::string name = PeerCommonName(req.ssl);
      if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        res.status = 403;
        res.set_content(fmt::format("client certificate {:?} is not allowed here\n", name), "text/plain");
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (const RequestBody body = AnnouncedBody(req, max_body_bytes); body.refusal_status != 0) {
      Refuse(body, res);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // A client that waits for "100 Continue" before sending a body learns at once that it is refused.
  impl->server->set_expect_100_continue_handler(
      [max_body_bytes](const httplib::Request& req, httplib::Response& res) {
        const RequestBody body = AnnouncedBody(req, max_body_bytes);
        if (body.refusal_status == 0) return 100;
        Refuse(body, res);
        return body.refusal_status;
      });
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
  // SO_REUSEADDR only: cpp-httplib's default SO_REUSEPORT would let a second process share the
  // port silently instead of failing to bind.
  impl->server->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  impl->server->new_task_queue = [] { return new InlineTaskQueue; };
  // The connection pool keeps these; httplib only writes them in each response's Keep-Alive
  // header, and checks a Content-Length against the payload limit again.
  impl->server->set_keep_alive_timeout(kKeepAliveIdle.count());
  impl->server->set_keep_alive_max_count(kMaxRequestsPerConnection);
  impl->server->set_payload_max_length(options_.max_body_bytes);
  const auto& [host, port] = *hostport;
  int bound = port == 0 ? impl->server->bind_to_any_port(host)
                        : (impl->server->bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return absl::UnavailableError(fmt::format("serving: cannot bind {:?}", options_.address));
  }
  // cpp-httplib listens with a backlog of 5: a burst of connections (slow clients' among them)
  // would have the SYNs of a probe dropped, and retried only a second later. Listening again on
  // a listening socket sets its backlog.
  ::listen(impl->listening->load(), SOMAXCONN);
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
  impl_->pool->Stop();
}

}  // namespace huygens::serving
