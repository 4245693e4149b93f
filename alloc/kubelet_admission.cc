#include "alloc/kubelet_admission.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "alloc/hints.h"
#include "fmt/format.h"

namespace huygens {
namespace {

const std::map<int, std::map<int, int>> kNoDistances;

// One pod's admission in progress: what the topology manager knows, and what the pod has taken
// so far (to give it back when the pod is refused).
class Admission {
 public:
  Admission(const TopologyManagerConfig& config, const KubeletHintProviders& providers,
            const PodSpec& pod, bool tell_cause)
      : config_(config),
        providers_(providers),
        pod_(pod),
        tell_cause_(tell_cause),
        hint_limit_(MemoryHintSetLimit(static_cast<int>(config.numa_nodes.size()))),
        has_devices_(providers.devices != nullptr && !providers.devices->empty()) {}

  PodAdmission Run() &&;

 private:
  // The device-plugin requests of `c`, or of the whole pod when `c` is nullptr.
  std::map<std::string, int64_t> DeviceRequests(const ContainerSpec* c) const;
  // kubelet's calculateAffinity for the unit of `cpus` exclusive CPUs: the container `c`, or
  // the pod when `c` is nullptr. `with_memory` / `with_devices` false: without that provider's
  // hints (to tell which provider caused a refusal).
  absl::StatusOr<MergeResult> Merge(int cpus, const ContainerSpec* c, bool with_memory,
                                    bool with_devices) const;
  // Refuses the pod for a merge of the unit (`cpus`, `c`) that does not admit it.
  void RefuseAffinity(int cpus, const ContainerSpec* c);
  // kubelet's allocateAlignedResources for container `c` with the merged `hint`. False when a
  // provider failed (the pod is refused; nothing is given back yet).
  bool Allocate(const ContainerSpec& c, const TopologyHint& hint);
  void Refuse(std::string_view reason, absl::Status error, HintProvider cause);
  // Gives back everything the pod took.
  void Undo();

  const TopologyManagerConfig& config_;
  const KubeletHintProviders& providers_;
  const PodSpec& pod_;
  const bool tell_cause_;
  const int hint_limit_;   // NUMA sets the memory and device hints visit
  const bool has_devices_;  // the device manager is a provider
  PodAdmission out_;
  std::vector<const ContainerSpec*> allocated_;  // containers the CPU manager took CPUs for
  NodeDevices reusable_;  // devices of the pod's regular init containers (devicesToReuse)
};

std::map<std::string, int64_t> Admission::DeviceRequests(const ContainerSpec* c) const {
  if (!has_devices_) return {};
  return NodeDeviceRequests(*providers_.devices,
                            c == nullptr ? PodExtendedRequests(pod_) : c->extended_requests);
}

absl::StatusOr<MergeResult> Admission::Merge(int cpus, const ContainerSpec* c, bool with_memory,
                                             bool with_devices) const {
  // kubelet's provider order: device manager, CPU manager, memory manager. (The merge's answer
  // does not depend on the order: it is the best of every combination under a total order.)
  std::vector<std::map<std::string, ProviderHints>> hints;
  if (has_devices_ && with_devices) {
    hints.push_back(DeviceProviderHints(config_.numa_nodes, *providers_.devices,
                                        *providers_.free_devices, reusable_, DeviceRequests(c),
                                        hint_limit_));
  }
  if (const StaticPolicy* cpu = providers_.cpu_policy; cpu != nullptr) {
    const CpuManagerState& state = *providers_.cpu_state;
    hints.push_back(CpuProviderHints(cpu->Topology(), cpu->AvailableCpus(state),
                                     cpu->ReusableCpus(state, pod_), cpus));
  }
  if (const MemoryManagerPolicy* memory = providers_.memory_policy;
      memory != nullptr && with_memory) {
    const MemoryManagerState& state = *providers_.memory_state;
    hints.push_back(c == nullptr ? memory->PodHints(state, pod_, hint_limit_)
                                 : memory->ContainerHints(state, pod_, c->name, hint_limit_));
  }
  return MergeHints(config_.policy, config_.options, config_.numa_nodes,
                    config_.distances != nullptr ? *config_.distances : kNoDistances, hints);
}

void Admission::Refuse(std::string_view reason, absl::Status error, HintProvider cause) {
  out_.reason = std::string(reason);
  out_.error = std::move(error);
  out_.cause = cause;
}

void Admission::RefuseAffinity(int cpus, const ContainerSpec* c) {
  const bool requests_devices = !DeviceRequests(c).empty();
  // The resources whose hints took part, named in the message.
  std::vector<std::string_view> parts;
  if (providers_.cpu_policy != nullptr && cpus > 0) parts.push_back("CPUs");
  if (providers_.memory_policy != nullptr) parts.push_back("memory");
  if (requests_devices) parts.push_back("devices");
  std::string what = parts.empty() ? "its resources" : "its ";
  for (size_t i = 0; i < parts.size(); ++i) {
    what += i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ";
    what += parts[i];
  }
  what += parts.size() == 1 && parts[0] == "memory" ? " has" : " have";
  HintProvider cause = HintProvider::kNone;
  if (tell_cause_) {
    // The first provider whose hints, left out, let the rest admit the unit.
    if (requests_devices) {
      absl::StatusOr<MergeResult> without = Merge(cpus, c, /*with_memory=*/true,
                                                  /*with_devices=*/false);
      if (without.ok() && without->admit) cause = HintProvider::kDeviceManager;
    }
    if (cause == HintProvider::kNone && providers_.memory_policy != nullptr) {
      absl::StatusOr<MergeResult> cpu_only = Merge(cpus, c, /*with_memory=*/false,
                                                   /*with_devices=*/false);
      if (cpu_only.ok() && cpu_only->admit) cause = HintProvider::kMemoryManager;
    }
    if (cause == HintProvider::kNone && providers_.cpu_policy != nullptr) {
      cause = HintProvider::kCpuManager;
    }
  }
  Refuse(kTopologyAffinityError,
         absl::ResourceExhaustedError(fmt::format(
             "kubelet's topology manager ({}) would refuse it: {} no NUMA alignment "
             "(TopologyAffinityError)",
             ToString(config_.policy), what)),
         cause);
}

// Each provider in turn, as kubelet's Allocate calls: the CPU manager (the hint's NUMA nodes
// as its affinity, none when the hint has none), the memory manager (the merged hint as it
// is), then the device manager per requested resource (the pod's reusable devices first, then
// free ones on the hint's NUMA nodes). A regular init container's devices become reusable by
// the containers after it; a container that runs after the init containers uses up the
// reusable devices it takes.
bool Admission::Allocate(const ContainerSpec& c, const TopologyHint& hint) {
  ContainerAdmission got{.name = c.name, .cpus = {}, .memory_numa = {}, .device_numa = {}};
  if (const StaticPolicy* cpu = providers_.cpu_policy; cpu != nullptr) {
    std::optional<TopologyHint> affinity;
    if (!hint.numa_nodes.empty()) affinity = hint;
    absl::StatusOr<CpuSet> cpus = cpu->Allocate(*providers_.cpu_state, pod_, c.name, affinity);
    if (!cpus.ok()) {
      Refuse(kUnexpectedAdmissionError, cpus.status(), HintProvider::kCpuManager);
      return false;
    }
    const auto& assigned = providers_.cpu_state->assignments;
    if (auto p = assigned.find(pod_.uid); p != assigned.end() && p->second.contains(c.name)) {
      got.cpus = *cpus;
    }
  }
  allocated_.push_back(&c);
  if (const MemoryManagerPolicy* memory = providers_.memory_policy; memory != nullptr) {
    absl::StatusOr<std::vector<MemoryBlock>> blocks =
        memory->Allocate(*providers_.memory_state, pod_, c.name, hint);
    if (!blocks.ok()) {
      Refuse(kUnexpectedAdmissionError, blocks.status(), HintProvider::kMemoryManager);
      return false;
    }
    got.memory_numa = MemoryManagerPolicy::MemoryNumaNodes(*providers_.memory_state, pod_.uid,
                                                           c.name);
  }
  const bool regular_init = c.init && !c.restartable;
  NodeDevices& free = *providers_.free_devices;
  for (const auto& [resource, n] : DeviceRequests(&c)) {
    absl::StatusOr<DeviceTake> take =
        TakeDevices(resource, free[resource], reusable_[resource], n, hint.numa_nodes);
    if (!take.ok()) {
      Refuse(kUnexpectedAdmissionError,
             absl::Status(take.status().code(),
                          fmt::format("[devicemanager] {}", std::string(take.status().message()))),
             HintProvider::kDeviceManager);
      return false;
    }
    for (const auto& [numa, k] : take->from_available) {
      free[resource][numa] -= k;
      out_.devices[resource][numa] += k;
      if (regular_init) reusable_[resource][numa] += k;
    }
    if (!regular_init) {
      for (const auto& [numa, k] : take->from_reusable) reusable_[resource][numa] -= k;
    }
    for (const NumaDeviceCounts* part : {&take->from_available, &take->from_reusable}) {
      std::vector<int> numa = DeviceNumaNodes(*part);
      std::vector<int> both;
      std::set_union(got.device_numa.begin(), got.device_numa.end(), numa.begin(), numa.end(),
                     std::back_inserter(both));
      got.device_numa = std::move(both);
    }
  }
  out_.containers.push_back(std::move(got));
  return true;
}

void Admission::Undo() {
  for (const ContainerSpec* c : allocated_) {
    if (providers_.cpu_policy != nullptr) {
      providers_.cpu_policy->RemoveContainer(*providers_.cpu_state, pod_.uid, c->name);
    }
    if (providers_.memory_policy != nullptr) {
      providers_.memory_policy->RemoveContainer(*providers_.memory_state, pod_.uid, c->name);
    }
  }
  for (const auto& [resource, counts] : out_.devices) {
    for (const auto& [numa, n] : counts) (*providers_.free_devices)[resource][numa] += n;
  }
  out_.containers.clear();
  out_.devices.clear();
}

// kubelet's scope pod merges the pod's hints once (its CPUs: PodExclusiveCpus) and allocates
// every container, init containers first, with that hint; scope container merges and
// allocates each container in turn, so a container's hints see what the ones before it took.
// The first unit the merge does not admit, or the first provider that fails, refuses the pod
// and everything it took is given back.
PodAdmission Admission::Run() && {
  std::vector<const ContainerSpec*> containers;
  for (const auto* list : {&pod_.init_containers, &pod_.containers}) {
    for (const ContainerSpec& c : *list) containers.push_back(&c);
  }
  if (config_.scope == TopologyScope::kPod) {
    const int cpus = PodExclusiveCpus(pod_);
    absl::StatusOr<MergeResult> merged = Merge(cpus, nullptr, true, true);
    if (!merged.ok()) {
      Refuse(kUnexpectedAdmissionError, merged.status(), HintProvider::kNone);
      return std::move(out_);
    }
    if (!merged->admit) {
      RefuseAffinity(cpus, nullptr);
      return std::move(out_);
    }
    for (const ContainerSpec* c : containers) {
      if (!Allocate(*c, merged->hint)) {
        Undo();
        return std::move(out_);
      }
    }
    return std::move(out_);
  }
  const std::vector<AdmissionUnit> units = AdmissionUnits(pod_, config_.scope);
  for (size_t i = 0; i < units.size(); ++i) {
    const ContainerSpec& c = *containers[i];  // AdmissionUnits keeps the containers' order
    absl::StatusOr<MergeResult> merged = Merge(units[i].cpus, &c, true, true);
    if (!merged.ok()) {
      Refuse(kUnexpectedAdmissionError, merged.status(), HintProvider::kNone);
    } else if (!merged->admit) {
      RefuseAffinity(units[i].cpus, &c);  // before Undo: on the state the merge saw
    } else if (Allocate(c, merged->hint)) {
      continue;
    }
    Undo();
    return std::move(out_);
  }
  return std::move(out_);
}

}  // namespace

PodAdmission TopologyManagerAdmit(const TopologyManagerConfig& config,
                                  const KubeletHintProviders& providers, const PodSpec& pod,
                                  bool tell_cause) {
  return Admission(config, providers, pod, tell_cause).Run();
}

}  // namespace huygens
