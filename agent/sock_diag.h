// SockDiag: the netlink sock_diag protocol for TCP sockets (NETLINK_SOCK_DIAG, man 7 sock_diag),
// as bytes: the dump request and the parser of the kernel's reply. No I/O (the socket lives in
// agent/netns_tcp_reader.h).
//
// Request: one netlink message of type SOCK_DIAG_BY_FAMILY, flags NLM_F_REQUEST | NLM_F_DUMP,
// payload struct inet_diag_req_v2 {family, IPPROTO_TCP, idiag_ext = INET_DIAG_INFO,
// idiag_states = TCP_ESTABLISHED only}: every established TCP socket of the family in the
// socket's network namespace, each with its struct tcp_info.
//
// Reply: a sequence of netlink messages (struct nlmsghdr, NLMSG_ALIGN-ed), spread over one or
// more datagrams: one SOCK_DIAG_BY_FAMILY message per socket (struct inet_diag_msg followed by
// route attributes, among them INET_DIAG_INFO = struct tcp_info), then NLMSG_DONE; or
// NLMSG_ERROR with the kernel's errno. The kernel's tcp_info may be shorter or longer than this
// build's struct tcp_info: the parser reads the two counters it needs by their offsets
// (tcpi_bytes_acked, tcpi_bytes_received: Linux 4.1 and later) and ignores the rest.
//
// Thread-safety: pure functions.
#ifndef HUYGENS_AGENT_SOCK_DIAG_H_
#define HUYGENS_AGENT_SOCK_DIAG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/tcp_connection.h"

namespace huygens::agent {

// The bytes of the dump request for `family` (AF_INET or AF_INET6) with sequence number `seq`.
// REQUIRES: family is AF_INET or AF_INET6.
std::string BuildTcpDumpRequest(uint8_t family, uint32_t seq);

// What one datagram of the reply holds.
struct SockDiagChunk {
  std::vector<TcpConnection> connections;  // in the kernel's order
  bool done = false;                       // NLMSG_DONE was seen: the dump is complete
};

// Parses one datagram (or several concatenated) of a dump reply. Messages of type NLMSG_NOOP
// are skipped. Errors:
//   - NLMSG_ERROR with a non-zero error, or NLMSG_DONE with a negative one: the status of that
//     errno (absl::ErrnoToStatus; e.g. NotFound for ENOENT, which the kernel answers when the
//     family's diag module is absent), "sock_diag: kernel error: <strerror>"; Unknown for a
//     code outside 1..4095;
//   - InvalidArgument "sock_diag: message <i> at byte <offset>: <problem>" for a truncated or
//     malformed message: a header or length that does not fit, an unknown message type, an
//     inet_diag_msg that is short or of a family other than AF_INET/AF_INET6, a route attribute
//     that overruns its message, a missing INET_DIAG_INFO, a tcp_info too short to hold
//     tcpi_bytes_received, bytes after NLMSG_DONE.
absl::StatusOr<SockDiagChunk> ParseSockDiagChunk(std::string_view bytes);

// Parses a whole reply (every datagram concatenated): ParseSockDiagChunk, which must end with
// NLMSG_DONE (else InvalidArgument "sock_diag: reply ends without NLMSG_DONE (truncated)").
absl::StatusOr<std::vector<TcpConnection>> ParseSockDiagDump(std::string_view bytes);

}  // namespace huygens::agent

#endif  // HUYGENS_AGENT_SOCK_DIAG_H_
