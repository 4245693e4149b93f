// FakeApiServer: an in-memory Kubernetes API server for tests, speaking the real HTTP protocol
// for the parts Huygens uses (and enough discovery for kubectl).
//
// What it serves (see docs/kube-client.md for the full list and the known differences):
//   - objects keyed by (resource type, namespace, name); every write bumps one global
//     resourceVersion counter (a decimal string, like etcd's revision);
//   - GET, LIST (labelSelector, fieldSelector on any dotted field path, limit/continue with a
//     consistent snapshot), WATCH (chunked stream of ADDED/MODIFIED/DELETED/BOOKMARK/ERROR
//     events; an ERROR event carrying a 410 Expired Status when the requested version is older
//     than the retained window), POST (409 AlreadyExists), PUT (409 Conflict on a stale
//     resourceVersion), PATCH (merge, JSON and strategic-merge patch; a resourceVersion in the
//     patched object is a precondition), DELETE (with preconditions), pods/binding and the
//     status subresources;
//   - finalizers as the real server keeps them: a DELETE of an object with finalizers sets its
//     metadata.deletionTimestamp (grace period 0) and keeps it until an update removes the last
//     finalizer; create clears the deletion fields, an update cannot set or change them nor add
//     a finalizer to an object being deleted (422), and a Binding of a pod being deleted is
//     refused (409), as is one of a pod with spec.schedulingGates;
//   - resources: pods, nodes, namespaces, core and events.k8s.io/v1 events,
//     coordination.k8s.io/v1 leases, topology.node.k8s.io/v1alpha2 noderesourcetopologies,
//     huygens.io/v1alpha1 numaaffinitygroups (with status; no schema: any spec is stored);
//   - discovery: /version, /api, /apis, /api/v1, /apis/<group>/<version>;
//   - Status bodies shaped as the real server returns them.
// It listens on loopback with an ephemeral port, plain HTTP or HTTPS with a given certificate.
//
// Fault injection: FailNext (an error status for the next N matching requests), DropWatches
// (cut every open watch stream without the closing chunk), SetDelay (delay every request),
// Compact (forget the retained event window so older versions get 410).
//
// Upstream mode (the `cluster` test tier, docs/testbed.md): when FakeApiServerOptions::upstream
// is set, or else the environment names a real cluster (HUYGENS_TEST_UPSTREAM_KUBECONFIG, see
// upstream.h), Start first empties that cluster of what tests create and then serves no store
// of its own: every request, discovery included, is forwarded to the real kube-apiserver, and
// the direct store access below goes through its API. Fault injection, delays, dropped watches
// and request counts stay in front, so a test's code is the same in both modes; Compact
// compacts the real etcd. What the real server decides (validation, admission, versions) is
// then the real server's.
//
// Thread-safety: every public method may be called from any thread while the server runs.
#ifndef HUYGENS_KUBE_TESTING_FAKE_APISERVER_H_
#define HUYGENS_KUBE_TESTING_FAKE_APISERVER_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kube/testing/upstream.h"
#include "nlohmann/json.hpp"

namespace huygens::kube::testing {

struct FakeApiServerOptions {
  // Address to listen on. Default "127.0.0.1" (loopback only).
  std::string host = "127.0.0.1";
  // Port; 0 (default) picks an ephemeral port.
  int port = 0;
  // PEM files of the serving certificate and key. Both set: HTTPS. Default: plain HTTP.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Number of write events retained for watches; a watch or continue token from before the
  // window gets 410 Gone. Default 10000.
  std::size_t watch_window = 10000;
  // How often a watch that asked for bookmarks gets a BOOKMARK event. Default 1 s (the real
  // server sends them about once a minute; tests want them sooner). As on the real server, a
  // watch with a timeout also gets one 2 s before it ends, and none comes while the server's
  // version has not moved past the watch's start version.
  std::chrono::milliseconds bookmark_interval{1000};
  // Worker threads; every open watch holds one. Default 64.
  int worker_threads = 64;
  // A real API server to forward to (see the header comment). Default: the one the environment
  // names (UpstreamFromEnvironment), else none.
  std::optional<UpstreamOptions> upstream = UpstreamFromEnvironment();
  // Whether Start empties the upstream cluster first. Default true.
  bool wipe_upstream = true;
};

class FakeApiServer {
 public:
  // Starts listening and serving on a background thread.
  // Errors: Unavailable if the address cannot be bound, InvalidArgument for a bad TLS setup;
  // in upstream mode also the errors of connecting to and emptying the real cluster.
  static absl::StatusOr<std::unique_ptr<FakeApiServer>> Start(FakeApiServerOptions options = {});
  // Stops serving: ends every watch, then joins the server threads.
  ~FakeApiServer();
  FakeApiServer(const FakeApiServer&) = delete;
  FakeApiServer& operator=(const FakeApiServer&) = delete;

  int port() const;
  // "http://127.0.0.1:<port>" (or https://).
  std::string url() const;

  // Direct store access with the same semantics as the HTTP verbs. `resource` is the plural
  // resource name, qualified by its group for non-core groups ("pods", "nodes",
  // "leases.coordination.k8s.io", "noderesourcetopologies.topology.node.k8s.io").
  // Create returns the stored object (with resourceVersion, uid, creationTimestamp) or the
  // error the HTTP verb would give (AlreadyExists, NotFound for an unknown resource).
  absl::StatusOr<nlohmann::json> Create(std::string_view resource, nlohmann::json object);
  std::optional<nlohmann::json> Get(std::string_view resource, std::string_view ns,
                                    std::string_view name) const;
  // A JSON merge patch (RFC 7386) of one object, as PATCH with application/merge-patch+json.
  // Returns the stored object. Errors: NotFound (object or resource), InvalidArgument.
  absl::StatusOr<nlohmann::json> MergePatch(std::string_view resource, std::string_view ns, std::string_view name,
                                            const nlohmann::json& patch);
  // Every object of the resource in `ns` ("" = all namespaces), in key order.
  std::vector<nlohmann::json> List(std::string_view resource, std::string_view ns = "") const;
  // The current global resourceVersion (upstream: the real server's, etcd's revision).
  std::int64_t resource_version() const;

  // Faults. `verb` is one of get, list, watch, create, update, patch, delete (or "*");
  // `resource` is the plural resource, with "/<subresource>" for subresources ("pods/binding"),
  // or "*". The next `count` matching requests get `http_code` with a Status body.
  void FailNext(std::string verb, std::string resource, int count, int http_code = 500);
  // Cuts every open watch stream abruptly (no terminating chunk), as a lost connection would.
  void DropWatches();
  // Delays every request by `delay` before it is handled. Zero (default) turns it off.
  void SetDelay(std::chrono::milliseconds delay);
  // Holds every request matching `verb` and `resource` (names as FailNext) after it is counted
  // and before it is handled, until ReleaseRequests: as a slow apiserver would, so a test can
  // see what a client does while its request is in flight. A held request occupies one of the
  // server's worker threads. Upstream: held before it is forwarded. Replaces an earlier hold:
  // the requests it held that the new one does not match go on (so a test can hold every watch,
  // then let all but one resource's go).
  void HoldRequests(std::string verb, std::string resource);
  // Lets every held request go on, and holds no more.
  void ReleaseRequests();
  // Requests waiting in HoldRequests now.
  int HeldRequests() const;
  // As an etcd compaction at the current version: a continue token from before now gets 410
  // Gone. Watches are not affected: kube-apiserver (v1.35) serves them from its watch cache,
  // which a compaction does not touch, so a watch resumes from any version the cache still
  // holds (see RestartApiServer). Upstream: compacts etcd; a failure is logged as an error.
  void Compact();
  // As a kube-apiserver restart: every open watch is cut, and the new watch cache starts at the
  // current version, so a watch from any earlier version gets an ERROR event with 410 Expired,
  // which is how a client learns it must relist. Objects and continue tokens are kept.
  // Upstream: restarts the testbed's kube-apiserver (UpstreamOptions::restart_command) and
  // returns once it is ready again (about 15 s); a failure is logged as an error.
  void RestartApiServer();
  // Whether requests go to a real API server.
  bool upstream() const;

  // Requests served so far for verb and resource (same names as FailNext; no "*").
  int RequestCount(std::string_view verb, std::string_view resource) const;
  // Watch streams currently open.
  int ActiveWatches() const;

 private:
  struct Impl;
  explicit FakeApiServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace huygens::kube::testing

#endif  // HUYGENS_KUBE_TESTING_FAKE_APISERVER_H_
