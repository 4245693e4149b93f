#include "scheduler/objects.h"

#include <charconv>
#include <utility>

#include "alloc/pod.h"
#include "base/json_fields.h"
#include "base/label_selector.h"
#include "base/quantity.h"
#include "base/status.h"
#include "fmt/format.h"
#include "kube/pod_codec.h"
#include "sched/plugins.h"
#include "topology/nrt.h"

namespace huygens::scheduler {

namespace {

using nlohmann::json;

using json_fields::MemberOrNull;
using json_fields::StringOrEmpty;
using kube::QuantityKind;

absl::Status Error(const std::string& what, std::string_view field, std::string_view message) {
  return absl::InvalidArgumentError(fmt::format("{}: {}: {}", what, field, message));
}

absl::StatusOr<std::map<std::string, std::string>> StringMap(const json& j, const std::string& what,
                                                             std::string_view field) {
  std::map<std::string, std::string> out;
  if (j.is_null()) return out;
  if (!j.is_object()) return Error(what, field, "expected an object");
  for (const auto& [k, v] : j.items()) {
    if (!v.is_string()) return Error(what, fmt::format("{}.{}", field, k), "expected a string");
    out[k] = v.get<std::string>();
  }
  return out;
}

// A quantity as Kubernetes writes it ("4", "500m", "1Gi"), by the pod codec's rule.
absl::StatusOr<int64_t> Quantity(const json& j, bool cpu, const std::string& what,
                                 std::string_view field) {
  return kube::ReadQuantity(j, cpu ? QuantityKind::kCpuMilli : QuantityKind::kAmount, what, field);
}

absl::StatusOr<sched::NodeSelectorTerm> ReadTerm(const json& t, const std::string& what,
                                                 const std::string& field) {
  sched::NodeSelectorTerm term;
  for (const char* kind : {"matchExpressions", "matchFields"}) {
    const json& list = MemberOrNull(t, kind);
    if (list.is_null()) continue;
    if (!list.is_array()) return Error(what, fmt::format("{}.{}", field, kind), "expected an array");
    for (std::size_t i = 0; i < list.size(); ++i) {
      std::string f = fmt::format("{}.{}[{}]", field, kind, i);
      sched::NodeSelectorRequirement req;
      req.key = StringOrEmpty(list[i], "key");
      std::string op = StringOrEmpty(list[i], "operator");
      std::optional<SelectorOperator> parsed = ParseSelectorOperator(op);
      if (!parsed) return Error(what, f + ".operator", fmt::format("unknown operator {:?}", op));
      req.op = *parsed;
      const json& values = MemberOrNull(list[i], "values");
      if (values.is_array()) {
        for (const json& v : values) {
          if (v.is_string()) req.values.push_back(v.get<std::string>());
        }
      }
      (std::string_view(kind) == "matchFields" ? term.match_fields : term.match_expressions)
          .push_back(std::move(req));
    }
  }
  return term;
}

std::optional<sched::TaintEffect> ParseEffect(const std::string& s) {
  if (s == "NoSchedule") return sched::TaintEffect::kNoSchedule;
  if (s == "PreferNoSchedule") return sched::TaintEffect::kPreferNoSchedule;
  if (s == "NoExecute") return sched::TaintEffect::kNoExecute;
  return std::nullopt;
}

// The pod codec's fields beyond the PodSpec (kube/pod_codec.h, rules 13 to 17) and the pod's
// extended requests (its containers' and its overhead's).
void TakeCodecFields(kube::PodObject&& decoded, sched::Pod& pod) {
  pod.extended_requests = PodExtendedRequests(pod.spec);
  for (const auto& [name, amount] : decoded.overhead_extended) pod.extended_requests[name] += amount;
  pod.pod_cpu_request_milli = decoded.pod_cpu_request_milli;
  pod.pod_memory_request_bytes = decoded.pod_memory_request_bytes;
  pod.overhead_cpu_milli = decoded.overhead_cpu_milli;
  pod.overhead_memory_bytes = decoded.overhead_memory_bytes;
  pod.scheduling_gates = std::move(decoded.scheduling_gates);
  pod.resource_claims = std::move(decoded.resource_claims);
  pod.claim_volumes = std::move(decoded.claim_volumes);
  pod.pod_affinity = std::move(decoded.pod_affinity);
  pod.topology_spread_constraints = std::move(decoded.topology_spread_constraints);
}

// The containers' ports with a hostPort > 0 (kube-scheduler's NodePorts reads those).
std::vector<sched::HostPort> HostPortsOf(const json& spec) {
  std::vector<sched::HostPort> out;
  const json& containers = MemberOrNull(spec, "containers");
  for (const json& c : containers.is_array() ? containers : json::array()) {
    const json& ports = MemberOrNull(c, "ports");
    if (!ports.is_array()) continue;
    for (const json& p : ports) {
      const json& hp = MemberOrNull(p, "hostPort");
      if (!hp.is_number_integer() || hp.get<int64_t>() <= 0) continue;
      sched::HostPort port;
      port.port = static_cast<int32_t>(hp.get<int64_t>());
      port.host_ip = StringOrEmpty(p, "hostIP");
      std::string proto = StringOrEmpty(p, "protocol");
      if (!proto.empty()) port.protocol = proto;
      out.push_back(std::move(port));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<sched::Pod> PodFromJson(const json& object) {
  HUYGENS_ASSIGN_OR_RETURN(kube::PodObject decoded, kube::DecodePod(object));
  const std::string what = "pod " + kube::ObjectKey(object);
  const json& md = MemberOrNull(object, "metadata");
  const json& spec = MemberOrNull(object, "spec");
  sched::Pod pod;
  pod.spec = std::move(decoded.spec);
  pod.rebalance = decoded.rebalance;
  TakeCodecFields(std::move(decoded), pod);
  pod.host_ports = HostPortsOf(spec);
  for (const char* key : {"initContainers", "containers"}) {
    const json& list = MemberOrNull(spec, key);
    for (const json& c : list.is_array() ? list : json::array()) {
      pod.container_images.push_back(sched::NormalizedImageName(StringOrEmpty(c, "image")));
    }
  }
  HUYGENS_ASSIGN_OR_RETURN(pod.labels, StringMap(MemberOrNull(md, "labels"), what, "metadata.labels"));
  HUYGENS_ASSIGN_OR_RETURN(pod.node_selector, StringMap(MemberOrNull(spec, "nodeSelector"), what, "spec.nodeSelector"));
  const json& na = MemberOrNull(MemberOrNull(spec, "affinity"), "nodeAffinity");
  const json& required = MemberOrNull(MemberOrNull(na, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms");
  if (required.is_array()) {
    for (std::size_t i = 0; i < required.size(); ++i) {
      HUYGENS_ASSIGN_OR_RETURN(auto term, ReadTerm(required[i], what,
                                                   fmt::format("spec.affinity.nodeAffinity.required[{}]", i)));
      pod.required_node_affinity.push_back(std::move(term));
    }
  }
  const json& preferred = MemberOrNull(na, "preferredDuringSchedulingIgnoredDuringExecution");
  if (preferred.is_array()) {
    for (std::size_t i = 0; i < preferred.size(); ++i) {
      sched::PreferredSchedulingTerm p;
      const json& w = MemberOrNull(preferred[i], "weight");
      p.weight = w.is_number_integer() ? static_cast<int32_t>(w.get<int64_t>()) : 1;
      HUYGENS_ASSIGN_OR_RETURN(p.preference, ReadTerm(MemberOrNull(preferred[i], "preference"), what,
                                                      fmt::format("spec.affinity.nodeAffinity.preferred[{}]", i)));
      pod.preferred_node_affinity.push_back(std::move(p));
    }
  }
  const json& tolerations = MemberOrNull(spec, "tolerations");
  if (tolerations.is_array()) {
    for (const json& t : tolerations) {
      sched::Toleration tol;
      tol.key = StringOrEmpty(t, "key");
      tol.op = StringOrEmpty(t, "operator") == "Exists" ? sched::TolerationOperator::kExists
                                                       : sched::TolerationOperator::kEqual;
      tol.value = StringOrEmpty(t, "value");
      std::string effect = StringOrEmpty(t, "effect");
      if (!effect.empty()) tol.effect = ParseEffect(effect);
      pod.tolerations.push_back(std::move(tol));
    }
  }
  const json& priority = MemberOrNull(spec, "priority");
  if (priority.is_number_integer()) pod.priority = static_cast<int32_t>(priority.get<int64_t>());
  std::string scheduler = StringOrEmpty(spec, "schedulerName");
  if (!scheduler.empty()) pod.scheduler_name = scheduler;
  pod.node_name = std::move(decoded.node_name);
  pod.resource_version = StringOrEmpty(md, "resourceVersion");
  return pod;
}

absl::StatusOr<std::optional<PodAllocation>> PodAllocationOf(const json& pod) {
  const json& v = MemberOrNull(MemberOrNull(MemberOrNull(pod, "metadata"), "annotations"), kAllocationAnnotation);
  if (v.is_null()) return std::optional<PodAllocation>();
  if (!v.is_string()) return Error("pod " + kube::ObjectKey(pod), kAllocationAnnotation, "expected a string");
  auto a = AllocationFromJson(v.get<std::string>(), StringOrEmpty(MemberOrNull(pod, "metadata"), "uid"));
  if (!a.ok()) return absl::InvalidArgumentError(fmt::format("pod {}: {}", kube::ObjectKey(pod), std::string(a.status().message())));
  return std::optional<PodAllocation>(*std::move(a));
}

bool PodIsTerminal(const json& pod) {
  return kube::IsTerminalPhase(StringOrEmpty(MemberOrNull(pod, "status"), "phase"));
}

bool PodIsBeingDeleted(const json& pod) { return !kube::DeletionTimestampOf(pod).empty(); }

absl::StatusOr<sched::Node> NodeFromJson(const json& object) {
  const std::string what = "node " + kube::ObjectKey(object);
  const json& md = MemberOrNull(object, "metadata");
  sched::Node node;
  node.name = StringOrEmpty(md, "name");
  if (node.name.empty()) return Error(what, "metadata.name", "missing");
  HUYGENS_ASSIGN_OR_RETURN(node.labels, StringMap(MemberOrNull(md, "labels"), what, "metadata.labels"));
  const json& spec = MemberOrNull(object, "spec");
  const json& unschedulable = MemberOrNull(spec, "unschedulable");
  node.unschedulable = unschedulable.is_boolean() && unschedulable.get<bool>();
  const json& taints = MemberOrNull(spec, "taints");
  if (taints.is_array()) {
    for (std::size_t i = 0; i < taints.size(); ++i) {
      sched::Taint t;
      t.key = StringOrEmpty(taints[i], "key");
      t.value = StringOrEmpty(taints[i], "value");
      auto effect = ParseEffect(StringOrEmpty(taints[i], "effect"));
      if (!effect) return Error(what, fmt::format("spec.taints[{}].effect", i), "unknown effect");
      t.effect = *effect;
      node.taints.push_back(std::move(t));
    }
  }
  // status.images as the API server validated it; an entry of another shape names no image.
  const json& images = MemberOrNull(MemberOrNull(object, "status"), "images");
  for (const json& image : images.is_array() ? images : json::array()) {
    const json& size = MemberOrNull(image, "sizeBytes");
    const json& names = MemberOrNull(image, "names");
    if (!size.is_number_integer() || !names.is_array()) continue;
    for (const json& name : names) {
      if (name.is_string()) node.images[name.get<std::string>()] = size.get<int64_t>();
    }
  }
  const json& allocatable = MemberOrNull(MemberOrNull(object, "status"), "allocatable");
  if (allocatable.is_object()) {
    for (const auto& [name, value] : allocatable.items()) {
      std::string field = "status.allocatable." + name;
      if (name == "cpu") {
        HUYGENS_ASSIGN_OR_RETURN(node.allocatable.cpu_milli, Quantity(value, true, what, field));
      } else if (name == "memory") {
        HUYGENS_ASSIGN_OR_RETURN(node.allocatable.memory_bytes, Quantity(value, false, what, field));
      } else if (name == "pods") {
        HUYGENS_ASSIGN_OR_RETURN(node.allocatable.pods, Quantity(value, false, what, field));
      } else if (name.find('/') != std::string::npos) {
        HUYGENS_ASSIGN_OR_RETURN(node.allocatable.extended[name], Quantity(value, false, what, field));
      }
    }
  }
  return node;
}

// The node's memory manager from its NRT: the policy attribute, and per NUMA zone the memory
// kubelet reserves, read back from the zone's capacity and allocatable (allocatable = capacity
// - reserved, for memory also minus the zone's hugepages: topology/nrt.h, NrtMemory).
absl::StatusOr<MemoryManagerConfig> MemoryManagerFromNrt(const NrtObject& nrt,
                                                         const CpuTopology& topology,
                                                         const std::string& policy) {
  if (policy != "None" && policy != "Static") {
    return absl::InvalidArgumentError(fmt::format(
        "NodeResourceTopology {:?}: attributes.{}: {:?} is not None or Static", nrt.name,
        kMemoryManagerPolicyAttribute, policy));
  }
  MemoryManagerConfig out{.static_policy = policy == "Static"};
  for (const NrtZone& zone : nrt.zones) {
    const std::optional<int> numa = zone.NumaId();
    if (!numa.has_value() || !topology.HasNumaNode(*numa)) continue;
    uint64_t hugepages = 0;
    for (const auto& [page, pages] : topology.Numa(*numa).hugepages) hugepages += page * pages;
    for (const NrtResource& r : zone.resources) {
      if (r.name != kMemoryResource && !r.name.starts_with("hugepages-")) continue;
      const std::string field = fmt::format("zone {:?}: resource {}", zone.name, r.name);
      absl::StatusOr<int64_t> capacity = ParseMemoryBytes(r.capacity);
      absl::StatusOr<int64_t> allocatable = ParseMemoryBytes(r.allocatable);
      if (!capacity.ok() || !allocatable.ok()) {
        return absl::InvalidArgumentError(fmt::format(
            "NodeResourceTopology {:?}: {}: capacity {:?} / allocatable {:?} are not quantities",
            nrt.name, field, r.capacity, r.allocatable));
      }
      const int64_t taken = r.name == kMemoryResource ? static_cast<int64_t>(hugepages) : 0;
      const int64_t reserved = *capacity - *allocatable - taken;
      if (reserved > 0) out.reserved_memory[*numa][r.name] = static_cast<uint64_t>(reserved);
    }
  }
  return out;
}

namespace {

// The node's NUMA-affine devices from its NRT: per NUMA zone, every resource with a domain
// (e.g. "nvidia.com/gpu", as NFD's topology-updater reports device-plugin resources from
// kubelet's podresources API) other than Huygens' own, counted by its allocatable; into
// `in_use` (when set) allocatable - available where the zone says what is available.
// The most devices of one resource on one NUMA node (a bound, so that no sum of counts
// overflows; real nodes have a few, SR-IOV a few hundred).
constexpr int64_t kMaxNumaDevices = int64_t{1} << 20;

absl::StatusOr<NodeDevices> ZoneDevices(const NrtObject& nrt, NodeDevices* in_use) {
  NodeDevices out;
  for (const NrtZone& zone : nrt.zones) {
    const std::optional<int> numa = zone.NumaId();
    if (!numa.has_value()) continue;
    for (const NrtResource& r : zone.resources) {
      if (r.name.find('/') == std::string::npos || r.name.starts_with("huygens.io/")) continue;
      auto count = [&](std::string_view field, const std::string& value) -> absl::StatusOr<int64_t> {
        absl::StatusOr<int64_t> n = ParseMemoryBytes(value);
        if (!n.ok() || *n < 0 || *n > kMaxNumaDevices) {
          return absl::InvalidArgumentError(fmt::format(
              "NodeResourceTopology {:?}: zone {:?}: resource {}: {} {:?} is not a device count in [0, {}]",
              nrt.name, zone.name, r.name, field, value, kMaxNumaDevices));
        }
        return *n;
      };
      HUYGENS_ASSIGN_OR_RETURN(int64_t allocatable, count("allocatable", r.allocatable));
      int64_t& total = out[r.name][*numa];
      total += allocatable;
      if (total > kMaxNumaDevices) {  // the resource listed again, or the zone
        return absl::InvalidArgumentError(fmt::format(
            "NodeResourceTopology {:?}: zone {:?}: resource {}: more than {} on NUMA node {} (listed more than once)",
            nrt.name, zone.name, r.name, kMaxNumaDevices, *numa));
      }
      if (in_use == nullptr || !r.available.has_value()) continue;
      HUYGENS_ASSIGN_OR_RETURN(int64_t available, count("available", *r.available));
      if (allocatable > available) (*in_use)[r.name][*numa] += allocatable - available;
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<NodeDevices> DevicesFromNrt(const json& object, NodeDevices* in_use) {
  HUYGENS_ASSIGN_OR_RETURN(NrtObject nrt, ReadNrt(object));
  if (in_use != nullptr) in_use->clear();
  return ZoneDevices(nrt, in_use);
}

absl::StatusOr<std::shared_ptr<const NodeState>> NodeStateFromNrt(const json& object,
                                                                  NumaStrategy numa_strategy,
                                                                  const CpuSet& huygens_held,
                                                                  NodeDevices* devices_in_use) {
  HUYGENS_ASSIGN_OR_RETURN(NrtObject nrt, ReadNrt(object));
  HUYGENS_ASSIGN_OR_RETURN(CpuTopology topology, TopologyFromNrt(nrt));
  HUYGENS_ASSIGN_OR_RETURN(NrtPools pools, PoolsFromNrt(nrt));
  // The pools must name CPUs of the machine the annotation describes, online ones.
  for (auto [key, set] : {std::pair{"system", &pools.system}, std::pair{"exclusive", &pools.exclusive}}) {
    const CpuSet outside = set->Difference(topology.OnlineCpus());
    if (!outside.Empty()) {
      return absl::InvalidArgumentError(fmt::format(
          "NodeResourceTopology {:?}: metadata.annotations[{:?}].{}: cpus {} are not online CPUs of {}", nrt.name,
          kPoolsAnnotation, key, outside.ToString(), kCpuTopologyAnnotation));
    }
  }
  NodeConfig config;
  config.name = nrt.name;
  auto mode = ParseNodeMode(pools.mode);
  if (!mode) {
    return absl::InvalidArgumentError(
        fmt::format("NodeResourceTopology {:?}: {}: mode: unknown mode {:?}", nrt.name, kPoolsAnnotation, pools.mode));
  }
  config.mode = *mode;
  config.system_cpus = pools.system.Union(pools.exclusive.Difference(huygens_held));
  if (const std::string* p = nrt.Attribute("topologyManagerPolicy")) {
    if (auto policy = ParseTopologyPolicy(*p)) config.topology_policy = *policy;
  }
  if (const std::string* s = nrt.Attribute("topologyManagerScope")) {
    if (auto scope = ParseTopologyScope(*s)) config.topology_scope = *scope;
  }
  config.numa_strategy = numa_strategy;
  for (const NrtZone& zone : nrt.zones) {
    const std::optional<int> numa = zone.NumaId();
    if (!numa.has_value()) continue;
    for (const NrtNameValue& a : zone.attributes) {
      if (a.name != kCapacityFactorAttribute) continue;
      double factor = 0;
      const char* end = a.value.data() + a.value.size();
      auto [ptr, ec] = std::from_chars(a.value.data(), end, factor);
      if (ec != std::errc() || ptr != end || !(factor > 0 && factor <= 1)) {
        return absl::InvalidArgumentError(fmt::format(
            "NodeResourceTopology {:?}: zone {:?}: attribute {}: {:?} is not a number in (0, 1]",
            nrt.name, zone.name, kCapacityFactorAttribute, a.value));
      }
      if (factor < 1) config.capacity[*numa] = factor;
    }
  }
  if (const std::string* m = nrt.Attribute(kMemoryManagerPolicyAttribute)) {
    HUYGENS_ASSIGN_OR_RETURN(config.memory_manager, MemoryManagerFromNrt(nrt, topology, *m));
  }
  if (devices_in_use != nullptr) devices_in_use->clear();
  HUYGENS_ASSIGN_OR_RETURN(config.devices, ZoneDevices(nrt, devices_in_use));
  absl::StatusOr<NodeState> state = NodeState::Create(std::make_shared<const CpuTopology>(std::move(topology)), config);
  if (!state.ok()) {
    return absl::Status(state.status().code(),
                        fmt::format("NodeResourceTopology {:?}: {}", nrt.name, std::string(state.status().message())));
  }
  return std::shared_ptr<const NodeState>(std::make_shared<NodeState>(*std::move(state)));
}

}  // namespace huygens::scheduler
