// ResourceRef: one API resource (group, version, plural name, scope), and the REST paths of its
// collections and objects, as the API server lays them out:
//   /api/v1[/namespaces/<ns>]/<resource>[/<name>[/<subresource>]]          (core group)
//   /apis/<group>/<version>[/namespaces/<ns>]/<resource>[/<name>[/...]]
// Plain value type.
#ifndef HUYGENS_KUBE_RESOURCE_H_
#define HUYGENS_KUBE_RESOURCE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace huygens::kube {

struct ResourceRef {
  std::string group;     // "" for the core group
  std::string version;   // "v1"
  std::string resource;  // plural, lower case: "pods"
  std::string kind;      // "Pod"
  bool namespaced = true;

  // "v1" or "<group>/<version>": the apiVersion of the objects.
  std::string ApiVersion() const;
  // Path of the collection in `ns` ("" = all namespaces, or a cluster-scoped resource).
  std::string CollectionPath(std::string_view ns) const;
  // Path of one object, with an optional subresource ("binding", "status").
  std::string ObjectPath(std::string_view ns, std::string_view name, std::string_view subresource = "") const;
};

// The resources Huygens uses.
const ResourceRef& Pods();
const ResourceRef& Nodes();
const ResourceRef& Leases();  // coordination.k8s.io/v1
const ResourceRef& Events();  // events.k8s.io/v1
// topology.node.k8s.io/v1alpha2 noderesourcetopologies (cluster-scoped CRD).
const ResourceRef& NodeResourceTopologies();
// huygens.io/v1alpha1 numaaffinitygroups (namespaced CRD, kube/numa_affinity_group.h); its
// status is the subresource "status".
const ResourceRef& NumaAffinityGroups();
// Used by tests and tools only (the test cluster's clean-up): core v1 namespaces and events.
const ResourceRef& Namespaces();
const ResourceRef& CoreEvents();  // v1 events, the older form of events.k8s.io
// Used by tests only: node.k8s.io/v1 runtimeclasses (cluster-scoped), whose overhead the API
// server's RuntimeClass admission copies into a pod's spec.overhead.
const ResourceRef& RuntimeClasses();

// A resourceVersion as a number, for ordering two versions from one API server: kube-apiserver
// writes etcd's revision as a decimal string (and so does the fake server), which grows with
// every write to any object, so of two versions the larger is the later (the watch cache orders
// events so too). nullopt for "" and anything that is not a plain decimal number (a server
// whose versions are truly opaque: callers then must not order them).
std::optional<std::uint64_t> ResourceVersionNumber(std::string_view resource_version);

}  // namespace huygens::kube

#endif  // HUYGENS_KUBE_RESOURCE_H_
