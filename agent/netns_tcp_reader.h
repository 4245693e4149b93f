// TcpConnectionReader: reads the established TCP connections of a network namespace. The seam
// between the agent's traffic sampling (agent/traffic_meter.h) and the kernel: SockDiagReader
// asks the kernel through netlink sock_diag (agent/sock_diag.h); tests use a fake.
//
// How SockDiagReader enters a namespace: a short-lived thread opens the namespace file (e.g.
// /proc/<pid>/ns/net), setns(CLONE_NEWNET)s itself into it, creates the NETLINK_SOCK_DIAG
// socket and ends. A socket stays in the namespace it was created in, so the caller's threads
// never change namespace and the dump that follows (from the calling thread) lists that
// namespace's sockets. Needs CAP_SYS_ADMIN (setns) and, for another process's namespace file,
// the right to read its /proc entries (CAP_SYS_PTRACE, or the same user; hostPID in a pod).
//
// Thread-safety: SockDiagReader holds no state; Read may run on several threads at once.
#ifndef HUYGENS_AGENT_NETNS_TCP_READER_H_
#define HUYGENS_AGENT_NETNS_TCP_READER_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/tcp_connection.h"

namespace huygens::agent {

class TcpConnectionReader {
 public:
  virtual ~TcpConnectionReader() = default;

  // The established TCP connections (IPv4 and IPv6) of the network namespace whose file is
  // `netns_path` (/proc/<pid>/ns/net, /run/netns/<name>, ...); "" = the caller's own
  // namespace. Errors name the path and the step (open, setns, socket, send, recv) with the
  // errno, or carry the reply parser's error.
  virtual absl::StatusOr<std::vector<TcpConnection>> Read(const std::string& netns_path) = 0;
};

// The netlink sock_diag reader (see the file comment). One socket per Read, closed before it
// returns (holding none keeps no namespace of a deleted pod alive). AF_INET6 answered with
// ENOENT (IPv6 diag not available in the namespace's kernel) counts as no IPv6 connections.
class SockDiagReader : public TcpConnectionReader {
 public:
  // `timeout`: the longest one receive waits for the kernel (SO_RCVTIMEO). Default 2 s.
  explicit SockDiagReader(std::chrono::milliseconds timeout = std::chrono::seconds(2));
  absl::StatusOr<std::vector<TcpConnection>> Read(const std::string& netns_path) override;

 private:
  const std::chrono::milliseconds timeout_;
};

}  // namespace huygens::agent

#endif  // HUYGENS_AGENT_NETNS_TCP_READER_H_
