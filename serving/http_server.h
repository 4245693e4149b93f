// The HTTP endpoints of the Huygens daemons: /metrics (a serving/metrics.h registry), /healthz
// and /readyz, and extra POST handlers (the scheduler's extender).
//
// HttpServer serves the registry and health endpoints on a "host:port" address (port 0 picks an
// ephemeral port; port() reports the bound one). Checks and extra handlers are registered before
// Start(); the server calls them from its connection threads, so they must be thread-safe.
//
// Limits (HttpServerOptions; serving/http_connections.h says how they are kept): each
// connection is served on a thread of its own, at most max_connections at once and
// max_connections_per_client from one remote address (more are closed unread), so clients that
// send slowly hold only their own connections, never the thread /healthz needs; a request must
// arrive whole within request_timeout; its request line and headers may take kMaxHeaderBytes
// and its body max_body_bytes, announced by Content-Length and refused (413, or 411 without a
// Content-Length) before any of it is read. Every accepted connection is TCP_NODELAY, so an
// answer is never held back waiting for the client's delayed ACK.
#ifndef HUYGENS_SERVING_HTTP_SERVER_H_
#define HUYGENS_SERVING_HTTP_SERVER_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "serving/metrics.h"

namespace huygens::serving {

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

// HTTPS for an HttpServer: its certificate, and optionally the clients it accepts.
struct TlsOptions {
  // PEM files: the server's certificate (chain) and its private key. Both required.
  std::string cert_file;
  std::string key_file;
  // PEM file of the CAs that sign accepted client certificates. Empty: no client certificate is
  // asked for. Set: a client without a certificate signed by one of them fails the handshake.
  std::string client_ca_file;
  // With client_ca_file: the accepted client certificates' subject common names (e.g.
  // "system:kube-scheduler"); any other client gets 403 on every path. Empty: any name.
  std::vector<std::string> allowed_client_names;
};

// The most a request's line and headers may take, together.
inline constexpr std::size_t kMaxHeaderBytes = 64 * 1024;

struct HttpServerOptions {
  // "host:port"; port 0 binds an ephemeral port. Default "127.0.0.1:0" (tests never collide);
  // daemons pass their configured address.
  std::string address = "127.0.0.1:0";
  // The largest request body (POST, PUT, PATCH, DELETE) read, in bytes. A request must announce
  // its body's length (Content-Length): a longer one is answered 413 Payload Too Large, one
  // without (chunked) 411 Length Required, and its connection closed, without reading the body.
  // Default 64 KiB.
  std::size_t max_body_bytes = 64 * 1024;
  // A request, its TLS handshake, request line, headers and body, must arrive within this time of
  // its first byte (of the connection's accept, for its first request); else the connection is
  // closed unanswered. Default 10 s.
  std::chrono::milliseconds request_timeout{10000};
  // Connections served at once (a thread each); one more is closed at once. Default 64.
  int max_connections = 64;
  // Connections served at once from one remote address; one more is closed at once. Default 8.
  int max_connections_per_client = 8;
  // HTTPS instead of plain HTTP (the files are read once, at construction). Default none.
  std::optional<TlsOptions> tls;
};

// Parses "host:port" (host may be empty for all addresses, or [v6] in brackets).
// Errors: InvalidArgument naming the address when the port is missing or not in 0..65535.
absl::StatusOr<std::pair<std::string, int>> ParseHostPort(std::string_view address);

// `address` ("host:port") with its host replaced by the IP address `ip` (an IPv6 one with or
// without brackets): ReplaceHost("0.0.0.0:9464", "10.0.0.7") is "10.0.0.7:9464",
// ReplaceHost(":9464", "fd00::7") is "[fd00::7]:9464".
// Errors: InvalidArgument naming `ip` when it is not an IPv4 or IPv6 address; ParseHostPort's.
absl::StatusOr<std::string> ReplaceHost(std::string_view address, std::string_view ip);

// The HTTP server: GET /metrics (registry, if given), GET /healthz, GET /readyz, and any extra
// POST handlers. /healthz runs the health checks; /readyz runs the health checks and then the
// readiness checks. Both answer 200 "ok" when all pass, else (/healthz 500, /readyz 503 Service
// Unavailable: not ready to serve now, which says nothing about restarting) one line per failed
// check ("[-]name failed: message"); with ?verbose every check gets a line ("[+]name ok").
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

  // Binds and starts serving (a listening thread, and a thread per connection).
  // Errors: InvalidArgument (bad address; with TLS, a certificate, key or CA file that cannot be
  // read or does not match, naming the files), Unavailable (cannot bind).
  absl::Status Start();
  // The bound port (after Start()), 0 before.
  int port() const { return port_; }
  // Stops serving: closes the listening socket and every connection, and joins the threads once
  // the requests being handled are answered. Idempotent.
  void Stop();

 private:
  struct Impl;
  HttpServerOptions options_;
  const MetricsRegistry* registry_;
  std::unique_ptr<Impl> impl_;
  int port_ = 0;
};

}  // namespace huygens::serving

#endif  // HUYGENS_SERVING_HTTP_SERVER_H_
