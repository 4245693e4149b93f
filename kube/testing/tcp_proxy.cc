#include "kube/testing/tcp_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "fmt/format.h"

namespace huygens::kube::testing {

namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  return addr;
}

// Writes all of `data` (blocking); false when the peer is gone.
bool WriteAll(int fd, const char* data, ssize_t n) {
  while (n > 0) {
    ssize_t w = send(fd, data, static_cast<std::size_t>(n), MSG_NOSIGNAL);
    if (w <= 0) return false;
    data += w;
    n -= w;
  }
  return true;
}

}  // namespace

struct TcpProxy::Impl {
  int target_port = 0;
  int listen_fd = -1;
  int port = 0;
  std::atomic<bool> frozen{false};
  std::atomic<bool> stop{false};
  std::atomic<int> accepted{0};
  std::atomic<long> rounds{0};  // loop iterations begun
  std::thread thread;

  // One relayed connection: the accepted client socket and its connection to the target.
  struct Pair {
    int client = -1;
    int server = -1;
  };
  std::vector<Pair> pairs;  // the relay thread's only

  void Accept() {
    int client = accept(listen_fd, nullptr, nullptr);
    if (client < 0) return;
    ++accepted;
    int server = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr = Loopback(target_port);
    if (server < 0 || connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      if (server >= 0) close(server);
      close(client);
      return;
    }
    pairs.push_back({client, server});
  }

  // Relays what one side has to the other; false when the connection is over.
  static bool Relay(int from, int to) {
    char buffer[16384];
    ssize_t n = recv(from, buffer, sizeof(buffer), 0);
    return n > 0 && WriteAll(to, buffer, n);
  }

  void Loop() {
    while (!stop) {
      const bool relaying = !frozen;
      ++rounds;
      std::vector<pollfd> fds{{listen_fd, POLLIN, 0}};
      const std::size_t polled = relaying ? pairs.size() : 0;
      if (relaying) {
        for (const Pair& p : pairs) {
          fds.push_back({p.client, POLLIN, 0});
          fds.push_back({p.server, POLLIN, 0});
        }
      }
      // A short timeout: Freeze, Thaw and the destructor take effect within it.
      if (poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) Accept();
      if (!relaying) continue;
      std::vector<Pair> open;
      for (std::size_t i = 0; i < polled; ++i) {
        const Pair& p = pairs[i];
        const pollfd& c = fds[1 + 2 * i];
        const pollfd& s = fds[2 + 2 * i];
        bool alive = true;
        if (c.revents != 0) alive = Relay(p.client, p.server);
        if (alive && s.revents != 0) alive = Relay(p.server, p.client);
        if (alive) {
          open.push_back(p);
        } else {
          close(p.client);
          close(p.server);
        }
      }
      // Pairs accepted in this round were not polled: keep them.
      open.insert(open.end(), pairs.begin() + static_cast<std::ptrdiff_t>(polled), pairs.end());
      pairs = std::move(open);
    }
    for (const Pair& p : pairs) {
      close(p.client);
      close(p.server);
    }
  }
};

absl::StatusOr<std::unique_ptr<TcpProxy>> TcpProxy::Start(int target_port) {
  auto impl = std::make_unique<Impl>();
  impl->target_port = target_port;
  impl->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = Loopback(0);
  socklen_t len = sizeof(addr);
  if (impl->listen_fd < 0 || bind(impl->listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(impl->listen_fd, 64) != 0 ||
      getsockname(impl->listen_fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (impl->listen_fd >= 0) close(impl->listen_fd);
    return absl::UnavailableError("tcp proxy: cannot listen on 127.0.0.1");
  }
  impl->port = ntohs(addr.sin_port);
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Loop(); });
  return std::unique_ptr<TcpProxy>(new TcpProxy(std::move(impl)));
}

TcpProxy::TcpProxy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TcpProxy::~TcpProxy() {
  impl_->stop = true;
  impl_->thread.join();
  close(impl_->listen_fd);
}

int TcpProxy::port() const { return impl_->port; }
std::string TcpProxy::url() const { return fmt::format("http://127.0.0.1:{}", impl_->port); }
void TcpProxy::Freeze() {
  impl_->frozen = true;
  // Returns once a round that saw the flag has begun: nothing is relayed after Freeze().
  const long seen = impl_->rounds;
  while (impl_->rounds < seen + 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}
void TcpProxy::Thaw() { impl_->frozen = false; }
int TcpProxy::accepted() const { return impl_->accepted; }

}  // namespace huygens::kube::testing
