#include "agent/sock_diag.h"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "fmt/format.h"

namespace huygens::agent {
namespace {

// TCP_ESTABLISHED in the kernel's enum of TCP states (include/net/tcp_states.h).
constexpr uint32_t kTcpEstablished = 1;

// Copies a T out of `bytes` at `offset`. REQUIRES: offset + sizeof(T) <= bytes.size().
template <typename T>
T Load(std::string_view bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

uint16_t NetworkPort(uint16_t be) {
  const auto* b = reinterpret_cast<const uint8_t*>(&be);
  return static_cast<uint16_t>(b[0] << 8 | b[1]);
}

Endpoint ToEndpoint(uint8_t family, const uint32_t (&addr)[4], uint16_t port_be) {
  Endpoint e;
  e.port = NetworkPort(port_be);
  if (family == AF_INET) {
    uint8_t v4[4];
    std::memcpy(v4, addr, 4);
    e.ip = IpAddress::FromV4(v4);
  } else {
    uint8_t v6[16];
    std::memcpy(v6, addr, 16);
    e.ip = IpAddress::FromV6(v6);
  }
  return e;
}

// The status of a kernel error code (a negative errno; INT_MIN or an unknown value gives
// Unknown).
absl::Status KernelError(int error) {
  const int64_t magnitude = error < 0 ? -static_cast<int64_t>(error) : error;
  const int errno_value = magnitude > 4095 ? 0 : static_cast<int>(magnitude);
  if (errno_value == 0) {
    return absl::UnknownError(fmt::format("sock_diag: kernel error code {}", error));
  }
  return absl::ErrnoToStatus(errno_value, "sock_diag: kernel error");
}

// One SOCK_DIAG_BY_FAMILY payload (inet_diag_msg + attributes) into a connection; errors are
// the problem without the message's position.
absl::StatusOr<TcpConnection> ParseInetDiag(std::string_view payload) {
  if (payload.size() < sizeof(inet_diag_msg)) {
    return absl::InvalidArgumentError(fmt::format(
        "inet_diag_msg needs {} bytes, the message has {}", sizeof(inet_diag_msg), payload.size()));
  }
  const auto msg = Load<inet_diag_msg>(payload, 0);
  if (msg.idiag_family != AF_INET && msg.idiag_family != AF_INET6) {
    return absl::InvalidArgumentError(
        fmt::format("idiag_family {} is neither AF_INET nor AF_INET6", msg.idiag_family));
  }
  TcpConnection c;
  c.local = ToEndpoint(msg.idiag_family, msg.id.idiag_src, msg.id.idiag_sport);
  c.remote = ToEndpoint(msg.idiag_family, msg.id.idiag_dst, msg.id.idiag_dport);
  c.inode = msg.idiag_inode;
  bool has_info = false;
  size_t offset = NLMSG_ALIGN(sizeof(inet_diag_msg));
  while (offset < payload.size()) {
    if (payload.size() - offset < sizeof(rtattr)) {
      return absl::InvalidArgumentError(
          fmt::format("attribute at payload byte {}: {} bytes left, a header needs {}", offset,
                      payload.size() - offset, sizeof(rtattr)));
    }
    const auto attr = Load<rtattr>(payload, offset);
    if (attr.rta_len < sizeof(rtattr) || attr.rta_len > payload.size() - offset) {
      return absl::InvalidArgumentError(
          fmt::format("attribute at payload byte {}: rta_len {} does not fit the {} bytes left",
                      offset, attr.rta_len, payload.size() - offset));
    }
    if (attr.rta_type == INET_DIAG_INFO) {
      const size_t size = attr.rta_len - RTA_LENGTH(0);
      constexpr size_t kNeeded = offsetof(tcp_info, tcpi_bytes_received) + sizeof(uint64_t);
      if (size < kNeeded) {
        return absl::InvalidArgumentError(fmt::format(
            "INET_DIAG_INFO holds {} bytes of tcp_info, tcpi_bytes_received needs {} (Linux 4.1 "
            "or later)",
            size, kNeeded));
      }
      const size_t info = offset + RTA_LENGTH(0);
      c.bytes_acked = Load<uint64_t>(payload, info + offsetof(tcp_info, tcpi_bytes_acked));
      c.bytes_received = Load<uint64_t>(payload, info + offsetof(tcp_info, tcpi_bytes_received));
      has_info = true;
    }
    offset += RTA_ALIGN(attr.rta_len);
  }
  if (!has_info) return absl::InvalidArgumentError("no INET_DIAG_INFO attribute (tcp_info)");
  return c;
}

}  // namespace

std::string BuildTcpDumpRequest(uint8_t family, uint32_t seq) {
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } message;
  std::memset(&message, 0, sizeof(message));
  message.header.nlmsg_len = sizeof(message);
  message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  message.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  message.header.nlmsg_seq = seq;
  message.request.sdiag_family = family;
  message.request.sdiag_protocol = IPPROTO_TCP;
  message.request.idiag_ext = 1U << (INET_DIAG_INFO - 1);
  message.request.idiag_states = 1U << kTcpEstablished;
  return std::string(reinterpret_cast<const char*>(&message), sizeof(message));
}

absl::StatusOr<SockDiagChunk> ParseSockDiagChunk(std::string_view bytes) {
  SockDiagChunk chunk;
  size_t offset = 0;
  for (int index = 0; offset < bytes.size(); ++index) {
    const auto fail = [&](const std::string& problem) {
      return absl::InvalidArgumentError(
          fmt::format("sock_diag: message {} at byte {}: {}", index, offset, problem));
    };
    if (chunk.done) return fail("data after NLMSG_DONE");
    if (bytes.size() - offset < sizeof(nlmsghdr)) {
      return fail(fmt::format("{} bytes left, a header needs {}", bytes.size() - offset,
                              sizeof(nlmsghdr)));
    }
    const auto header = Load<nlmsghdr>(bytes, offset);
    if (header.nlmsg_len < sizeof(nlmsghdr) || header.nlmsg_len > bytes.size() - offset) {
      return fail(fmt::format("nlmsg_len {} does not fit the {} bytes left", header.nlmsg_len,
                              bytes.size() - offset));
    }
    const std::string_view payload =
        bytes.substr(offset + NLMSG_HDRLEN, header.nlmsg_len - NLMSG_HDRLEN);
    switch (header.nlmsg_type) {
      case NLMSG_NOOP:
        break;
      case NLMSG_DONE:
        // The payload, when there is one, is the dump's own result: 0 or a negative errno.
        if (payload.size() >= sizeof(int) && Load<int>(payload, 0) < 0) {
          return KernelError(Load<int>(payload, 0));
        }
        chunk.done = true;
        break;
      case NLMSG_ERROR: {
        if (payload.size() < sizeof(int)) return fail("NLMSG_ERROR without an error code");
        const int error = Load<int>(payload, 0);
        if (error != 0) return KernelError(error);
        break;  // an acknowledgement
      }
      case SOCK_DIAG_BY_FAMILY: {
        absl::StatusOr<TcpConnection> c = ParseInetDiag(payload);
        if (!c.ok()) return fail(std::string(c.status().message()));
        chunk.connections.push_back(*c);
        break;
      }
      default:
        return fail(fmt::format("unexpected message type {}", header.nlmsg_type));
    }
    // The last message of a datagram may lack its alignment padding.
    offset += std::min<size_t>(NLMSG_ALIGN(header.nlmsg_len), bytes.size() - offset);
  }
  return chunk;
}

absl::StatusOr<std::vector<TcpConnection>> ParseSockDiagDump(std::string_view bytes) {
  absl::StatusOr<SockDiagChunk> chunk = ParseSockDiagChunk(bytes);
  if (!chunk.ok()) return chunk.status();
  if (!chunk->done) {
    return absl::InvalidArgumentError("sock_diag: reply ends without NLMSG_DONE (truncated)");
  }
  return std::move(chunk->connections);
}

}  // namespace huygens::agent
