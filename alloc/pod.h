// The resource shape of a pod, as the CPU allocator and the node's bookkeeping see it.
//
// What it is: plain structs describing a pod's containers and their CPU/memory requests and
// limits, plus the pod-level choices Huygens reads from annotations (cpu policy, topology
// policy, bind policy, affinity group). Scheduling-only fields (labels, tolerations, node
// affinity, ports) live with the scheduler (sched/), not here.
//
// Units: CPU in millicores (1000 = one logical CPU), memory in bytes. A value of 0 means
// "not set", as in a Kubernetes container without that request or limit.
//
// Thread-safety: plain data.
#ifndef HUYGENS_ALLOC_POD_H_
#define HUYGENS_ALLOC_POD_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>


namespace huygens {

// Kubernetes QoS class of a pod (computed from requests and limits by QosOf, as the kubelet
// does in pkg/apis/core/v1/helper/qos).
enum class QosClass { kGuaranteed, kBurstable, kBestEffort };

// huygens.io/cpu-policy.
enum class CpuPolicy { kExclusive, kShared, kNone };

// huygens.io/bind-policy (DESIGN.md): how exclusive CPUs are picked inside the chosen NUMA
// node(s). kPacked is kubelet's static-policy order; kFullCores never splits a core (kubelet's
// full-pcpus-only); kSpreadCores takes one thread per core and leaves the siblings free.
enum class BindPolicy { kPacked, kFullCores, kSpreadCores };

// Kubelet's topology manager policies (--topology-manager-policy) and scopes
// (--topology-manager-scope).
enum class TopologyPolicy { kNone, kBestEffort, kRestricted, kSingleNumaNode };
enum class TopologyScope { kContainer, kPod };

// How an affinity group's members should sit on the NUMA nodes of each node that runs them: a
// NumaAffinityGroup's spec.policy (kube/numa_affinity_group.h); the implicit groups of the
// huygens.io/affinity-group annotation are kSameNuma. The rebalancer's planner
// (rebalance/planner.h) says what each asks of a move.
enum class AffinityGroupPolicy {
  kSameNuma,  // "same-numa": every member on one NUMA node (the default)
  kNearest,   // "nearest": members on the NUMA nodes nearest each other (NUMA distances)
  kSpread,    // "spread": members on different NUMA nodes, as far as the free CPUs allow
};

// One container of a pod.
struct ContainerSpec {
  std::string name;
  int64_t cpu_request_milli = 0;
  int64_t cpu_limit_milli = 0;
  int64_t memory_request_bytes = 0;
  int64_t memory_limit_bytes = 0;
  // Extended resource huygens.io/isolated-cpu (whole CPUs), used in `isolated` node mode
  // instead of cpu.
  int64_t isolated_cpus = 0;
  // Hugepages requests (equal to their limits, as the API requires), in bytes, by kubelet's
  // resource name ("hugepages-2Mi", "hugepages-1Gi"; see HugepageResourceName in
  // alloc/memory_manager.h). Absent = none requested.
  std::map<std::string, int64_t> hugepages_request_bytes;
  // Other extended resources (names with a '/', e.g. "nvidia.com/gpu": device-plugin
  // resources), as whole counts; requests equal their limits, as the API requires for extended
  // resources. huygens.io/isolated-cpu is `isolated_cpus` above. Absent = none requested.
  std::map<std::string, int64_t> extended_requests;
  bool init = false;         // listed in spec.initContainers
  bool restartable = false;  // an init container with restartPolicy: Always (a sidecar)

  friend bool operator==(const ContainerSpec&, const ContainerSpec&) = default;
};

// A pod's identity and containers, plus the Huygens annotations that shape its allocation.
struct PodSpec {
  std::string uid;
  std::string namespace_name;
  std::string name;
  std::vector<ContainerSpec> init_containers;  // in spec order
  std::vector<ContainerSpec> containers;       // in spec order
  // Pod-level resources (KEP-2837), when set; 0 otherwise.
  int64_t pod_cpu_request_milli = 0;
  int64_t pod_cpu_limit_milli = 0;
  // Annotations (unset = take the default: see DESIGN.md).
  std::optional<CpuPolicy> cpu_policy;
  std::optional<TopologyPolicy> topology_policy;
  std::optional<BindPolicy> bind_policy;
  std::string affinity_group;  // "" = none

  friend bool operator==(const PodSpec&, const PodSpec&) = default;
};

// A container's request after the API server's defaulting: a missing request (0) defaults to
// the limit. For cpu (millicores) and memory (bytes) alike. The one statement of this rule
// below the wire (the pod codec, kube/pod_codec.h, applies it to absent fields).
int64_t EffectiveRequest(int64_t request, int64_t limit);

// The pod's request of each extended resource of its containers (ContainerSpec::
// extended_requests), as Kubernetes computes pod requests (component-helpers' PodRequests,
// which kubelet's device manager also uses for scope `pod`): the larger of the sum over app and
// restartable init containers and the largest step of the init sequence (a regular init
// container plus the restartable ones started before it). Resources whose amount is 0 are left
// out.
std::map<std::string, int64_t> PodExtendedRequests(const PodSpec& pod);

// How messages name a pod: "pod <namespace>/<name> (<uid>)", or "pod <uid>" when unnamed.
std::string PodName(const PodSpec& pod);

// The pod's QoS class, as kubelet computes it: Guaranteed when every container (init
// included) has cpu and memory limits equal to its requests (a missing request defaults to the
// limit); BestEffort when no container has any request or limit; else Burstable.
QosClass QosOf(const PodSpec& pod);

// The CPU policy Huygens applies: the annotation when set, else kExclusive for a Guaranteed pod
// whose every app and init container requests a whole number of CPUs (> 0), else kShared.
// (DESIGN.md, "huygens.io/cpu-policy".)
CpuPolicy EffectiveCpuPolicy(const PodSpec& pod);

// Whole CPUs a container gets exclusively under the static policy's rule (kubelet's
// guaranteedCPUs): request/1000 when the pod is Guaranteed and the request is a whole number
// of CPUs, else 0.
int ExclusiveCpus(const PodSpec& pod, const ContainerSpec& container);

// The names Kubernetes and kubelet use, and their parsers ("single-numa-node" <->
// kSingleNumaNode, ...). Parse* return nullopt for an unknown name.
const char* ToString(QosClass q);
const char* ToString(CpuPolicy p);
const char* ToString(BindPolicy p);
const char* ToString(TopologyPolicy p);
const char* ToString(TopologyScope s);
const char* ToString(AffinityGroupPolicy p);
std::optional<CpuPolicy> ParseCpuPolicy(const std::string& s);
std::optional<BindPolicy> ParseBindPolicy(const std::string& s);
std::optional<TopologyPolicy> ParseTopologyPolicy(const std::string& s);
std::optional<TopologyScope> ParseTopologyScope(const std::string& s);
std::optional<AffinityGroupPolicy> ParseAffinityGroupPolicy(const std::string& s);

}  // namespace huygens

#endif  // HUYGENS_ALLOC_POD_H_
