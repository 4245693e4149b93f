#include "serving/http_connections.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdint>
#include <cstring>
#include <system_error>
#include <utility>

#include "fmt/format.h"

namespace huygens::serving {
namespace {

using Clock = std::chrono::steady_clock;

// Waits until `fd` is ready for `events` (or has hung up or failed) before `deadline`; false when
// the deadline passes first.
bool Await(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    const int64_t left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{.fd = fd, .events = events, .revents = 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, INT_MAX)));
    if (ready > 0) return true;
    if (ready < 0 && errno != EINTR) return false;
  }
}

// Runs the non-blocking socket call `op` (recv or send on `fd`) until it does not block, waiting
// for `events` until `deadline`. Returns op's result, or -1 on an error or at the deadline.
template <class Op>
ssize_t SocketCall(int fd, short events, Clock::time_point deadline, Op op) {
  for (;;) {
    const ssize_t n = op();
    if (n >= 0) return n;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
    if (!Await(fd, events, deadline)) return -1;
  }
}

// Runs the OpenSSL call `op` (SSL_accept, SSL_read or SSL_write on `ssl`, over the non-blocking
// `fd`) until it succeeds, waiting for what OpenSSL asks for until `deadline`. Returns op's
// result when positive, 0 when the peer ended the TLS session, -1 on a failure or at the
// deadline.
template <class Op>
int TlsCall(SSL* ssl, int fd, Clock::time_point deadline, Op op) {
  for (;;) {
    ERR_clear_error();  // SSL_get_error reads this thread's queue: leave nothing of an earlier call
    const int n = op();
    if (n > 0) return n;
    short events = 0;
    switch (SSL_get_error(ssl, n)) {
      case SSL_ERROR_ZERO_RETURN:
        return 0;
      case SSL_ERROR_WANT_READ:
        events = POLLIN;
        break;
      case SSL_ERROR_WANT_WRITE:
        events = POLLOUT;
        break;
      default:
        return -1;
    }
    if (!Await(fd, events, deadline)) return -1;
  }
}

int ClampToInt(std::size_t n) { return static_cast<int>(std::min<std::size_t>(n, INT_MAX)); }

// The remote (`peer`) or local address of a socket as text, and its port; "" and 0 when unknown.
std::pair<std::string, int> SocketAddress(int fd, bool peer) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  auto* raw = reinterpret_cast<sockaddr*>(&address);
  if ((peer ? ::getpeername(fd, raw, &length) : ::getsockname(fd, raw, &length)) != 0) return {"", 0};
  char text[INET6_ADDRSTRLEN] = {};
  if (address.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&address);
    ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
    return {text, ntohs(v4->sin_port)};
  }
  if (address.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&address);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
    return {text, ntohs(v6->sin6_port)};
  }
  return {"", 0};
}

// One connection's bytes for httplib, plain or TLS (`ssl` set, its handshake done), over a
// non-blocking socket. Reads go through a buffer (httplib reads request lines a byte at a
// time); each request may read until its deadline and at most its budget of bytes. Each write
// completes within the write timeout, or fails.
class ConnectionStream final : public httplib::Stream {
 public:
  ConnectionStream(int fd, SSL* ssl, std::chrono::milliseconds write_timeout)
      : fd_(fd), ssl_(ssl), write_timeout_(write_timeout) {}

  // The next request: its bytes must arrive before `deadline`; its line and headers may take
  // `budget` of them.
  void StartRequest(Clock::time_point deadline, std::size_t budget) {
    deadline_ = deadline;
    budget_ = budget;
  }
  // The request's headers are read: the rest of it is a body of `length` bytes.
  void StartBody(std::size_t length) { budget_ = length; }
  // The bytes of the request's body not read (after StartBody).
  std::size_t unread_body() const { return budget_; }

  // Whether bytes (or the end of the stream) arrive before `deadline`.
  bool WaitForData(Clock::time_point deadline) const {
    return begin_ != end_ || (ssl_ != nullptr && SSL_pending(ssl_) > 0) || Await(fd_, POLLIN, deadline);
  }

  bool is_readable() const override { return WaitForData(deadline_); }
  bool is_writable() const override { return Await(fd_, POLLOUT, Clock::now() + write_timeout_); }

  ssize_t read(char* ptr, size_t size) override {
    if (budget_ == 0) return -1;  // the request is larger than a request may be
    if (begin_ == end_) {
      const ssize_t n =
          ssl_ != nullptr
              ? TlsCall(ssl_, fd_, deadline_, [&] { return SSL_read(ssl_, buffer_, sizeof(buffer_)); })
              : SocketCall(fd_, POLLIN, deadline_, [&] { return ::recv(fd_, buffer_, sizeof(buffer_), 0); });
      if (n <= 0) return n;
      begin_ = 0;
      end_ = static_cast<std::size_t>(n);
    }
    const std::size_t n = std::min({size, end_ - begin_, budget_});
    std::memcpy(ptr, buffer_ + begin_, n);
    begin_ += n;
    budget_ -= n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    const Clock::time_point deadline = Clock::now() + write_timeout_;
    std::size_t done = 0;
    while (done < size) {
      const char* rest = ptr + done;
      const ssize_t n =
          ssl_ != nullptr
              ? TlsCall(ssl_, fd_, deadline, [&] { return SSL_write(ssl_, rest, ClampToInt(size - done)); })
              : SocketCall(fd_, POLLOUT, deadline, [&] { return ::send(fd_, rest, size - done, MSG_NOSIGNAL); });
      if (n <= 0) return -1;
      done += static_cast<std::size_t>(n);
    }
    return static_cast<ssize_t>(size);
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    std::tie(ip, port) = SocketAddress(fd_, /*peer=*/true);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    std::tie(ip, port) = SocketAddress(fd_, /*peer=*/false);
  }
  socket_t socket() const override { return fd_; }

 private:
  const int fd_;
  SSL* const ssl_;
  const std::chrono::milliseconds write_timeout_;
  Clock::time_point deadline_;
  std::size_t budget_ = 0;
  char buffer_[16 * 1024];
  std::size_t begin_ = 0;  // buffer_[begin_, end_) is received and not yet read
  std::size_t end_ = 0;
};

}  // namespace

RequestBody AnnouncedBody(const httplib::Request& req, std::size_t max_body_bytes) {
  const bool has_body = req.method == "POST" || req.method == "PUT" || req.method == "PATCH" ||
                        req.method == "PRI" || (req.method == "DELETE" && req.has_header("Content-Length"));
  if (!has_body) return {};
  if (req.has_header("Transfer-Encoding") || !req.has_header("Content-Length")) {
    return {.refusal_status = 411,
            .refusal = "a request body needs a Content-Length (chunked bodies are not accepted)"};
  }
  const std::string text = req.get_header_value("Content-Length");
  uint64_t length = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), length);
  if (req.get_header_value_count("Content-Length") != 1 || ec != std::errc() || end != text.data() + text.size()) {
    return {.refusal_status = 400, .refusal = fmt::format("Content-Length {:?} is not one number", text)};
  }
  if (length > max_body_bytes) {
    return {.refusal_status = 413,
            .refusal = fmt::format("a request body of {} bytes is over this server's limit of {} bytes", length,
                                   max_body_bytes)};
  }
  return {.length = static_cast<std::size_t>(length)};
}

ConnectionPool::ConnectionPool(ConnectionLimits limits, SSL_CTX* tls, ProcessRequest process)
    : limits_(limits), tls_(tls), process_(std::move(process)) {}

ConnectionPool::~ConnectionPool() { Stop(); }

void ConnectionPool::Admit(int fd) {
  std::string client = SocketAddress(fd, /*peer=*/true).first;
  absl::MutexLock lock(&mu_);
  auto same_client = per_client_.find(client);
  if (stopping_ || static_cast<int>(open_.size()) >= limits_.max_connections ||
      (same_client != per_client_.end() && same_client->second >= limits_.max_connections_per_client)) {
    ::close(fd);
    return;
  }
  if (idle_ > 0) {
    --idle_;
  } else {
    try {
      threads_.emplace_back([this] { Work(); });
    } catch (const std::system_error&) {  // no thread to be had: refuse as over a limit
      ::close(fd);
      return;
    }
  }
  open_.insert(fd);
  ++per_client_[client];
  jobs_.push_back({fd, std::move(client)});
}

void ConnectionPool::Work() {
  absl::MutexLock lock(&mu_);
  const auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !jobs_.empty() || stopping_; };
  for (;;) {
    mu_.Await(absl::Condition(&has_work));
    if (jobs_.empty()) return;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    mu_.Unlock();
    Serve(job.fd);
    mu_.Lock();
    // Closed under the lock: Stop() shuts down only sockets still in open_, never a number the
    // kernel has since given to another file.
    open_.erase(job.fd);
    ::close(job.fd);
    if (--per_client_[job.client] == 0) per_client_.erase(job.client);
    ++idle_;
  }
}

void ConnectionPool::Serve(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return;
  // httplib writes a response's headers and its body apart: with Nagle's algorithm the body
  // waits for the ACK of the headers, which the client delays (40 ms on Linux).
  const int nodelay = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof(nodelay));
  Clock::time_point deadline = Clock::now() + limits_.request_timeout;
  SSL* ssl = nullptr;
  if (tls_ != nullptr) {
    ssl = SSL_new(tls_);
    if (ssl == nullptr || SSL_set_fd(ssl, fd) != 1 ||
        TlsCall(ssl, fd, deadline, [&] { return SSL_accept(ssl); }) <= 0) {
      SSL_free(ssl);
      return;
    }
  }
  ConnectionStream stream(fd, ssl, limits_.write_timeout);
  bool ok = true;
  for (int served = 0; served < limits_.max_requests_per_connection; ++served) {
    if (served > 0) {
      if (!stream.WaitForData(Clock::now() + limits_.keep_alive_idle)) break;
      deadline = Clock::now() + limits_.request_timeout;
    }
    stream.StartRequest(deadline, limits_.max_header_bytes);
    const bool last = served + 1 == limits_.max_requests_per_connection || stopping_;
    bool closed = false;
    bool head_read = false;  // else the request line or headers were refused (answered 400 or 414, or not at all)
    ok = process_(stream, last, closed, [&](httplib::Request& req) {
      head_read = true;
      req.ssl = ssl;
      const RequestBody body = AnnouncedBody(req, limits_.max_body_bytes);
      // A refused body stays unread: the stream is out of step with the requests.
      if (body.refusal_status != 0) closed = true;
      stream.StartBody(body.length);
    });
    // A body left unread (answered without it, as by a 403) would be read as the next request.
    if (!ok || !head_read || closed || last || stream.unread_body() > 0) break;
  }
  if (ssl != nullptr) {
    if (ok) SSL_shutdown(ssl);  // one close_notify, not waiting for the peer's
    SSL_free(ssl);
  }
}

void ConnectionPool::Stop() {
  std::vector<std::thread> threads;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (int fd : open_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace huygens::serving
