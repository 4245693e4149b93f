#include "node/placement.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "alloc/cpu_plan.h"
#include "alloc/kubelet_admission.h"
#include "base/status.h"
#include "node/numa_ids.h"

namespace huygens {
namespace {

// The exclusive CPUs of one placement of a pod's containers.
struct ExclusivePass {
  // By plan index; empty for containers without exclusive CPUs.
  std::vector<ExclusiveAllocation> by_plan;
  CpuSet taken;  // CPUs newly held by the pod (the union of by_plan)
};

// Places every exclusive container of `plans` out of `free` with `request` (num_cpus set per
// container), in one of two orders:
//   - kubelet's (long_running_first false): spec order; a container takes only the CPUs that
//     earlier regular init containers left for reuse when they suffice, else chooses among
//     those and the free CPUs (kubelet's cpusToReuse / updateCPUsToReuse);
//   - long_running_first: restartable init and app containers first (spec order, free CPUs
//     only), then each regular init container, which may reuse every CPU already placed except
//     those of the restartable init containers before it (they run beside it): inside those
//     CPUs when they suffice, else among them and the free CPUs.
// Errors: the allocator's, prefixed with the container's name.
absl::StatusOr<ExclusivePass> PlaceExclusive(const ExclusiveAllocator& allocator,
                                             const std::vector<ContainerCpuPlan>& plans,
                                             ExclusiveRequest request, CpuSet free,
                                             bool long_running_first) {
  ExclusivePass out;
  out.by_plan.resize(plans.size());
  CpuSet reusable;  // kubelet's cpusToReuse (kubelet's order)
  auto place = [&](size_t i, const CpuSet& reuse) -> absl::Status {
    const ContainerCpuPlan& p = plans[i];
    request.num_cpus = p.exclusive_cpus;
    request.pod_cpus = out.taken;
    const bool try_reusable = p.exclusive_cpus <= reuse.Size();
    absl::StatusOr<ExclusiveAllocation> got =
        allocator.Allocate(try_reusable ? reuse : free.Union(reuse), request);
    if (!got.ok() && try_reusable) got = allocator.Allocate(free.Union(reuse), request);
    if (!got.ok()) {
      return absl::Status(got.status().code(),
                          fmt::format("container {:?}: {}", p.spec->name,
                                      std::string(got.status().message())));
    }
    const CpuSet fresh = got->cpus.Difference(reuse);
    out.by_plan[i] = *std::move(got);
    free = free.Difference(fresh);
    out.taken = out.taken.Union(fresh);
    return absl::OkStatus();
  };
  for (size_t i = 0; i < plans.size(); ++i) {
    const ContainerCpuPlan& p = plans[i];
    if (p.exclusive_cpus == 0 || (long_running_first && p.regular_init())) continue;
    if (long_running_first) {
      if (absl::Status s = place(i, CpuSet()); !s.ok()) return s;
      continue;
    }
    if (absl::Status s = place(i, reusable); !s.ok()) return s;
    const CpuSet& cpus = out.by_plan[i].cpus;
    reusable = p.regular_init() ? reusable.Union(cpus) : reusable.Difference(cpus);
  }
  if (!long_running_first) return out;
  CpuSet beside;  // CPUs of the restartable init containers before the current one
  for (size_t i = 0; i < plans.size(); ++i) {
    const ContainerCpuPlan& p = plans[i];
    if (p.exclusive_cpus == 0) continue;
    if (!p.regular_init()) {
      if (p.spec->init) beside = beside.Union(out.by_plan[i].cpus);
      continue;
    }
    if (absl::Status s = place(i, out.taken.Difference(beside)); !s.ok()) return s;
  }
  return out;
}

// Whether kubelet's device manager gives the pod devices on a node of `config`: it requests a
// resource NodeConfig::devices lists.
bool KubeletPlacesDevices(const NodeConfig& config, const PodSpec& pod) {
  return !config.devices.empty() &&
         !NodeDeviceRequests(config.devices, PodExtendedRequests(pod)).empty();
}

// Admits the pod as kubelet's topology manager does (TopologyManagerAdmit) with the memory
// manager (`memory`, when kubelet places the pod's memory; else nullptr) and the device manager
// (`devices`, the node's device-plugin resources) as hint providers; the CPU manager runs
// `none` on Huygens' nodes. Updates out.memory and out.devices_free from their starting values
// and fills the rest of `out`. Errors: TopologyManagerAdmit's PodAdmission::error.
absl::Status AdmitLikeKubelet(const MemoryManagerPolicy* memory, const NodeDevices& devices,
                              const CpuTopology& topo, const PodSpec& pod, TopologyPolicy tm,
                              TopologyScope scope, KubeletPlacement& out) {
  const std::vector<int> ids = topo.NumaNodeIds();  // the config holds a view of it
  const TopologyManagerConfig config{
      .policy = tm, .scope = scope, .options = {}, .numa_nodes = ids, .distances = nullptr};
  const KubeletHintProviders providers{.cpu_policy = nullptr,
                                       .cpu_state = nullptr,
                                       .memory_policy = memory,
                                       .memory_state = &out.memory,
                                       .devices = &devices,
                                       .free_devices = &out.devices_free};
  PodAdmission admitted = TopologyManagerAdmit(config, providers, pod, /*tell_cause=*/false);
  if (!admitted.admitted()) return admitted.error;
  for (ContainerAdmission& c : admitted.containers) {
    if (memory != nullptr) out.mems_of[c.name] = std::move(c.memory_numa);
    if (!c.device_numa.empty()) out.devices_of[c.name] = std::move(c.device_numa);
  }
  out.held = std::move(admitted.devices);
  return absl::OkStatus();
}

// The placement of one pod on one node, in named steps (PlacePod's algorithm, below). Scratch
// for one call: built, run once, dropped.
class Placer {
 public:
  Placer(const NodeState& node, const PodSpec& pod, const std::vector<int>& near_numa_nodes);

  absl::StatusOr<PodPlacement> Run();

 private:
  absl::Status CheckPod() const;
  absl::Status PredictKubeletSide();
  void FindNumaNodesAwayFromDevices();
  absl::Status DecidePodNumaNodes();
  absl::StatusOr<ExclusivePass> PlaceCpus() const;
  absl::StatusOr<ExclusivePass> PlaceMemoryWithCpus(ExclusivePass pass);
  absl::Status PlaceMemoryBesideCpus(const ExclusivePass& pass, const std::vector<int>* target);
  absl::StatusOr<PodAllocation> Assemble(const ExclusivePass& pass) const;

  // `r` kept away from the NUMA nodes with free devices; nullopt when that leaves none.
  std::optional<ExclusiveRequest> Away(const ExclusiveRequest& r) const;
  // Both container orders (see PlaceExclusive), the one holding fewer CPUs kept.
  absl::StatusOr<ExclusivePass> PlaceInEitherOrder(const ExclusiveRequest& r) const;
  // Away from the devices when the pod fits there, else anywhere `r` allows.
  absl::StatusOr<ExclusivePass> PlaceAll(const ExclusiveRequest& r) const;
  absl::Status Failed(std::string_view what, const absl::Status& why) const;

  const NodeState& node_;
  const NodeConfig& config_;
  const PodSpec& pod_;
  const std::vector<ContainerCpuPlan> plans_;
  const MemoryManagerPolicy* memory_policy_;
  const CpuSet free_;  // the node's shared pool: the CPUs exclusive containers may take
  ExclusiveRequest request_;
  int64_t pod_shared_milli_ = 0;
  int pod_level_ = 0;           // PodLevelExclusiveCpus
  bool exclusive_init_ = false;  // a regular init container holds exclusive CPUs
  bool place_memory_ = false;    // the node places this pod's memory (kubelet's or Huygens')
  int hint_limit_ = 0;

  std::optional<KubeletPlacement> kubelet_;  // kubelet's memory (Static) and devices
  // Static memory, devices: the NUMA nodes where kubelet puts them for the exclusive containers.
  std::optional<std::vector<int>> kubelet_numa_nodes_;
  std::optional<std::vector<int>> pod_numa_nodes_;  // the pod's one NUMA decision
  std::vector<int> away_from_devices_;  // NUMA nodes without free devices (see below)
  // Scratch, committed with the pod: kubelet's (Static) or PlaceMemoryBesideCpus' (None).
  MemoryManagerState memory_;
  std::map<std::string, std::vector<int>> mems_of_;    // container -> memory NUMA nodes
};

Placer::Placer(const NodeState& node, const PodSpec& pod,
               const std::vector<int>& near_numa_nodes)
    : node_(node),
      config_(node.Config()),
      pod_(pod),
      plans_(PlanPod(pod, config_.mode)),
      memory_policy_(node.MemoryPolicy()),
      free_(node.SharedPool()) {
  for (const ContainerCpuPlan& p : plans_) pod_shared_milli_ += p.shared_milli;
  request_.bind_policy = pod.bind_policy.value_or(config_.default_bind_policy);
  request_.topology_policy = pod.topology_policy.value_or(config_.topology_policy);
  request_.numa_strategy =
      near_numa_nodes.empty() ? config_.numa_strategy : NumaStrategy::kNearest;
  request_.near_numa_nodes = near_numa_nodes;
  request_.capacity = config_.capacity;
  request_.allocatable_cpus = node.UserPool();
  pod_level_ = PodLevelExclusiveCpus(plans_);
  exclusive_init_ = std::any_of(plans_.begin(), plans_.end(), [](const ContainerCpuPlan& p) {
    return p.regular_init() && p.exclusive_cpus > 0;
  });
  place_memory_ = memory_policy_ != nullptr && MemoryManagerPlacesPod(pod);
  hint_limit_ = MemoryHintSetLimit(node.Topology().NumNumaNodes());
}

// PlacePod's algorithm. Every container of the pod (init containers in order, then app
// containers) follows the pod's CPU plan (PlanPod): exclusive with that many CPUs, shared (its
// request counts against the shared pool), or not managed (cpu-policy none; in kIsolated mode a
// container without isolated CPUs). Exclusive CPUs come from the allocator with the pod's
// topology and bind policies (else the node's), the node's NUMA strategy (kNearest toward
// `near_numa_nodes` when given) and capacity, and the user pool as allocatable_cpus.
//  1. kubelet first (PredictKubelet): where its memory manager (Static policy, Guaranteed pods
//     without pod-level resources) and its device manager (a pod requesting a resource
//     NodeConfig::devices lists) put the pod's memory and devices; a merge kubelet would not
//     admit (TopologyAffinityError) refuses the pod.
//  2. One NUMA decision for the pod's kubelet-style total (PodLevelExclusiveCpus): the NUMA
//     nodes every container must use under scope pod, and the ones they are placed in first
//     under scope container when the pod has several exclusive containers (a pod on one NUMA
//     node beats containers that each fit one but land apart).
//  3. The exclusive CPUs (PlaceCpus), in one of two container orders (PlaceExclusive, the one
//     holding fewer CPUs kept): inside the NUMA nodes of kubelet's memory and devices (required
//     under single-numa-node and restricted; under none/best-effort kubelet admits a
//     misaligned pod, so elsewhere when they do not fit there), else inside the pod's NUMA
//     decision, else (scope container) anywhere. A pod that requests no device first tries to
//     keep off the NUMA nodes that still have free devices (Huygens' rule: those CPUs are kept
//     for the device pods).
//  4. Memory under kubelet's None policy (PlaceMemoryWithCpus): each exclusive container's
//     memory on its CPUs' NUMA nodes, extended to the narrowest set holding it as kubelet
//     extends a hint (not under single-numa-node); else the pod is placed again inside each
//     NUMA set that could hold its memory, narrowest first, until both fit.
//  5. The allocation (Assemble): a container's mems are its memory NUMA nodes (else its CPUs');
//     shared containers run on the shared pool left after the pod's exclusive CPUs, which must
//     keep the shared requests, with the pool's NUMA nodes as mems unless kubelet pins their
//     memory (Static).
absl::StatusOr<PodPlacement> Placer::Run() {
  HUYGENS_RETURN_IF_ERROR(CheckPod());
  HUYGENS_RETURN_IF_ERROR(PredictKubeletSide());
  FindNumaNodesAwayFromDevices();
  HUYGENS_RETURN_IF_ERROR(DecidePodNumaNodes());
  absl::StatusOr<ExclusivePass> pass = PlaceCpus();
  if (pass.ok() && place_memory_ && !(kubelet_ && kubelet_->places_memory)) {
    pass = PlaceMemoryWithCpus(*std::move(pass));
  }
  if (!pass.ok()) return pass.status();
  absl::StatusOr<PodAllocation> allocation = Assemble(*pass);
  if (!allocation.ok()) return allocation.status();
  PodPlacement out;
  out.allocation = *std::move(allocation);
  if (place_memory_) out.memory = std::move(memory_);
  if (kubelet_ && kubelet_->places_devices) {
    out.devices_free = std::move(kubelet_->devices_free);
    out.devices_held = std::move(kubelet_->held);
  }
  return out;
}

absl::Status Placer::CheckPod() const {
  if (pod_.uid.empty()) return absl::InvalidArgumentError("pod: uid is empty");
  if (node_.SpecOf(pod_.uid) != nullptr) {
    return absl::AlreadyExistsError(
        fmt::format("{}: already allocated on node {:?}", PodName(pod_), config_.name));
  }
  // Pods have a few containers: comparing pairs beats building a set on every allocation.
  for (size_t i = 0; i < plans_.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (plans_[i].spec->name == plans_[j].spec->name) {
        return absl::InvalidArgumentError(fmt::format("{}: container name {:?} appears twice",
                                                      PodName(pod_), plans_[i].spec->name));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Placer::PredictKubeletSide() {
  absl::StatusOr<std::optional<KubeletPlacement>> kubelet = PredictKubelet(node_, pod_);
  if (!kubelet.ok()) {
    return absl::Status(kubelet.status().code(),
                        fmt::format("{}: {}: {}", PodName(pod_),
                                    KubeletPlacesDevices(config_, pod_) ? "kubelet" : "memory",
                                    std::string(kubelet.status().message())));
  }
  kubelet_ = *std::move(kubelet);
  if (!kubelet_) return absl::OkStatus();
  if (kubelet_->places_memory) {
    memory_ = std::move(kubelet_->memory);
    mems_of_ = std::move(kubelet_->mems_of);
  }
  std::vector<int> within;
  for (const ContainerCpuPlan& p : plans_) {
    if (p.exclusive_cpus <= 0) continue;
    if (auto m = mems_of_.find(p.spec->name); m != mems_of_.end()) {
      within = UnionIds(within, m->second);
    }
    if (auto d = kubelet_->devices_of.find(p.spec->name); d != kubelet_->devices_of.end()) {
      within = UnionIds(within, d->second);
    }
  }
  if (!within.empty()) kubelet_numa_nodes_ = within;
  return absl::OkStatus();
}

// Devices: a pod that requests none keeps off the NUMA nodes that still have free devices when
// it fits elsewhere, so that they keep CPUs for the pods that need those devices.
void Placer::FindNumaNodesAwayFromDevices() {
  if (config_.devices.empty() || KubeletPlacesDevices(config_, pod_)) return;
  const std::vector<int> ids = node_.Topology().NumaNodeIds();
  for (int numa : ids) {
    bool free_device = false;
    for (const auto& [resource, counts] : node_.DevicesFree()) {
      auto it = counts.find(numa);
      free_device = free_device || (it != counts.end() && it->second > 0);
    }
    if (!free_device) away_from_devices_.push_back(numa);
  }
  if (away_from_devices_.size() == ids.size()) away_from_devices_.clear();
}

std::optional<ExclusiveRequest> Placer::Away(const ExclusiveRequest& r) const {
  if (away_from_devices_.empty()) return std::nullopt;
  ExclusiveRequest out = r;
  std::vector<int> within;
  for (int numa : away_from_devices_) {
    if (!r.within_numa_nodes ||
        std::find(r.within_numa_nodes->begin(), r.within_numa_nodes->end(), numa) !=
            r.within_numa_nodes->end()) {
      within.push_back(numa);
    }
  }
  if (within.empty()) return std::nullopt;
  out.within_numa_nodes = std::move(within);
  return out;
}

absl::Status Placer::DecidePodNumaNodes() {
  const int exclusive_containers = static_cast<int>(
      std::count_if(plans_.begin(), plans_.end(),
                    [](const ContainerCpuPlan& p) { return p.exclusive_cpus > 0; }));
  if (pod_level_ <= 0 ||
      (config_.topology_scope != TopologyScope::kPod && exclusive_containers <= 1)) {
    return absl::OkStatus();
  }
  ExclusiveRequest whole_pod = request_;
  whole_pod.num_cpus = pod_level_;
  const ExclusiveAllocator& allocator = node_.Allocator();
  absl::StatusOr<ExclusiveAllocation> whole = absl::UnknownError("not placed");
  if (std::optional<ExclusiveRequest> r = Away(whole_pod)) whole = allocator.Allocate(free_, *r);
  if (!whole.ok()) whole = allocator.Allocate(free_, whole_pod);
  if (whole.ok()) {
    pod_numa_nodes_ = whole->numa_nodes;
  } else if (config_.topology_scope == TopologyScope::kPod) {
    return Failed("pod scope", whole.status());
  }
  return absl::OkStatus();
}

// kubelet's order first; when that leaves the pod holding more than kubelet's pod-level count
// (an init container's CPUs that no later container could reuse), the long-running containers
// first, each regular init container then inside their CPUs where it fits.
absl::StatusOr<ExclusivePass> Placer::PlaceInEitherOrder(const ExclusiveRequest& r) const {
  const ExclusiveAllocator& allocator = node_.Allocator();
  absl::StatusOr<ExclusivePass> pass = PlaceExclusive(allocator, plans_, r, free_, false);
  if (exclusive_init_ && (!pass.ok() || pass->taken.Size() > pod_level_)) {
    absl::StatusOr<ExclusivePass> other = PlaceExclusive(allocator, plans_, r, free_, true);
    if (other.ok() && (!pass.ok() || other->taken.Size() < pass->taken.Size())) {
      pass = std::move(other);
    }
  }
  return pass;
}

absl::StatusOr<ExclusivePass> Placer::PlaceAll(const ExclusiveRequest& r) const {
  if (std::optional<ExclusiveRequest> kept = Away(r)) {
    absl::StatusOr<ExclusivePass> pass = PlaceInEitherOrder(*kept);
    if (pass.ok()) return pass;
  }
  return PlaceInEitherOrder(r);
}

absl::StatusOr<ExclusivePass> Placer::PlaceCpus() const {
  absl::StatusOr<ExclusivePass> pass = absl::UnknownError("not placed");
  if (kubelet_numa_nodes_) {
    // Static memory, devices: the CPUs go where kubelet puts them; under none / best-effort
    // kubelet admits a misaligned pod too, so the CPUs go elsewhere when they do not fit there.
    ExclusiveRequest beside = request_;
    beside.within_numa_nodes = *kubelet_numa_nodes_;
    pass = PlaceAll(beside);
    const bool must_align = request_.topology_policy == TopologyPolicy::kSingleNumaNode ||
                            request_.topology_policy == TopologyPolicy::kRestricted;
    if (!pass.ok() && must_align) {
      return absl::Status(
          pass.status().code(),
          fmt::format("{}: kubelet puts its {} on NUMA node(s) {}, where its CPUs do not "
                      "fit: {}",
                      PodName(pod_),
                      !kubelet_->places_devices ? "memory"
                      : kubelet_->places_memory ? "memory and devices"
                                                : "devices",
                      IdSet(*kubelet_numa_nodes_).ToString(),
                      std::string(pass.status().message())));
    }
  }
  if (!pass.ok() && pod_numa_nodes_) {
    ExclusiveRequest inside = request_;
    inside.within_numa_nodes = *pod_numa_nodes_;
    pass = PlaceAll(inside);
  }
  if (!pass.ok() && (!pod_numa_nodes_ || config_.topology_scope == TopologyScope::kContainer)) {
    pass = PlaceAll(request_);
  }
  if (!pass.ok()) {
    return absl::Status(pass.status().code(), fmt::format("{}: {}", PodName(pod_),
                                                          std::string(pass.status().message())));
  }
  return pass;
}

// Memory under the None policy: each exclusive container's memory on the narrowest NUMA set
// that can hold it (one of kubelet's memory hints for it) containing `target` (its CPUs' NUMA
// nodes, or the set the pod is being placed in); under single-numa-node, exactly its CPUs' NUMA
// node. Fills memory_ and mems_of_ from the node's memory state.
absl::Status Placer::PlaceMemoryBesideCpus(const ExclusivePass& pass,
                                           const std::vector<int>* target) {
  memory_ = *node_.Memory();
  mems_of_.clear();
  for (size_t i = 0; i < plans_.size(); ++i) {
    const ContainerCpuPlan& p = plans_[i];
    if (p.exclusive_cpus <= 0) continue;
    const std::vector<int>& cpu_numa = pass.by_plan[i].numa_nodes;
    const std::vector<int>& want = target != nullptr ? *target : cpu_numa;
    const auto hints = memory_policy_->ContainerHints(memory_, pod_, p.spec->name, hint_limit_);
    const std::vector<int>* best = nullptr;
    if (auto it = hints.find(kMemoryResource); it != hints.end() && it->second) {
      for (const TopologyHint& h : *it->second) {
        if (!std::includes(h.numa_nodes.begin(), h.numa_nodes.end(), want.begin(), want.end()))
          continue;
        if (best == nullptr || h.numa_nodes.size() < best->size()) best = &h.numa_nodes;
      }
    }
    if (best == nullptr ||
        (request_.topology_policy == TopologyPolicy::kSingleNumaNode && *best != cpu_numa)) {
      return absl::ResourceExhaustedError(
          fmt::format("container {:?}: its memory does not fit NUMA node(s) {}", p.spec->name,
                      IdSet(want).ToString()));
    }
    absl::StatusOr<std::vector<MemoryBlock>> blocks =
        memory_policy_->Allocate(memory_, pod_, p.spec->name, TopologyHint{*best, true});
    if (!blocks.ok()) return blocks.status();
    mems_of_[p.spec->name] = MemoryManagerPolicy::MemoryNumaNodes(memory_, pod_.uid, p.spec->name);
  }
  return absl::OkStatus();
}

absl::StatusOr<ExclusivePass> Placer::PlaceMemoryWithCpus(ExclusivePass pass) {
  absl::Status fits = PlaceMemoryBesideCpus(pass, nullptr);
  if (fits.ok()) return pass;
  // Place the pod again inside each NUMA set that could hold its memory, narrowest first.
  const std::map<std::string, ProviderHints> hints = memory_policy_->CalculateHints(
      *node_.Memory(), pod_.uid, PodMemoryRequests(pod_), hint_limit_);
  std::vector<std::vector<int>> sets;
  if (auto it = hints.find(kMemoryResource); it != hints.end() && it->second) {
    for (const TopologyHint& h : *it->second) sets.push_back(h.numa_nodes);
  }
  std::stable_sort(sets.begin(), sets.end(),
                   [](const auto& a, const auto& b) { return a.size() < b.size(); });
  for (const std::vector<int>& set : sets) {
    if (request_.topology_policy == TopologyPolicy::kSingleNumaNode && set.size() > 1) break;
    ExclusiveRequest inside = request_;
    inside.within_numa_nodes = set;
    absl::StatusOr<ExclusivePass> again = PlaceAll(inside);
    if (again.ok() && PlaceMemoryBesideCpus(*again, &set).ok()) return again;
  }
  return absl::ResourceExhaustedError(fmt::format(
      "{}: no NUMA node set of node {:?} holds both its exclusive CPUs and its memory ({})",
      PodName(pod_), config_.name, std::string(fits.message())));
}

absl::StatusOr<PodAllocation> Placer::Assemble(const ExclusivePass& pass) const {
  const CpuSet free = free_.Difference(pass.taken);
  PodAllocation out;
  out.pod_uid = pod_.uid;
  out.node = config_.name;
  for (size_t i = 0; i < plans_.size(); ++i) {
    if (!plans_[i].managed) continue;
    const ContainerCpuPlan& p = plans_[i];
    ContainerAllocation c;
    c.name = p.spec->name;
    c.init = p.spec->init;
    c.restartable = p.spec->restartable;
    c.exclusive = p.exclusive_cpus > 0;
    if (c.exclusive) {
      c.cpuset = pass.by_plan[i].cpus;
      c.mems = IdSet(pass.by_plan[i].numa_nodes);
      out.numa_nodes = UnionIds(out.numa_nodes, pass.by_plan[i].numa_nodes);
    }
    if (auto m = mems_of_.find(c.name); m != mems_of_.end() && !m->second.empty()) {
      c.mems = IdSet(m->second);
    }
    out.containers.push_back(std::move(c));
  }
  const int64_t shared_milli = node_.SharedRequestedMilli() + pod_shared_milli_;
  if (free.Size() < CeilCpus(shared_milli)) {
    return absl::ResourceExhaustedError(fmt::format(
        "{}: would leave {} cpus in the shared pool of node {:?}, below the {} that shared "
        "containers request ({} millicores)",
        PodName(pod_), free.Size(), config_.name, CeilCpus(shared_milli), shared_milli));
  }
  // Shared containers run on the pool as it is after this pod's exclusive CPUs left it.
  std::optional<CpuSet> shared_mems;  // computed only when the pod has a shared container
  for (ContainerAllocation& c : out.containers) {
    if (c.exclusive) continue;
    c.cpuset = free;
    if (auto m = mems_of_.find(c.name); m != mems_of_.end() && !m->second.empty()) {
      c.mems = IdSet(m->second);  // kubelet's memory manager pins it
      continue;
    }
    if (!shared_mems.has_value()) shared_mems = IdSet(node_.Topology().NumaNodesOf(free));
    c.mems = *shared_mems;
  }
  return out;
}

absl::Status Placer::Failed(std::string_view what, const absl::Status& why) const {
  return absl::Status(why.code(),
                      fmt::format("{}: {}: {}", PodName(pod_), what, std::string(why.message())));
}

}  // namespace

absl::StatusOr<PodPlacement> PlacePod(const NodeState& node, const PodSpec& pod,
                                      const std::vector<int>& near_numa_nodes) {
  return Placer(node, pod, near_numa_nodes).Run();
}

absl::StatusOr<std::optional<KubeletPlacement>> PredictKubelet(const NodeState& node,
                                                               const PodSpec& pod) {
  const NodeConfig& config = node.Config();
  KubeletPlacement out;
  out.places_memory = node.MemoryPolicy() != nullptr && MemoryManagerPlacesPod(pod) &&
                      config.memory_manager->static_policy;
  out.places_devices = KubeletPlacesDevices(config, pod);
  if (!out.places_memory && !out.places_devices) return std::nullopt;
  if (out.places_memory) out.memory = *node.Memory();
  out.devices_free = node.DevicesFree();
  HUYGENS_RETURN_IF_ERROR(AdmitLikeKubelet(
      out.places_memory ? node.MemoryPolicy() : nullptr, config.devices, node.Topology(), pod,
      pod.topology_policy.value_or(config.topology_policy), config.topology_scope, out));
  return out;
}

}  // namespace huygens
