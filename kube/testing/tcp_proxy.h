// TcpProxy: a loopback TCP relay for tests, placed between a client and a server, that can
// freeze: stop relaying in both directions while every connection stays open and new ones are
// still accepted (and held), which is how a network partition or a half-open connection looks
// to both ends. Nothing is closed or reset while frozen; Thaw() relays again, and a connection
// either end closed meanwhile is then closed on the other end too. Freezing is what
// DropWatches (fake_apiserver.h) cannot show: a watch that neither ends nor breaks.
//
// Thread-safety: every public method may be called from any thread while the proxy runs.
#ifndef HUYGENS_KUBE_TESTING_TCP_PROXY_H_
#define HUYGENS_KUBE_TESTING_TCP_PROXY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace huygens::kube::testing {

class TcpProxy {
 public:
  // Listens on 127.0.0.1 (an ephemeral port) and relays each accepted connection to a new
  // connection to 127.0.0.1:`target_port`, on a background thread.
  // Errors: Unavailable when the listening socket cannot be set up.
  static absl::StatusOr<std::unique_ptr<TcpProxy>> Start(int target_port);
  // Closes every connection and joins the thread.
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const;
  // "http://127.0.0.1:<port>".
  std::string url() const;
  // Stops relaying (see the file comment); nothing is relayed once it returns. Idempotent.
  void Freeze();
  // Relays again; idempotent.
  void Thaw();
  // Connections accepted so far.
  int accepted() const;

 private:
  struct Impl;
  explicit TcpProxy(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace huygens::kube::testing

#endif  // HUYGENS_KUBE_TESTING_TCP_PROXY_H_
