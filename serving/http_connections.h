// The connections of an HttpServer: which are served, on what thread, and for how long. Internal
// to huygens_serving (http_server.h is the interface; this header includes cpp-httplib's).
//
// cpp-httplib alone serves accepted sockets on a fixed pool of threads whose reads time out only
// per read, so a few clients sending a byte every few seconds hold every thread (and /healthz
// waits behind them until the liveness probe fails), and it buffers a request line, a header or
// a chunked body whole, however large. HttpServer therefore hands each accepted socket to a
// ConnectionPool, which serves it on a thread of its own under these limits and lets httplib
// only parse, route and answer each request (ProcessRequest):
//   - admission: at most max_connections open at once, at most max_connections_per_client of
//     them from one remote address; a socket over either limit is closed at once, unread;
//   - a request (on HTTPS with the connection's TLS handshake) must arrive whole, request line,
//     headers and body, within request_timeout of its first byte (of the accept, for the first);
//     a connection idle between requests is closed after keep_alive_idle, and after
//     max_requests_per_connection requests;
//   - a request's line and headers may take max_header_bytes; its body is read only when its
//     headers announce its length (Content-Length) within max_body_bytes (AnnouncedBody), and
//     then exactly that many bytes; past either the stream fails and the connection is closed,
//     so nothing buffers more than that per connection;
//   - each write of a response must complete within write_timeout;
//   - every connection is TCP_NODELAY: a response goes out as written, never held for an ACK.
// Thread-safety: Admit and Stop may be called from any thread.
#ifndef HUYGENS_SERVING_HTTP_CONNECTIONS_H_
#define HUYGENS_SERVING_HTTP_CONNECTIONS_H_

#include <httplib.h>
#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace huygens::serving {

struct ConnectionLimits {
  int max_connections = 64;
  int max_connections_per_client = 8;
  std::chrono::milliseconds request_timeout{10000};
  std::chrono::milliseconds keep_alive_idle{1000};
  std::chrono::milliseconds write_timeout{10000};
  std::size_t max_header_bytes = 64 * 1024;
  std::size_t max_body_bytes = 64 * 1024;
  int max_requests_per_connection = 100;
};

// A request's body as its headers announce it: the bytes to read, or why none are.
struct RequestBody {
  std::size_t length = 0;  // 0: none
  // 0: read `length` bytes. Else the body is refused, unread, and this is the answer's status:
  // 411 (a method with a body but no Content-Length, or a Transfer-Encoding such as chunked),
  // 400 (a Content-Length that is not one number), 413 (longer than max_body_bytes).
  int refusal_status = 0;
  std::string refusal;  // the answer's text, for a refusal
};
// The body of `req` (whose request line and headers are read). POST, PUT, PATCH and PRI carry
// one, DELETE when it has a Content-Length (what cpp-httplib reads before routing); other
// methods have none.
RequestBody AnnouncedBody(const httplib::Request& req, std::size_t max_body_bytes);

// Serves one request read from `stream`: httplib's Server::process_request, with its arguments.
// `close_connection`: the response says `Connection: close` (the connection ends after it).
// Sets `connection_closed` when the connection must serve no further request. Calls
// `setup_request` once the request line and headers are read, before routing. Returns false
// when the request could not be read or answered.
using ProcessRequest = std::function<bool(httplib::Stream& stream, bool close_connection, bool& connection_closed,
                                          const std::function<void(httplib::Request&)>& setup_request)>;

class ConnectionPool {
 public:
  // `tls`: the context of HTTPS connections, whose handshakes the pool does; null for plain HTTP.
  // Not owned; must outlive the pool.
  ConnectionPool(ConnectionLimits limits, SSL_CTX* tls, ProcessRequest process);
  ~ConnectionPool();  // Stop()
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;

  // Takes the accepted socket `fd`: serves it on a thread (a new one when none is idle), or
  // closes it when over a limit or after Stop().
  void Admit(int fd);
  // Ends every connection (shuts their sockets down, so that no client holds a thread) and joins
  // the threads once the requests being handled are answered. Idempotent.
  void Stop();

 private:
  struct Job {
    int fd;
    std::string client;
  };
  void Work();
  void Serve(int fd);

  const ConnectionLimits limits_;
  SSL_CTX* const tls_;
  const ProcessRequest process_;
  std::atomic<bool> stopping_{false};
  absl::Mutex mu_;
  // Admitted, each promised to an idle or a new thread.
  std::deque<Job> jobs_ ABSL_GUARDED_BY(mu_);
  // Every admitted socket not yet closed.
  std::set<int> open_ ABSL_GUARDED_BY(mu_);
  // Open sockets by remote address.
  std::map<std::string, int> per_client_ ABSL_GUARDED_BY(mu_);
  // Threads waiting with no job promised to them.
  int idle_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace huygens::serving

#endif  // HUYGENS_SERVING_HTTP_CONNECTIONS_H_
