#include "agent/netns_tcp_reader.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "agent/sock_diag.h"
#include "base/status.h"
#include "fmt/format.h"

namespace huygens::agent {
namespace {

// A file descriptor closed when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string Where(const std::string& netns_path) {
  return netns_path.empty() ? "own network namespace" : "network namespace " + netns_path;
}

absl::Status ErrnoError(int error, const std::string& netns_path, std::string_view step) {
  return absl::ErrnoToStatus(error, fmt::format("sock_diag in {}: {}", Where(netns_path), step));
}

// A NETLINK_SOCK_DIAG socket created inside `netns_path` (the caller's namespace when "").
absl::StatusOr<Fd> OpenSocket(const std::string& netns_path) {
  if (netns_path.empty()) {
    Fd fd(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
    if (fd.get() < 0) return ErrnoError(errno, netns_path, "socket");
    return fd;
  }
  absl::Status status;
  Fd fd;
  // Only this thread changes namespace; it ends right after, the socket stays in the namespace.
  std::thread enter([&] {
    Fd ns(open(netns_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (ns.get() < 0) {
      status = ErrnoError(errno, netns_path, "open");
      return;
    }
    if (setns(ns.get(), CLONE_NEWNET) != 0) {
      status = ErrnoError(errno, netns_path, "setns");
      return;
    }
    fd = Fd(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
    if (fd.get() < 0) status = ErrnoError(errno, netns_path, "socket");
  });
  enter.join();
  if (!status.ok()) return status;
  return fd;
}

// Sends the dump request of `family` and reads the reply until NLMSG_DONE.
absl::StatusOr<std::vector<TcpConnection>> Dump(int fd, uint8_t family, uint32_t seq,
                                                const std::string& netns_path) {
  const std::string request = BuildTcpDumpRequest(family, seq);
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(fd, request.data(), request.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
             sizeof(kernel)) != static_cast<ssize_t>(request.size())) {
    return ErrnoError(errno, netns_path, "send");
  }
  std::vector<TcpConnection> out;
  std::string buffer(64 * 1024, '\0');
  for (;;) {
    const ssize_t n = recv(fd, buffer.data(), buffer.size(), MSG_TRUNC);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, netns_path, "recv");
    }
    if (static_cast<size_t>(n) > buffer.size()) {
      return absl::InternalError(fmt::format("sock_diag in {}: a {}-byte datagram overflows the "
                                             "{}-byte buffer",
                                             Where(netns_path), n, buffer.size()));
    }
    absl::StatusOr<SockDiagChunk> chunk =
        ParseSockDiagChunk(std::string_view(buffer.data(), static_cast<size_t>(n)));
    if (!chunk.ok()) {
      return absl::Status(chunk.status().code(),
                          fmt::format("{}: {}", Where(netns_path), Msg(chunk.status())));
    }
    out.insert(out.end(), chunk->connections.begin(), chunk->connections.end());
    if (chunk->done) return out;
    if (n == 0) {
      return absl::InvalidArgumentError(fmt::format(
          "sock_diag in {}: reply ends without NLMSG_DONE (truncated)", Where(netns_path)));
    }
  }
}

}  // namespace

SockDiagReader::SockDiagReader(std::chrono::milliseconds timeout) : timeout_(timeout) {}

absl::StatusOr<std::vector<TcpConnection>> SockDiagReader::Read(const std::string& netns_path) {
  absl::StatusOr<Fd> fd = OpenSocket(netns_path);
  if (!fd.ok()) return fd.status();
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout_.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout_.count() % 1000) * 1000);
  if (setsockopt(fd->get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0) {
    return ErrnoError(errno, netns_path, "setsockopt SO_RCVTIMEO");
  }
  absl::StatusOr<std::vector<TcpConnection>> v4 = Dump(fd->get(), AF_INET, 1, netns_path);
  if (!v4.ok()) return v4.status();
  absl::StatusOr<std::vector<TcpConnection>> v6 = Dump(fd->get(), AF_INET6, 2, netns_path);
  if (!v6.ok() && !absl::IsNotFound(v6.status())) return v6.status();
  if (v6.ok()) v4->insert(v4->end(), v6->begin(), v6->end());
  return v4;
}

}  // namespace huygens::agent
