// Upstream: the real kube-apiserver (and its etcd) behind FakeApiServer's upstream mode, in which
// the fake serves no objects of its own: it forwards every request to the real server, keeping
// its fault injection and request counts in front, so the same test code runs against the fake
// store (label `apiserver`) and against the real server (label `cluster`; see docs/testbed.md).
//
// The cluster is testbed/cluster.sh's. Upstream speaks to it as a system:masters user; the
// tests' own clients (and the huygens services they start) reach it through the fake's plain
// HTTP port, so what they are authorized to do is what the admin may do. Tests that check RBAC
// talk to the real server directly with their own credentials.
//
// Thread-safety: every method may be called from any thread.
#ifndef HUYGENS_KUBE_TESTING_UPSTREAM_H_
#define HUYGENS_KUBE_TESTING_UPSTREAM_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/rest_client.h"
#include "nlohmann/json.hpp"

namespace huygens::kube::testing {

struct UpstreamOptions {
  // The admin kubeconfig of the real cluster (testbed/cluster.sh writes DIR/admin.kubeconfig).
  std::string kubeconfig;
  // etcd's client URL ("http://127.0.0.1:16444"), for Compact. Empty: Compact fails.
  std::string etcd_url;
  // A command that restarts the kube-apiserver and returns once it is ready (testbed/cluster.sh
  // writes DIR/restart-apiserver), for RestartApiServer. Empty: RestartApiServer fails.
  std::string restart_command;
};

// The upstream named by the environment: HUYGENS_TEST_UPSTREAM_KUBECONFIG (required) and
// HUYGENS_TEST_UPSTREAM_ETCD (default: the first line of the file `etcd-url` beside the
// kubeconfig, which testbed/cluster.sh writes); the restart command is `restart-apiserver`
// beside the kubeconfig when that file exists. nullopt when the first is unset (the fake
// serves its own store).
std::optional<UpstreamOptions> UpstreamFromEnvironment();

class Upstream {
 public:
  // Errors: whatever loading the kubeconfig gives (NotFound, InvalidArgument).
  static absl::StatusOr<std::unique_ptr<Upstream>> Connect(const UpstreamOptions& options);

  // Forwards one request as it came (method, path, decoded query, body, content type) and
  // returns the real server's answer. Errors: transport failures only.
  absl::StatusOr<HttpAnswer> Forward(const HttpRequest& request);
  // Forwards a watch: `on_open` is called when the real server has taken it (2xx headers),
  // `on_line` gets each event line; see RestClient::Stream for the result.
  absl::Status ForwardWatch(const HttpRequest& request, const std::function<bool(std::string_view)>& on_line,
                            const std::atomic<bool>* cancel, const std::function<void()>& on_open);

  // Deletes what tests create, so that each test starts from an empty cluster as it does on
  // the fake: every pod (its finalizers removed, grace period 0), node, NodeResourceTopology,
  // event and lease outside kube-node-lease, and every namespace but default, kube-system,
  // kube-public and kube-node-lease (waiting until they are gone). Errors: the first failed
  // call.
  absl::Status Wipe();

  // The fake's direct store access, done through the API (see FakeApiServer). `resource` is a
  // qualified plural name ("pods", "leases.coordination.k8s.io"). Create writes the object's
  // `status` through the status subresource when the create dropped it, as a store write keeps
  // it. Errors: the API error, NotFound for an unknown resource name.
  absl::StatusOr<nlohmann::json> Create(std::string_view resource, nlohmann::json object);
  std::optional<nlohmann::json> Get(std::string_view resource, std::string_view ns, std::string_view name);
  absl::StatusOr<nlohmann::json> MergePatch(std::string_view resource, std::string_view ns, std::string_view name,
                                            const nlohmann::json& patch);
  std::vector<nlohmann::json> List(std::string_view resource, std::string_view ns);
  // The real server's current resourceVersion (etcd's revision, from a quorum list).
  std::int64_t ResourceVersion();
  // Compacts etcd at its current revision: a watch or continue token older than now gets 410
  // Gone once the apiserver's watch cache no longer holds the version.
  absl::Status Compact();
  // Runs the restart command (blocking, about 15 s with testbed/cluster.sh). Errors:
  // FailedPrecondition without one, Internal when it exits non-zero.
  absl::Status RestartApiServer();

  Client& client() { return *client_; }

 private:
  Upstream(std::unique_ptr<Client> client, std::unique_ptr<RestClient> raw, UpstreamOptions options);
  std::unique_ptr<Client> client_;  // admin, with retries
  std::unique_ptr<RestClient> raw_;  // admin, for forwarding
  std::string etcd_url_;
  std::string restart_command_;
};

// The ResourceRef of a qualified plural name, for the resources the fake knows plus
// namespaces; nullptr for any other.
const ResourceRef* ResourceByQualifiedName(std::string_view qualified);

}  // namespace huygens::kube::testing

#endif  // HUYGENS_KUBE_TESTING_UPSTREAM_H_
