// kubelet's admission of a pod by its topology manager: the hint providers, the merge, both
// scopes, and each container's allocation after its merge.
//
// What it is: kubelet v1.35's topology manager admit handler (pkg/kubelet/cm/topologymanager,
// scope.go, scope_container.go, scope_pod.go: Admit, calculateAffinity,
// allocateAlignedResources) over Huygens' models of its hint providers: the CPU manager's
// static policy (alloc/static_policy.h, alloc/hints.h), the memory manager's Static policy
// (alloc/memory_manager.h) and the device manager (alloc/device_manager.h), merged by
// MergeHints (alloc/merge.h). The one model both NodeState's prediction of kubelet and the
// simulator's kubelet call.
//
// Huygens limits: the providers allocate in the order CPU, memory, devices (kubelet v1.35 calls
// them devices, CPU, memory; the order matters only when an Allocate fails); a refused pod's
// allocations are given back at once (RemoveContainer, which leaves the memory manager's
// reusable memory as it is); memory and device hints visit NUMA sets of at most
// MemoryHintSetLimit nodes.
//
// Thread-safety: TopologyManagerAdmit reads its inputs and modifies only the states it is
// given (callers serialise access to them).
#ifndef HUYGENS_ALLOC_KUBELET_ADMISSION_H_
#define HUYGENS_ALLOC_KUBELET_ADMISSION_H_

#include <map>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "alloc/device_manager.h"
#include "alloc/memory_manager.h"
#include "alloc/merge.h"
#include "alloc/pod.h"
#include "alloc/static_policy.h"
#include "cpuset/cpuset.h"

namespace huygens {

// kubelet's pod admission failure reasons (lifecycle.PodAdmitResult.Reason).
inline constexpr char kTopologyAffinityError[] = "TopologyAffinityError";
inline constexpr char kUnexpectedAdmissionError[] = "UnexpectedAdmissionError";

// kubelet's topology manager on one node: --topology-manager-policy, -scope, -policy-options.
struct TopologyManagerConfig {
  TopologyPolicy policy = TopologyPolicy::kNone;
  TopologyScope scope = TopologyScope::kContainer;
  TopologyManagerOptions options;
  std::span<const int> numa_nodes;  // the machine's NUMA node ids (MergeHints' numa_nodes)
  // NUMA distances, from -> to -> distance; read only with options.prefer_closest_numa_nodes.
  // nullptr: none.
  const std::map<int, std::map<int, int>>* distances = nullptr;
};

// The hint providers kubelet runs on the node, each with the state it reads and updates.
// A policy left nullptr is not a provider (kubelet runs the CPU manager `none`, the memory
// manager `None`); its state is then not read.
struct KubeletHintProviders {
  const StaticPolicy* cpu_policy = nullptr;  // the CPU manager's static policy
  CpuManagerState* cpu_state = nullptr;
  const MemoryManagerPolicy* memory_policy = nullptr;  // the memory manager's Static policy
  MemoryManagerState* memory_state = nullptr;
  // The device manager: the node's device-plugin devices (none: not a provider) and the free
  // ones (kubelet's healthy devices minus its allocated ones).
  const NodeDevices* devices = nullptr;
  NodeDevices* free_devices = nullptr;
};

// Which hint provider refused a pod.
enum class HintProvider { kNone, kCpuManager, kMemoryManager, kDeviceManager };

// What one container of an admitted pod got.
struct ContainerAdmission {
  std::string name;
  CpuSet cpus;                   // its exclusive CPUs (empty: none, or no CPU manager)
  std::vector<int> memory_numa;  // its memory's NUMA nodes, ascending (memory manager only)
  std::vector<int> device_numa;  // its devices' NUMA nodes, reused ones too, ascending
};

// The topology manager's verdict on one pod.
struct PodAdmission {
  // kubelet's reason for refusing the pod (kTopologyAffinityError, kUnexpectedAdmissionError);
  // empty when admitted.
  std::string reason;
  // Refused: what failed, in words (ResourceExhausted "kubelet's topology manager (<policy>)
  // would refuse it: its <resources> no NUMA alignment (TopologyAffinityError)", MergeHints'
  // error, or a provider's Allocate error; TakeDevices' prefixed "[devicemanager] ").
  absl::Status error;
  // Refused, when asked for: the provider that caused it. A TopologyAffinityError is the device
  // manager's when the merge without its hints admits, else the memory manager's when the merge
  // of the CPU hints alone admits, else the CPU manager's (when it is a provider); an
  // UnexpectedAdmissionError is the provider whose Allocate failed (none for a merge error).
  HintProvider cause = HintProvider::kNone;
  // Admitted: init containers, then app containers, in spec order.
  std::vector<ContainerAdmission> containers;
  // Admitted: the devices it took from the free ones (what the pod holds).
  NodeDevices devices;

  bool admitted() const { return reason.empty(); }
};

// Admits `pod` as kubelet's topology manager does under `config` with `providers`: merges the
// providers' hints once for the pod (scope pod) or once per container (scope container) and
// has every provider allocate each container right after its merge. Admitted: the states hold
// the pod's allocations. Refused: what the pod took is given back (each provider's
// RemoveContainer for the containers allocated, the devices to the free ones).
// `tell_cause`: fill PodAdmission::cause (costs up to two more merges on a TopologyAffinityError).
// Returns the verdict; a refusal is no error of the call: PodAdmission::reason, error, cause.
// REQUIRES: each policy given comes with its state; `devices` and `free_devices` both given or
// both nullptr; the pod's container names are unique.
PodAdmission TopologyManagerAdmit(const TopologyManagerConfig& config,
                                  const KubeletHintProviders& providers, const PodSpec& pod,
                                  bool tell_cause);

}  // namespace huygens

#endif  // HUYGENS_ALLOC_KUBELET_ADMISSION_H_
