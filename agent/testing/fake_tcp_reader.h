// FakeTcpReader: a TcpConnectionReader for tests (agent/netns_tcp_reader.h): the connections of
// each namespace path are set by the test; a path without an entry fails as setns would without
// the privilege. Every path read is recorded.
//
// Thread-safety: every method takes one mutex, so a test may change the connections while the
// agent's loop reads on another thread.
#ifndef HUYGENS_AGENT_TESTING_FAKE_TCP_READER_H_
#define HUYGENS_AGENT_TESTING_FAKE_TCP_READER_H_

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/netns_tcp_reader.h"

namespace huygens::agent::testing {

class FakeTcpReader : public TcpConnectionReader {
 public:
  absl::StatusOr<std::vector<TcpConnection>> Read(const std::string& netns_path) override {
    std::lock_guard<std::mutex> lock(mu_);
    reads_.push_back(netns_path);
    auto it = namespaces_.find(netns_path);
    if (it == namespaces_.end()) {
      return absl::PermissionDeniedError("setns: Operation not permitted");
    }
    return it->second;
  }
  // The connections the namespace at `netns_path` has from now on.
  void Set(const std::string& netns_path, std::vector<TcpConnection> connections) {
    std::lock_guard<std::mutex> lock(mu_);
    namespaces_[netns_path] = std::move(connections);
  }
  // Every path read so far, oldest first.
  std::vector<std::string> Reads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return reads_;
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::vector<TcpConnection>> namespaces_;
  std::vector<std::string> reads_;
};

}  // namespace huygens::agent::testing

#endif  // HUYGENS_AGENT_TESTING_FAKE_TCP_READER_H_
