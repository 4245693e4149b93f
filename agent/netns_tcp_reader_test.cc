// SockDiagReader against this machine's kernel: real sockets in the test process, in its own
// network namespace and in a fresh one (unshare(CLONE_NEWNET), which needs root).
#include "agent/netns_tcp_reader.h"

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace huygens::agent {
namespace {

using ::testing::HasSubstr;

constexpr size_t kBytes = 300000;

// A connected TCP pair over loopback with kBytes sent client -> server and read by the server.
struct Transfer {
  int client = -1, server = -1;
  Endpoint client_end, server_end;
  ~Transfer() {
    if (client >= 0) close(client);
    if (server >= 0) close(server);
  }
};

Endpoint LocalEndpoint(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  Endpoint e;
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    uint8_t v4[4];
    std::memcpy(v4, &in->sin_addr, 4);
    e.ip = IpAddress::FromV4(v4);
    e.port = ntohs(in->sin_port);
  } else {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    uint8_t v6[16];
    std::memcpy(v6, &in6->sin6_addr, 16);
    e.ip = IpAddress::FromV6(v6);
    e.port = ntohs(in6->sin6_port);
  }
  return e;
}

// Sets up a Transfer on the loopback address of `family` in the calling thread's namespace.
void MakeTransfer(int family, Transfer& t) {
  sockaddr_storage addr{};
  socklen_t len;
  if (family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&addr);
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof(sockaddr_in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&addr);
    in6->sin6_family = AF_INET6;
    in6->sin6_addr = in6addr_loopback;
    len = sizeof(sockaddr_in6);
  }
  const int listener = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0) << std::strerror(errno);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), len), 0) << std::strerror(errno);
  ASSERT_EQ(listen(listener, 1), 0);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  t.client = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_EQ(connect(t.client, reinterpret_cast<sockaddr*>(&addr), len), 0) << std::strerror(errno);
  t.server = accept(listener, nullptr, nullptr);
  close(listener);
  ASSERT_GE(t.server, 0);
  t.client_end = LocalEndpoint(t.client);
  t.server_end = LocalEndpoint(t.server);
  std::thread writer([&] {
    const std::string data(kBytes, 'x');
    size_t sent = 0;
    while (sent < data.size()) {
      const ssize_t n = write(t.client, data.data() + sent, data.size() - sent);
      if (n <= 0) return;
      sent += static_cast<size_t>(n);
    }
  });
  std::vector<char> buffer(65536);
  size_t received = 0;
  while (received < kBytes) {
    const ssize_t n = read(t.server, buffer.data(), buffer.size());
    if (n <= 0) break;
    received += static_cast<size_t>(n);
  }
  writer.join();
  ASSERT_EQ(received, kBytes);
}

std::optional<TcpConnection> Find(const std::vector<TcpConnection>& all, const Endpoint& local,
                                  const Endpoint& remote) {
  for (const TcpConnection& c : all) {
    if (c.local == local && c.remote == remote) return c;
  }
  return std::nullopt;
}

// Reads `netns_path` until both sides of `t` show the transfer (the last ACK may still be on
// its way), at most 2 s; returns the last read.
std::vector<TcpConnection> ReadUntilCounted(const std::string& netns_path, const Transfer& t) {
  SockDiagReader reader;
  std::vector<TcpConnection> all;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  do {
    absl::StatusOr<std::vector<TcpConnection>> got = reader.Read(netns_path);
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok()) return {};
    all = *got;
    auto client = Find(all, t.client_end, t.server_end);
    if (client && client->bytes_acked >= kBytes) return all;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  return all;
}

void ExpectTransferSeen(const std::vector<TcpConnection>& all, const Transfer& t) {
  auto client = Find(all, t.client_end, t.server_end);
  auto server = Find(all, t.server_end, t.client_end);
  ASSERT_TRUE(client.has_value()) << "client side " << t.client_end.ToString() << " missing";
  ASSERT_TRUE(server.has_value()) << "server side " << t.server_end.ToString() << " missing";
  EXPECT_GE(client->bytes_acked, kBytes);
  EXPECT_GE(server->bytes_received, kBytes);
  EXPECT_NE(client->inode, 0u);
  EXPECT_NE(client->inode, server->inode);
}

TEST(SockDiagReader, SeesAnIpv4ConnectionOfItsOwnNamespaceWithItsByteCounters) {
  Transfer t;
  ASSERT_NO_FATAL_FAILURE(MakeTransfer(AF_INET, t));
  ExpectTransferSeen(ReadUntilCounted("", t), t);
}

TEST(SockDiagReader, SeesAnIpv6ConnectionOfItsOwnNamespace) {
  const int probe = socket(AF_INET6, SOCK_STREAM, 0);
  if (probe < 0) GTEST_SKIP() << "no IPv6 on this machine";
  close(probe);
  Transfer t;
  ASSERT_NO_FATAL_FAILURE(MakeTransfer(AF_INET6, t));
  ExpectTransferSeen(ReadUntilCounted("", t), t);
}

TEST(SockDiagReader, SeesTheConnectionsOfAnotherNamespaceAndOnlyThose) {
  if (geteuid() != 0) GTEST_SKIP() << "unshare(CLONE_NEWNET) needs root";
  // A thread in a fresh network namespace holds a connection open while the test reads.
  std::promise<std::string> ready;  // the namespace file, or "" with a failure
  std::promise<void> finish;
  Transfer t;
  std::thread inside([&] {
    if (unshare(CLONE_NEWNET) != 0) {
      ADD_FAILURE() << "unshare: " << std::strerror(errno);
      ready.set_value("");
      return;
    }
    // A fresh namespace's loopback is down.
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
    ioctl(fd, SIOCGIFFLAGS, &ifr);
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
    const bool up = ioctl(fd, SIOCSIFFLAGS, &ifr) == 0;
    close(fd);
    EXPECT_TRUE(up) << std::strerror(errno);
    MakeTransfer(AF_INET, t);
    ready.set_value("/proc/self/task/" + std::to_string(syscall(SYS_gettid)) + "/ns/net");
    finish.get_future().wait();
  });
  const std::string netns = ready.get_future().get();
  if (!netns.empty()) {
    const std::vector<TcpConnection> seen = ReadUntilCounted(netns, t);
    ExpectTransferSeen(seen, t);
    SockDiagReader reader;
    absl::StatusOr<std::vector<TcpConnection>> host = reader.Read("");
    ASSERT_TRUE(host.ok()) << host.status();
    auto client = Find(seen, t.client_end, t.server_end);
    for (const TcpConnection& c : *host) {
      EXPECT_FALSE(client.has_value() && c.inode == client->inode)
          << "the other namespace's socket shows in the test's own namespace";
    }
  }
  finish.set_value();
  inside.join();
}

TEST(SockDiagReader, AMissingNamespaceFileIsAnErrorNamingIt) {
  SockDiagReader reader;
  absl::StatusOr<std::vector<TcpConnection>> got = reader.Read("/proc/no-such-pid/ns/net");
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(absl::IsNotFound(got.status())) << got.status();
  EXPECT_THAT(got.status().message(),
              HasSubstr("sock_diag in network namespace /proc/no-such-pid/ns/net: open"));
}

}  // namespace
}  // namespace huygens::agent
