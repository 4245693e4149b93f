#include "kube/resource.h"

#include <charconv>

#include "fmt/format.h"

namespace huygens::kube {

std::string ResourceRef::ApiVersion() const { return group.empty() ? version : group + "/" + version; }

std::string ResourceRef::CollectionPath(std::string_view ns) const {
  std::string prefix = group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
  if (namespaced && !ns.empty()) return fmt::format("{}/namespaces/{}/{}", prefix, ns, resource);
  return fmt::format("{}/{}", prefix, resource);
}

std::string ResourceRef::ObjectPath(std::string_view ns, std::string_view name, std::string_view subresource) const {
  std::string path = fmt::format("{}/{}", CollectionPath(ns), name);
  if (!subresource.empty()) path += fmt::format("/{}", subresource);
  return path;
}

const ResourceRef& Pods() {
  static const ResourceRef r{"", "v1", "pods", "Pod", true};
  return r;
}
const ResourceRef& Nodes() {
  static const ResourceRef r{"", "v1", "nodes", "Node", false};
  return r;
}
const ResourceRef& Leases() {
  static const ResourceRef r{"coordination.k8s.io", "v1", "leases", "Lease", true};
  return r;
}
const ResourceRef& Events() {
  static const ResourceRef r{"events.k8s.io", "v1", "events", "Event", true};
  return r;
}
const ResourceRef& NodeResourceTopologies() {
  static const ResourceRef r{"topology.node.k8s.io", "v1alpha2", "noderesourcetopologies", "NodeResourceTopology",
                             false};
  return r;
}
const ResourceRef& NumaAffinityGroups() {
  static const ResourceRef r{"huygens.io", "v1alpha1", "numaaffinitygroups", "NumaAffinityGroup", true};
  return r;
}
const ResourceRef& Namespaces() {
  static const ResourceRef r{"", "v1", "namespaces", "Namespace", false};
  return r;
}

const ResourceRef& RuntimeClasses() {
  static const ResourceRef r{"node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", false};
  return r;
}

const ResourceRef& CoreEvents() {
  static const ResourceRef r{"", "v1", "events", "Event", true};
  return r;
}

std::optional<std::uint64_t> ResourceVersionNumber(std::string_view resource_version) {
  std::uint64_t n = 0;
  const char* end = resource_version.data() + resource_version.size();
  auto [ptr, ec] = std::from_chars(resource_version.data(), end, n);
  if (resource_version.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return n;
}

}  // namespace huygens::kube
