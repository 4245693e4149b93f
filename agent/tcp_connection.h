// TcpConnection: one established TCP socket as a network namespace's kernel reports it
// (sock_diag, agent/sock_diag.h), with the byte counters of its struct tcp_info.
//
// IpAddress holds every address as 16 bytes in network order: IPv6 as it is, IPv4 as the
// IPv4-mapped IPv6 address ::ffff:a.b.c.d (RFC 4291 2.5.5.2). So an IPv4 peer reached through an
// AF_INET6 socket (which the kernel reports as ::ffff:a.b.c.d) and the same peer seen on an
// AF_INET socket compare equal, and a pod IP written "10.1.2.3" matches both.
//
// Thread-safety: plain values; the functions are pure.
#ifndef HUYGENS_AGENT_TCP_CONNECTION_H_
#define HUYGENS_AGENT_TCP_CONNECTION_H_

#include <array>
#include <compare>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace huygens::agent {

struct IpAddress {
  std::array<uint8_t, 16> bytes{};  // network order; IPv4 as ::ffff:a.b.c.d

  // From the 4 bytes of an IPv4 address, network order.
  static IpAddress FromV4(const uint8_t (&v4)[4]);
  // From the 16 bytes of an IPv6 address, network order (an IPv4-mapped one stays as it is, so
  // it equals FromV4 of its last 4 bytes).
  static IpAddress FromV6(const uint8_t (&v6)[16]);

  // True for an IPv4(-mapped) address.
  bool IsV4() const;
  // 127.0.0.0/8 and ::1: traffic that never leaves one network namespace.
  bool IsLoopback() const;
  // "10.1.2.3" for IPv4(-mapped) addresses, else the RFC 5952 text ("fd00::1").
  std::string ToString() const;

  friend auto operator<=>(const IpAddress&, const IpAddress&) = default;
};

// Parses "10.1.2.3" or "fd00::1" (inet_pton's forms; an IPv4-mapped "::ffff:10.1.2.3" equals
// "10.1.2.3"). Errors: InvalidArgument `"<text>" is not an IP address`.
absl::StatusOr<IpAddress> ParseIpAddress(std::string_view text);

// An IP address and a TCP port.
struct Endpoint {
  IpAddress ip;
  uint16_t port = 0;

  // "10.1.2.3:80", "[fd00::1]:80".
  std::string ToString() const;
  friend auto operator<=>(const Endpoint&, const Endpoint&) = default;
};

// One TCP socket of a network namespace, from that namespace's point of view.
struct TcpConnection {
  Endpoint local;
  Endpoint remote;
  // struct tcp_info tcpi_bytes_acked: bytes this side sent that the peer acknowledged (RFC 4898
  // tcpEStatsAppHCThruOctetsAcked). Since the socket was created; never decreases.
  uint64_t bytes_acked = 0;
  // struct tcp_info tcpi_bytes_received: bytes this side received (RFC 4898
  // tcpEStatsAppHCThruOctetsReceived). Since the socket was created; never decreases.
  uint64_t bytes_received = 0;
  // The socket's inode number (idiag_inode): tells a new socket on a reused address pair from
  // the old one.
  uint32_t inode = 0;

  friend bool operator==(const TcpConnection&, const TcpConnection&) = default;
};

}  // namespace huygens::agent

#endif  // HUYGENS_AGENT_TCP_CONNECTION_H_
