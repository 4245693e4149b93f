#include "node/node_state.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "alloc/kubelet_admission.h"
#include "alloc/waste.h"

namespace huygens {

// ---- Machine shapes -----------------------------------------------------------------------

struct NodeState::Shape {
  std::weak_ptr<const CpuTopology> topology;  // tells a reused address from the same object
  ExclusiveAllocator allocator;
  std::vector<int> numa_index;    // NUMA node id -> index in NumaNodes(), -1 when absent
  std::vector<int> core_threads;  // core id -> online CPUs of the core

  explicit Shape(const std::shared_ptr<const CpuTopology>& topo)
      : topology(topo), allocator(*topo) {
    const auto& nodes = topo->NumaNodes();
    const int max_numa = nodes.empty() ? -1 : nodes.back().id;
    numa_index.assign(static_cast<size_t>(max_numa + 1), -1);
    for (size_t i = 0; i < nodes.size(); ++i) {
      numa_index[static_cast<size_t>(nodes[i].id)] = static_cast<int>(i);
    }
    int max_core = -1;
    for (const CpuInfo& c : topo->Cpus()) max_core = std::max(max_core, c.core);
    core_threads.assign(static_cast<size_t>(max_core + 1), 0);
    for (const CpuInfo& c : topo->Cpus()) {
      if (c.online && c.core >= 0) ++core_threads[static_cast<size_t>(c.core)];
    }
  }
};

std::shared_ptr<const NodeState::Shape> NodeState::ShapeFor(
    const std::shared_ptr<const CpuTopology>& topology) {
  // One Shape per live topology object, keyed by address and checked against a weak pointer
  // (an address reused after the topology died gets a fresh Shape). Entries of dead
  // topologies are dropped on the next miss.
  static std::mutex mu;
  static auto* cache = new std::map<const CpuTopology*, std::weak_ptr<const Shape>>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache->find(topology.get());
  if (it != cache->end()) {
    if (auto shape = it->second.lock()) {
      if (auto topo = shape->topology.lock(); topo == topology) return shape;
    }
  }
  for (auto i = cache->begin(); i != cache->end();) {
    i = i->second.expired() ? cache->erase(i) : std::next(i);
  }
  auto shape = std::make_shared<const Shape>(topology);
  (*cache)[topology.get()] = shape;
  return shape;
}

namespace {

std::string PodName(const PodSpec& pod) {
  if (pod.name.empty()) return fmt::format("pod {}", pod.uid);
  return fmt::format("pod {}/{} ({})", pod.namespace_name, pod.name, pod.uid);
}

CpuSet IdSet(const std::vector<int>& ids) {
  CpuSet::Builder b;
  for (int id : ids) b.Add(id);
  return b.Build();
}

std::vector<int> UnionIds(const std::vector<int>& a, const std::vector<int>& b) {
  std::vector<int> out;
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// Invariant 3 inside one pod, over containers in spec order: containers i < j may share CPUs
// only when i is a regular init container (it has finished before j starts). Returns one line
// per offending pair.
std::vector<std::string> PodOverlapViolations(const PodAllocation& a) {
  std::vector<std::string> out;
  for (size_t i = 0; i < a.containers.size(); ++i) {
    const ContainerAllocation& x = a.containers[i];
    if (!x.exclusive || (x.init && !x.restartable)) continue;
    for (size_t j = i + 1; j < a.containers.size(); ++j) {
      const ContainerAllocation& y = a.containers[j];
      if (!y.exclusive) continue;
      const CpuSet both = x.cpuset.Intersection(y.cpuset);
      if (!both.Empty()) {
        out.push_back(fmt::format("pod {}: containers {:?} and {:?} run together and both hold "
                                  "cpus {}",
                                  a.pod_uid, x.name, y.name, both.ToString()));
      }
    }
  }
  return out;
}

std::vector<int> PodNumaNodes(const PodAllocation& a) {
  CpuSet::Builder b;
  for (const ContainerAllocation& c : a.containers) {
    if (c.exclusive) b.Add(c.mems);
  }
  return b.Build().ToVector();
}

int CeilCpus(int64_t milli) { return static_cast<int>((milli + 999) / 1000); }

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

void AddDevices(NodeDevices& into, const std::string& resource, const NumaDeviceCounts& counts,
                int sign) {
  for (const auto& [numa, n] : counts) into[resource][numa] += sign * n;
}

// What kubelet decides for a pod before its containers start, as Huygens predicts it: where
// its memory manager (Static) puts each container's memory and where its device manager takes
// each container's devices.
struct KubeletPlacement {
  std::map<std::string, std::vector<int>> mems_of;     // container -> memory NUMA nodes
  std::map<std::string, std::vector<int>> devices_of;  // container -> device NUMA nodes
  NodeDevices held;                                    // the pod's devices
};

// Whether kubelet's device manager gives the pod devices on a node of `config`: it requests a
// resource NodeConfig::devices lists.
bool KubeletPlacesDevices(const NodeConfig& config, const PodSpec& pod) {
  return !config.devices.empty() &&
         !NodeDeviceRequests(config.devices, PodExtendedRequests(pod)).empty();
}

// Admits the pod as kubelet's topology manager does (TopologyManagerAdmit) with the memory
// manager (`memory`, when kubelet places the pod's memory; else nullptr) and the device manager
// (`devices`, the node's device-plugin resources) as hint providers; the CPU manager runs
// `none` on Huygens' nodes. Updates `memory_state` and `devices_free`.
// Errors: TopologyManagerAdmit's PodAdmission::error.
absl::StatusOr<KubeletPlacement> PredictKubelet(const MemoryManagerPolicy* memory,
                                                const NodeDevices& devices,
                                                const CpuTopology& topo, const PodSpec& pod,
                                                TopologyPolicy tm, TopologyScope scope,
                                                MemoryManagerState& memory_state,
                                                NodeDevices& devices_free) {
  const std::vector<int> ids = topo.NumaNodeIds();
  const TopologyManagerConfig config{
      .policy = tm, .scope = scope, .options = {}, .numa_nodes = ids, .distances = nullptr};
  const KubeletHintProviders providers{.cpu_policy = nullptr,
                                       .cpu_state = nullptr,
                                       .memory_policy = memory,
                                       .memory_state = &memory_state,
                                       .devices = &devices,
                                       .free_devices = &devices_free};
  PodAdmission admitted = TopologyManagerAdmit(config, providers, pod, /*tell_cause=*/false);
  if (!admitted.admitted()) return admitted.error;
  KubeletPlacement out;
  for (ContainerAdmission& c : admitted.containers) {
    if (memory != nullptr) out.mems_of[c.name] = std::move(c.memory_numa);
    if (!c.device_numa.empty()) out.devices_of[c.name] = std::move(c.device_numa);
  }
  out.held = std::move(admitted.devices);
  return out;
}

}  // namespace

// ---- Construction -------------------------------------------------------------------------

NodeState::NodeState(std::shared_ptr<const CpuTopology> topology,
                     std::shared_ptr<const Shape> shape, NodeConfig config, CpuSet system_pool,
                     CpuSet user_pool)
    : topology_(std::move(topology)),
      shape_(std::move(shape)),
      config_(std::move(config)),
      system_pool_(std::move(system_pool)),
      user_pool_(std::move(user_pool)) {
  std::vector<int> core_user(shape_->core_threads.size(), 0);
  for (int cpu : user_pool_) ++core_user[static_cast<size_t>(topology_->Cpu(cpu).core)];
  core_user_ = std::make_shared<const std::vector<int>>(std::move(core_user));
  ResetCounters();
}

absl::StatusOr<NodeState> NodeState::Create(std::shared_ptr<const CpuTopology> topology,
                                            NodeConfig config) {
  if (topology == nullptr) {
    return absl::InvalidArgumentError(
        fmt::format("node {:?}: topology: null", config.name));
  }
  const CpuSet unknown = config.system_cpus.Difference(topology->AllCpus());
  if (!unknown.Empty()) {
    return absl::InvalidArgumentError(
        fmt::format("node {:?}: system_cpus: cpus {} are not in the topology", config.name,
                    unknown.ToString()));
  }
  const CpuSet offline = config.system_cpus.Difference(topology->OnlineCpus());
  if (!offline.Empty()) {
    return absl::InvalidArgumentError(fmt::format(
        "node {:?}: system_cpus: cpus {} are offline", config.name, offline.ToString()));
  }
  for (const auto& [numa, factor] : config.capacity) {
    if (!topology->HasNumaNode(numa) || !(factor > 0.0 && factor <= 1.0)) {
      return absl::InvalidArgumentError(
          fmt::format("node {:?}: capacity[{}] = {}: needs a known NUMA node and a factor in "
                      "(0,1]",
                      config.name, numa, factor));
    }
  }
  for (const auto& [resource, per_numa] : config.devices) {
    for (const auto& [numa, count] : per_numa) {
      if (!topology->HasNumaNode(numa) || count < 0) {
        return absl::InvalidArgumentError(fmt::format(
            "node {:?}: devices[{:?}][{}] = {}: needs a known NUMA node and a count >= 0",
            config.name, resource, numa, count));
      }
    }
  }
  CpuSet system = config.system_cpus;
  CpuSet user = config.mode == NodeMode::kIsolated
                    ? topology->IsolatedCpus().Intersection(topology->OnlineCpus())
                    : topology->OnlineCpus();
  user = user.Difference(system);
  std::shared_ptr<const MemoryManagerPolicy> memory_policy;
  if (config.memory_manager.has_value()) {
    absl::StatusOr<MemoryManagerPolicy> policy = MemoryManagerPolicy::Create(
        *topology, config.memory_manager->reserved_memory, config.memory_manager->static_policy);
    if (!policy.ok()) {
      return absl::InvalidArgumentError(fmt::format("node {:?}: memory_manager: {}", config.name,
                                                    std::string(policy.status().message())));
    }
    memory_policy = std::make_shared<const MemoryManagerPolicy>(*std::move(policy));
  }
  auto shape = ShapeFor(topology);
  NodeState node(std::move(topology), std::move(shape), std::move(config), std::move(system),
                 std::move(user));
  if (memory_policy) {
    node.memory_ = memory_policy->InitialState();
    node.memory_policy_ = std::move(memory_policy);
  }
  node.devices_free_ = node.config_.devices;
  return node;
}

void NodeState::ResetCounters() {
  const CpuTopology& topo = *topology_;
  core_free_.assign(shape_->core_threads.size(), 0);
  counters_.clear();
  counters_.reserve(topo.NumaNodes().size());
  for (const NumaNode& n : topo.NumaNodes()) counters_.push_back(NumaCounters{.numa = n.id, .free_cpus_per_l3 = {}});
  const CpuSet free = SharedPool();
  for (int cpu : user_pool_) {
    const CpuInfo& info = topo.Cpu(cpu);
    NumaCounters& c = counters_[static_cast<size_t>(
        shape_->numa_index[static_cast<size_t>(info.numa)])];
    ++c.user_cpus;
    int& per_l3 = c.free_cpus_per_l3[info.l3];
    if (free.Contains(cpu)) {
      ++c.free_cpus;
      ++per_l3;
      ++core_free_[static_cast<size_t>(info.core)];
    }
  }
  for (int core = 0; core < static_cast<int>(core_free_.size()); ++core) {
    const size_t k = static_cast<size_t>(core);
    if ((*core_user_)[k] == 0) continue;
    NumaCounters& c = counters_[static_cast<size_t>(
        shape_->numa_index[static_cast<size_t>(topo.Cpu(topo.CpusInCore(core).Min()).numa)])];
    c.free_cores += core_free_[k] == shape_->core_threads[k];
    c.unshared_threads += UnsharedThreads(k);
  }
}

int NodeState::UnsharedThreads(size_t core) const {
  // The user threads not free are held by pods; the others (outside the user pool) by none.
  return UnsharedThreadsOfCore(shape_->core_threads[core], core_free_[core],
                               (*core_user_)[core] - core_free_[core]);
}

std::vector<NumaCounters> NodeState::Recount() const {
  NodeState fresh = *this;
  fresh.ResetCounters();
  return fresh.counters_;
}

void NodeState::AdjustCounters(const CpuSet& cpus, int delta) {
  const CpuTopology& topo = *topology_;
  for (int cpu : cpus) {
    const CpuInfo& info = topo.Cpu(cpu);
    NumaCounters& c = counters_[static_cast<size_t>(
        shape_->numa_index[static_cast<size_t>(info.numa)])];
    c.free_cpus += delta;
    c.free_cpus_per_l3[info.l3] += delta;
    const size_t core = static_cast<size_t>(info.core);
    const int threads = shape_->core_threads[core];
    const bool was_whole = core_free_[core] == threads;
    const int was_unshared = UnsharedThreads(core);
    core_free_[core] += delta;
    const bool is_whole = core_free_[core] == threads;
    c.free_cores += static_cast<int>(is_whole) - static_cast<int>(was_whole);
    c.unshared_threads += UnsharedThreads(core) - was_unshared;
  }
}

void NodeState::Take(const CpuSet& cpus) {
  exclusive_ = exclusive_.Union(cpus);
  AdjustCounters(cpus, -1);
}

void NodeState::Give(const CpuSet& cpus) {
  exclusive_ = exclusive_.Difference(cpus);
  AdjustCounters(cpus, +1);
}

// ---- Queries ------------------------------------------------------------------------------

int NodeState::SharedCpusNeeded() const { return CeilCpus(shared_milli_); }

int NodeState::FreeForExclusive() const { return SharedPool().Size() - SharedCpusNeeded(); }

const PodSpec* NodeState::SpecOf(const std::string& pod_uid) const {
  auto it = records_.find(pod_uid);
  return it == records_.end() ? nullptr : &it->second.spec;
}

const ExclusiveAllocator& NodeState::Allocator() const { return shape_->allocator; }

Owner NodeState::OwnerOf(const std::string& pod_uid) const {
  auto it = records_.find(pod_uid);
  return it == records_.end() ? Owner::kHuygens : it->second.owner;
}

std::vector<std::string> NodeState::HoldersOf(const CpuSet& cpus,
                                              const std::string& except) const {
  std::vector<std::string> out;
  for (const auto& [uid, rec] : records_) {
    if (uid != except && rec.held.Intersects(cpus)) out.push_back(uid);
  }
  return out;
}

// ---- Allocation ---------------------------------------------------------------------------

bool NodeState::KubeletNuma::Consistent() const {
  return devices.empty() || std::includes(devices.begin(), devices.end(), memory.begin(), memory.end());
}

absl::StatusOr<std::optional<NodeState::KubeletNuma>> NodeState::PredictKubeletNuma(
    const PodSpec& pod) const {
  const bool kubelet_memory = memory_policy_ != nullptr && MemoryManagerPlacesPod(pod) &&
                              config_.memory_manager->static_policy;
  const bool kubelet_devices = KubeletPlacesDevices(config_, pod);
  if (!kubelet_memory && !kubelet_devices) return std::nullopt;
  MemoryManagerState memory = memory_;
  NodeDevices devices_free = devices_free_;
  absl::StatusOr<KubeletPlacement> kubelet = PredictKubelet(
      kubelet_memory ? memory_policy_.get() : nullptr, config_.devices, *topology_, pod,
      pod.topology_policy.value_or(config_.topology_policy), config_.topology_scope, memory,
      devices_free);
  if (!kubelet.ok()) return kubelet.status();
  KubeletNuma out;
  for (const auto& [container, numa] : kubelet->devices_of) out.devices = UnionIds(out.devices, numa);
  for (const auto& [container, numa] : kubelet->mems_of) out.memory = UnionIds(out.memory, numa);
  return out;
}

absl::StatusOr<PodAllocation> NodeState::AllocatePod(const PodSpec& pod,
                                                     const std::vector<int>& near_numa_nodes) {
  if (pod.uid.empty()) return absl::InvalidArgumentError("pod: uid is empty");
  if (records_.contains(pod.uid)) {
    return absl::AlreadyExistsError(
        fmt::format("{}: already allocated on node {:?}", PodName(pod), config_.name));
  }
  const std::vector<ContainerCpuPlan> plans = PlanPod(pod, config_.mode);
  // Pods have a few containers: comparing pairs beats building a set on every allocation.
  for (size_t i = 0; i < plans.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (plans[i].spec->name == plans[j].spec->name) {
        return absl::InvalidArgumentError(fmt::format("{}: container name {:?} appears twice",
                                                      PodName(pod), plans[i].spec->name));
      }
    }
  }
  int64_t pod_shared_milli = 0;
  for (const ContainerCpuPlan& p : plans) pod_shared_milli += p.shared_milli;

  ExclusiveRequest request;
  request.bind_policy = pod.bind_policy.value_or(config_.default_bind_policy);
  request.topology_policy = pod.topology_policy.value_or(config_.topology_policy);
  request.numa_strategy = near_numa_nodes.empty() ? config_.numa_strategy : NumaStrategy::kNearest;
  request.near_numa_nodes = near_numa_nodes;
  request.capacity = config_.capacity;
  request.allocatable_cpus = user_pool_;
  const ExclusiveAllocator& allocator = shape_->allocator;

  // Memory (see AllocatePod in node_state.h): a scratch state, committed with the pod.
  const bool place_memory = memory_policy_ != nullptr && MemoryManagerPlacesPod(pod);
  const bool kubelet_memory = place_memory && config_.memory_manager->static_policy;
  const bool kubelet_devices = KubeletPlacesDevices(config_, pod);
  MemoryManagerState memory;
  std::map<std::string, std::vector<int>> mems_of;  // container -> memory NUMA nodes
  // Static memory, devices: the NUMA nodes where kubelet puts them for the exclusive containers.
  std::optional<std::vector<int>> kubelet_numa_nodes;
  NodeDevices devices_free = devices_free_;
  NodeDevices devices_held;
  if (place_memory) memory = memory_;
  if (kubelet_memory || kubelet_devices) {
    absl::StatusOr<KubeletPlacement> kubelet = PredictKubelet(
        kubelet_memory ? memory_policy_.get() : nullptr, config_.devices, *topology_, pod,
        request.topology_policy, config_.topology_scope, memory, devices_free);
    if (!kubelet.ok()) {
      return absl::Status(kubelet.status().code(),
                          fmt::format("{}: {}: {}", PodName(pod),
                                      kubelet_devices ? "kubelet" : "memory",
                                      std::string(kubelet.status().message())));
    }
    mems_of = std::move(kubelet->mems_of);
    devices_held = std::move(kubelet->held);
    std::vector<int> within;
    for (const ContainerCpuPlan& p : plans) {
      if (p.exclusive_cpus <= 0) continue;
      within = UnionIds(within, mems_of[p.spec->name]);
      if (auto d = kubelet->devices_of.find(p.spec->name); d != kubelet->devices_of.end()) {
        within = UnionIds(within, d->second);
      }
    }
    if (!within.empty()) kubelet_numa_nodes = within;
  }
  // None: each exclusive container's memory on the narrowest NUMA set that can hold it (one
  // of kubelet's memory hints for it) containing `target` (its CPUs' NUMA nodes, or the set the
  // pod is being placed in); under single-numa-node, exactly its CPUs' NUMA node. Fills
  // `memory` and `mems_of`.
  const int hint_limit = MemoryHintSetLimit(topology_->NumNumaNodes());
  auto memory_beside_cpus = [&](const auto& placed,
                                const std::vector<int>* target) -> absl::Status {
    memory = memory_;
    mems_of.clear();
    for (size_t i = 0; i < plans.size(); ++i) {
      const ContainerCpuPlan& p = plans[i];
      if (p.exclusive_cpus <= 0) continue;
      const std::vector<int>& cpu_numa = placed.by_plan[i].numa_nodes;
      const std::vector<int>& want = target != nullptr ? *target : cpu_numa;
      const auto hints = memory_policy_->ContainerHints(memory, pod, p.spec->name, hint_limit);
      const std::vector<int>* best = nullptr;
      if (auto it = hints.find(kMemoryResource); it != hints.end() && it->second) {
        for (const TopologyHint& h : *it->second) {
          if (!std::includes(h.numa_nodes.begin(), h.numa_nodes.end(), want.begin(), want.end()))
            continue;
          if (best == nullptr || h.numa_nodes.size() < best->size()) best = &h.numa_nodes;
        }
      }
      if (best == nullptr ||
          (request.topology_policy == TopologyPolicy::kSingleNumaNode && *best != cpu_numa)) {
        return absl::ResourceExhaustedError(fmt::format(
            "container {:?}: its memory does not fit NUMA node(s) {}", p.spec->name,
            IdSet(want).ToString()));
      }
      absl::StatusOr<std::vector<MemoryBlock>> blocks = memory_policy_->Allocate(
          memory, pod, p.spec->name, TopologyHint{*best, true});
      if (!blocks.ok()) return blocks.status();
      mems_of[p.spec->name] = MemoryManagerPolicy::MemoryNumaNodes(memory, pod.uid, p.spec->name);
    }
    return absl::OkStatus();
  };

  CpuSet free = SharedPool();
  const int shared_floor = CeilCpus(shared_milli_ + pod_shared_milli);
  auto exhausted = [&](std::string_view what, const absl::Status& why) {
    return absl::Status(why.code(),
                        fmt::format("{}: {}: {}", PodName(pod), what, std::string(why.message())));
  };

  // One NUMA decision for the pod's kubelet-style total: the NUMA nodes every container must
  // use under scope pod, and the ones they are placed in first under scope container when the
  // pod has several exclusive containers (a pod on one NUMA node beats containers that each
  // fit one but land apart; when the pod's containers do not fit there, each is placed alone).
  const int pod_level = PodLevelExclusiveCpus(plans);
  const int exclusive_containers = static_cast<int>(std::count_if(
      plans.begin(), plans.end(), [](const ContainerCpuPlan& p) { return p.exclusive_cpus > 0; }));
  std::optional<std::vector<int>> pod_numa_nodes;
  // Devices: a pod that requests none keeps off the NUMA nodes that still have free devices
  // when it fits elsewhere, so that they keep CPUs for the pods that need those devices.
  std::vector<int> away_from_devices;
  if (!config_.devices.empty() && !kubelet_devices) {
    for (int numa : topology_->NumaNodeIds()) {
      bool free_device = false;
      for (const auto& [resource, counts] : devices_free_) {
        auto it = counts.find(numa);
        free_device = free_device || (it != counts.end() && it->second > 0);
      }
      if (!free_device) away_from_devices.push_back(numa);
    }
    if (away_from_devices.size() == topology_->NumaNodeIds().size()) away_from_devices.clear();
  }
  // `r` kept away from the NUMA nodes with free devices; nullopt when that leaves none.
  auto away = [&](const ExclusiveRequest& r) -> std::optional<ExclusiveRequest> {
    if (away_from_devices.empty()) return std::nullopt;
    ExclusiveRequest out = r;
    std::vector<int> within;
    for (int numa : away_from_devices) {
      if (!r.within_numa_nodes ||
          std::find(r.within_numa_nodes->begin(), r.within_numa_nodes->end(), numa) !=
              r.within_numa_nodes->end()) {
        within.push_back(numa);
      }
    }
    if (within.empty()) return std::nullopt;
    out.within_numa_nodes = std::move(within);
    return out;
  };
  if (pod_level > 0 &&
      (config_.topology_scope == TopologyScope::kPod || exclusive_containers > 1)) {
    request.num_cpus = pod_level;
    absl::StatusOr<ExclusiveAllocation> whole = absl::UnknownError("not placed");
    if (std::optional<ExclusiveRequest> r = away(request)) whole = allocator.Allocate(free, *r);
    if (!whole.ok()) whole = allocator.Allocate(free, request);
    if (whole.ok()) {
      pod_numa_nodes = whole->numa_nodes;
    } else if (config_.topology_scope == TopologyScope::kPod) {
      return exhausted("pod scope", whole.status());
    }
  }

  // kubelet's order first; when that leaves the pod holding more than kubelet's pod-level
  // count (an init container's CPUs that no later container could reuse), the long-running
  // containers first, each regular init container then inside their CPUs where it fits.
  const bool exclusive_init = std::any_of(plans.begin(), plans.end(), [](const ContainerCpuPlan& p) {
    return p.regular_init() && p.exclusive_cpus > 0;
  });
  auto place_anywhere = [&](const ExclusiveRequest& r) {
    absl::StatusOr<ExclusivePass> pass = PlaceExclusive(allocator, plans, r, free, false);
    if (exclusive_init && (!pass.ok() || pass->taken.Size() > pod_level)) {
      absl::StatusOr<ExclusivePass> other = PlaceExclusive(allocator, plans, r, free, true);
      if (other.ok() && (!pass.ok() || other->taken.Size() < pass->taken.Size())) {
        pass = std::move(other);
      }
    }
    return pass;
  };
  auto place_pod = [&](const ExclusiveRequest& r) {
    if (std::optional<ExclusiveRequest> kept = away(r)) {
      absl::StatusOr<ExclusivePass> pass = place_anywhere(*kept);
      if (pass.ok()) return pass;
    }
    return place_anywhere(r);
  };
  absl::StatusOr<ExclusivePass> pass = absl::UnknownError("not placed");
  if (kubelet_numa_nodes) {
    // Static memory, devices: the CPUs go where kubelet puts them; under none / best-effort
    // kubelet admits a misaligned pod too, so the CPUs go elsewhere when they do not fit there.
    ExclusiveRequest beside = request;
    beside.within_numa_nodes = *kubelet_numa_nodes;
    pass = place_pod(beside);
    const bool must_align = request.topology_policy == TopologyPolicy::kSingleNumaNode ||
                            request.topology_policy == TopologyPolicy::kRestricted;
    if (!pass.ok() && must_align) {
      return absl::Status(
          pass.status().code(),
          fmt::format("{}: kubelet puts its {} on NUMA node(s) {}, where its CPUs do not "
                      "fit: {}",
                      PodName(pod),
                      !kubelet_devices ? "memory"
                      : kubelet_memory ? "memory and devices"
                                       : "devices",
                      IdSet(*kubelet_numa_nodes).ToString(),
                      std::string(pass.status().message())));
    }
  }
  if (!pass.ok() && pod_numa_nodes) {
    ExclusiveRequest inside = request;
    inside.within_numa_nodes = *pod_numa_nodes;
    pass = place_pod(inside);
  }
  if (!pass.ok() && (!pod_numa_nodes || config_.topology_scope == TopologyScope::kContainer)) {
    pass = place_pod(request);
  }
  if (pass.ok() && place_memory && !kubelet_memory) {
    absl::Status fits = memory_beside_cpus(*pass, nullptr);
    if (!fits.ok()) {
      // Place the pod again inside each NUMA set that could hold its memory, narrowest first.
      const std::map<std::string, ProviderHints> hints =
          memory_policy_->CalculateHints(memory_, pod.uid, PodMemoryRequests(pod), hint_limit);
      std::vector<std::vector<int>> sets;
      if (auto it = hints.find(kMemoryResource); it != hints.end() && it->second) {
        for (const TopologyHint& h : *it->second) sets.push_back(h.numa_nodes);
      }
      std::stable_sort(sets.begin(), sets.end(), [](const auto& a, const auto& b) {
        return a.size() < b.size();
      });
      bool placed = false;
      for (const std::vector<int>& set : sets) {
        if (request.topology_policy == TopologyPolicy::kSingleNumaNode && set.size() > 1) break;
        ExclusiveRequest inside = request;
        inside.within_numa_nodes = set;
        absl::StatusOr<ExclusivePass> again = place_pod(inside);
        if (again.ok() && memory_beside_cpus(*again, &set).ok()) {
          pass = std::move(again);
          placed = true;
          break;
        }
      }
      if (!placed) {
        return absl::ResourceExhaustedError(fmt::format(
            "{}: no NUMA node set of node {:?} holds both its exclusive CPUs and its memory "
            "({})",
            PodName(pod), config_.name, std::string(fits.message())));
      }
    }
  }
  if (!pass.ok()) {
    return absl::Status(pass.status().code(),
                        fmt::format("{}: {}", PodName(pod), std::string(pass.status().message())));
  }
  free = free.Difference(pass->taken);
  PodAllocation out;
  out.pod_uid = pod.uid;
  out.node = config_.name;
  for (size_t i = 0; i < plans.size(); ++i) {
    if (!plans[i].managed) continue;
    const ContainerCpuPlan& p = plans[i];
    ContainerAllocation c;
    c.name = p.spec->name;
    c.init = p.spec->init;
    c.restartable = p.spec->restartable;
    c.exclusive = p.exclusive_cpus > 0;
    if (c.exclusive) {
      c.cpuset = pass->by_plan[i].cpus;
      c.mems = IdSet(pass->by_plan[i].numa_nodes);
      out.numa_nodes = UnionIds(out.numa_nodes, pass->by_plan[i].numa_nodes);
    }
    if (auto m = mems_of.find(c.name); m != mems_of.end() && !m->second.empty()) {
      c.mems = IdSet(m->second);
    }
    out.containers.push_back(std::move(c));
  }
  if (free.Size() < shared_floor) {
    return absl::ResourceExhaustedError(fmt::format(
        "{}: would leave {} cpus in the shared pool of node {:?}, below the {} that shared "
        "containers request ({} millicores)",
        PodName(pod), free.Size(), config_.name, shared_floor, shared_milli_ + pod_shared_milli));
  }
  // Shared containers run on the pool as it is after this pod's exclusive CPUs left it.
  std::optional<CpuSet> shared_mems;  // computed only when the pod has a shared container
  for (ContainerAllocation& c : out.containers) {
    if (c.exclusive) continue;
    c.cpuset = free;
    if (auto m = mems_of.find(c.name); m != mems_of.end() && !m->second.empty()) {
      c.mems = IdSet(m->second);  // kubelet's memory manager pins it
      continue;
    }
    if (!shared_mems.has_value()) shared_mems = IdSet(topology_->NumaNodesOf(free));
    c.mems = *shared_mems;
  }
  Commit(pod, out, Owner::kHuygens);
  if (place_memory) memory_ = std::move(memory);
  if (kubelet_devices) {
    devices_free_ = std::move(devices_free);
    records_.at(pod.uid).devices = std::move(devices_held);
  }
  return out;
}

absl::Status NodeState::CheckAssumable(const PodSpec& pod, const PodAllocation& a, Owner owner) const {
  const std::string who = PodName(pod);
  if (pod.uid.empty()) return absl::InvalidArgumentError("pod: uid is empty");
  if (!a.pod_uid.empty() && a.pod_uid != pod.uid) {
    return absl::InvalidArgumentError(
        fmt::format("{}: allocation is for pod uid {:?}", who, a.pod_uid));
  }
  if (records_.contains(pod.uid)) {
    return absl::AlreadyExistsError(
        fmt::format("{}: already allocated on node {:?}", who, config_.name));
  }
  if (!a.node.empty() && !config_.name.empty() && a.node != config_.name) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: allocation.node: {:?} is not this node ({:?})", who, a.node, config_.name));
  }
  for (int numa : a.numa_nodes) {
    if (!topology_->HasNumaNode(numa)) {
      return absl::InvalidArgumentError(
          fmt::format("{}: allocation.numaNodes: NUMA node {} does not exist", who, numa));
    }
  }
  // Containers: known, flags as in the spec, in spec order.
  std::vector<const ContainerSpec*> order;
  for (const ContainerSpec& c : pod.init_containers) order.push_back(&c);
  for (const ContainerSpec& c : pod.containers) order.push_back(&c);
  size_t next = 0;
  std::set<std::string> seen;
  CpuSet held;
  for (const ContainerAllocation& c : a.containers) {
    const std::string field = fmt::format("{}: container {:?}", who, c.name);
    if (!seen.insert(c.name).second) {
      return absl::InvalidArgumentError(field + ": appears twice");
    }
    auto it = std::find_if(order.begin(), order.end(),
                           [&](const ContainerSpec* s) { return s->name == c.name; });
    if (it == order.end()) return absl::InvalidArgumentError(field + ": not in the pod spec");
    const ContainerSpec& spec = **it;
    if (spec.init != c.init || spec.restartable != c.restartable) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: init={} restartable={} but the pod spec says init={} restartable={}", field,
          c.init, c.restartable, spec.init, spec.restartable));
    }
    const size_t pos = static_cast<size_t>(it - order.begin());
    if (pos < next) {
      return absl::InvalidArgumentError(field + ": out of spec order");
    }
    next = pos + 1;
    const CpuSet bad_mems = c.mems.Difference(IdSet(topology_->NumaNodeIds()));
    if (!bad_mems.Empty()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: mems: NUMA nodes {} do not exist", field, bad_mems.ToString()));
    }
    if (!c.exclusive) continue;
    if (c.cpuset.Empty()) return absl::InvalidArgumentError(field + ": exclusive cpuset is empty");
    const CpuSet absent = c.cpuset.Difference(topology_->AllCpus());
    if (!absent.Empty()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: cpus {} do not exist on this machine", field, absent.ToString()));
    }
    const CpuSet offline = c.cpuset.Difference(topology_->OnlineCpus());
    if (!offline.Empty()) {
      return absl::FailedPreconditionError(
          fmt::format("{}: cpus {} are offline", field, offline.ToString()));
    }
    const CpuSet system = c.cpuset.Intersection(system_pool_);
    if (!system.Empty()) {
      return absl::FailedPreconditionError(
          fmt::format("{}: cpus {} are in the system pool", field, system.ToString()));
    }
    const CpuSet outside = c.cpuset.Difference(user_pool_);
    if (!outside.Empty()) {
      return absl::FailedPreconditionError(fmt::format(
          "{}: cpus {} are outside the user pool ({} mode)", field, outside.ToString(),
          ToString(config_.mode)));
    }
    held = held.Union(c.cpuset);
  }
  const std::vector<std::string> inner = PodOverlapViolations(a);
  if (!inner.empty()) return absl::FailedPreconditionError(inner.front());
  const CpuSet busy = held.Intersection(exclusive_);
  if (!busy.Empty()) {
    std::string holders;
    for (const std::string& uid : HoldersOf(busy, pod.uid)) {
      holders += (holders.empty() ? "" : ", ") + uid;
    }
    return absl::FailedPreconditionError(fmt::format(
        "{}: cpus {} are held by pod(s) {}", who, busy.ToString(), holders));
  }
  if (owner == Owner::kKubelet) return absl::OkStatus();  // kubelet's own accounting
  // Only what the request gives: a container that is not Guaranteed with whole CPUs (or whose
  // cpu-policy is shared or none) holds no exclusive CPU, and one that is holds exactly its
  // count (PlanContainer, on this node's mode).
  for (const ContainerAllocation& c : a.containers) {
    if (!c.exclusive) continue;
    auto spec = std::find_if(order.begin(), order.end(), [&](const ContainerSpec* s) { return s->name == c.name; });
    const int entitled = PlanContainer(pod, **spec, config_.mode).exclusive_cpus;  // found above
    if (c.cpuset.Size() == entitled) continue;
    return absl::InvalidArgumentError(fmt::format(
        "{}: container {:?}: exclusive cpuset {} has {} CPUs, but the container's request gives "
        "it {} exclusive CPUs on a node in {} mode",
        who, c.name, c.cpuset.ToString(), c.cpuset.Size(), entitled, ToString(config_.mode)));
  }
  return absl::OkStatus();
}

void NodeState::Commit(const PodSpec& pod, PodAllocation allocation, Owner owner) {
  PodRecord rec{.spec = pod, .held = allocation.ExclusiveCpus(), .owner = owner};
  std::vector<const ContainerSpec*> specs;
  for (const auto* list : {&pod.init_containers, &pod.containers}) {
    for (const ContainerSpec& c : *list) specs.push_back(&c);
  }
  for (const ContainerAllocation& c : allocation.containers) {
    if (c.exclusive) continue;
    for (const ContainerSpec* s : specs) {
      if (s->name == c.name) rec.shared_milli += SharedCpuMilli(*s, config_.mode);
    }
  }
  allocation.pod_uid = pod.uid;
  Take(rec.held);
  shared_milli_ += rec.shared_milli;
  records_[pod.uid] = std::move(rec);
  pods_[pod.uid] = std::move(allocation);
}

absl::Status NodeState::Assume(const PodSpec& pod, const PodAllocation& allocation,
                               Owner owner) {
  if (absl::Status s = CheckAssumable(pod, allocation, owner); !s.ok()) return s;
  Commit(pod, allocation, owner);
  RestoreMemory(pod, allocation);
  RestoreDevices(pod, allocation);
  return absl::OkStatus();
}

void NodeState::RestoreDevices(const PodSpec& pod, const PodAllocation& allocation) {
  if (config_.devices.empty()) return;
  NodeDevices& held = records_.at(pod.uid).devices;
  const std::map<std::string, int64_t> pod_requests = PodExtendedRequests(pod);
  for (const auto* list : {&pod.init_containers, &pod.containers}) {
    for (const ContainerSpec& c : *list) {
      const std::map<std::string, int64_t> requests =
          NodeDeviceRequests(config_.devices, c.extended_requests);
      if (requests.empty()) continue;
      std::vector<int> near = allocation.numa_nodes;
      for (const ContainerAllocation& a : allocation.containers) {
        if (a.name == c.name && !a.mems.Empty()) near.assign(a.mems.begin(), a.mems.end());
      }
      for (const auto& [resource, n] : requests) {
        // A regular init container's devices are reused by the containers after it: the pod
        // holds no more than PodExtendedRequests counts.
        const int64_t want = std::min<int64_t>(n, pod_requests.at(resource) -
                                                      DeviceCount(held[resource]));
        if (want <= 0) continue;
        NumaDeviceCounts& free = devices_free_[resource];
        const int64_t can = std::min(want, DeviceCount(free));
        absl::StatusOr<DeviceTake> take = TakeDevices(resource, free, {}, can, near);
        if (!take.ok()) continue;  // cannot happen: `can` devices are free
        AddDevices(devices_free_, resource, take->from_available, -1);
        AddDevices(held, resource, take->from_available, +1);
      }
    }
  }
}

NodeDevices NodeState::DevicesOf(const std::string& pod_uid) const {
  auto it = records_.find(pod_uid);
  return it == records_.end() ? NodeDevices{} : it->second.devices;
}

const NodeDevices& NodeState::HoldForeignDevices(const NodeDevices& devices) {
  for (const auto& [resource, counts] : foreign_devices_) AddDevices(devices_free_, resource, counts, +1);
  foreign_devices_.clear();
  for (const auto& [resource, counts] : devices) {
    auto free = devices_free_.find(resource);
    if (free == devices_free_.end()) continue;
    for (const auto& [numa, n] : counts) {
      auto here = free->second.find(numa);
      if (here == free->second.end()) continue;
      const int64_t take = std::min<int64_t>(n, here->second);
      if (take <= 0) continue;
      here->second -= take;
      foreign_devices_[resource][numa] = take;
    }
  }
  return foreign_devices_;
}

void NodeState::RestoreMemory(const PodSpec& pod, const PodAllocation& allocation) {
  if (memory_policy_ == nullptr || !MemoryManagerPlacesPod(pod)) return;
  for (const ContainerAllocation& c : allocation.containers) {
    // None: Huygens places only exclusive containers' memory. A regular init container's
    // memory is left out: the containers after it reuse it (kubelet's reuse), and its block
    // size after that reuse is not on the wire.
    if (c.mems.Empty() || (c.init && !c.restartable)) continue;
    if (!c.exclusive && !config_.memory_manager->static_policy) continue;
    const ContainerSpec* spec = nullptr;
    for (const auto* list : {&pod.init_containers, &pod.containers}) {
      for (const ContainerSpec& s : *list) {
        if (s.name == c.name) spec = &s;
      }
    }
    if (spec == nullptr) continue;
    std::vector<int> ids(c.mems.begin(), c.mems.end());
    std::vector<MemoryBlock> blocks;
    for (const auto& [resource, size] : ContainerMemoryRequests(*spec)) {
      blocks.push_back({ids, resource, size});
    }
    memory_policy_->Restore(memory_, pod.uid, c.name, std::move(blocks));
  }
}

absl::Status NodeState::ReplaceAllocation(const std::string& pod_uid,
                                          const PodAllocation& allocation) {
  auto it = records_.find(pod_uid);
  if (it == records_.end()) {
    return absl::NotFoundError(
        fmt::format("pod {}: not allocated on node {:?}", pod_uid, config_.name));
  }
  const PodSpec spec = it->second.spec;
  const Owner owner = it->second.owner;
  const PodAllocation old = pods_.at(pod_uid);
  const NodeDevices devices = it->second.devices;
  if (absl::Status s = ReleasePod(pod_uid); !s.ok()) return s;
  absl::Status s = Assume(spec, allocation, owner);
  if (!s.ok()) {
    // Its own CPUs were just freed, so the old allocation always fits again.
    absl::Status back = Assume(spec, old, owner);
    ABSL_RAW_CHECK(back.ok(), "NodeState::ReplaceAllocation: the old allocation no longer fits");
  }
  // A move changes CPUs and memory, never devices: the pod keeps the ones it had.
  NodeDevices& held = records_.at(pod_uid).devices;
  for (const auto& [resource, counts] : held) AddDevices(devices_free_, resource, counts, +1);
  held = devices;
  for (const auto& [resource, counts] : held) AddDevices(devices_free_, resource, counts, -1);
  return s;
}

absl::Status NodeState::ReleasePod(const std::string& pod_uid) {
  auto it = records_.find(pod_uid);
  if (it == records_.end()) {
    return absl::NotFoundError(
        fmt::format("pod {}: not allocated on node {:?}", pod_uid, config_.name));
  }
  Give(it->second.held);
  shared_milli_ -= it->second.shared_milli;
  for (const auto& [resource, counts] : it->second.devices) {
    AddDevices(devices_free_, resource, counts, +1);
  }
  if (memory_policy_ != nullptr) {
    for (const ContainerAllocation& c : pods_.at(pod_uid).containers) {
      memory_policy_->RemoveContainer(memory_, pod_uid, c.name);
    }
  }
  records_.erase(it);
  pods_.erase(pod_uid);
  return absl::OkStatus();
}

absl::Status NodeState::ReleaseContainer(const std::string& pod_uid,
                                         const std::string& container) {
  auto rec = records_.find(pod_uid);
  if (rec == records_.end()) {
    return absl::NotFoundError(
        fmt::format("pod {}: not allocated on node {:?}", pod_uid, config_.name));
  }
  PodAllocation& a = pods_.at(pod_uid);
  auto it = std::find_if(a.containers.begin(), a.containers.end(),
                         [&](const ContainerAllocation& c) { return c.name == container; });
  if (it == a.containers.end()) {
    return absl::NotFoundError(
        fmt::format("pod {}: container {:?} is not allocated", pod_uid, container));
  }
  if (!it->exclusive) {
    for (const auto* list : {&rec->second.spec.init_containers, &rec->second.spec.containers}) {
      for (const ContainerSpec& s : *list) {
        if (s.name == container) {
          const int64_t milli = SharedCpuMilli(s, config_.mode);
          rec->second.shared_milli -= milli;
          shared_milli_ -= milli;
        }
      }
    }
  }
  a.containers.erase(it);
  if (memory_policy_ != nullptr) memory_policy_->RemoveContainer(memory_, pod_uid, container);
  // CPUs still held by a sibling stay with the pod (kubelet's getAssignedCPUsOfSiblings).
  const CpuSet still = a.ExclusiveCpus();
  Give(rec->second.held.Difference(still));
  rec->second.held = still;
  a.numa_nodes = PodNumaNodes(a);
  if (a.containers.empty()) {
    for (const auto& [resource, counts] : rec->second.devices) {
      AddDevices(devices_free_, resource, counts, +1);
    }
    records_.erase(rec);
    pods_.erase(pod_uid);
  }
  return absl::OkStatus();
}

absl::StatusOr<CpuSet> NodeState::ResizeContainer(const std::string& pod_uid,
                                                  const std::string& container, int num_cpus) {
  auto rec = records_.find(pod_uid);
  if (rec == records_.end()) {
    return absl::NotFoundError(
        fmt::format("pod {}: not allocated on node {:?}", pod_uid, config_.name));
  }
  PodAllocation& a = pods_.at(pod_uid);
  auto it = std::find_if(a.containers.begin(), a.containers.end(),
                         [&](const ContainerAllocation& c) { return c.name == container; });
  const std::string who = fmt::format("pod {}: container {:?}", pod_uid, container);
  if (it == a.containers.end()) return absl::NotFoundError(who + ": not allocated");
  if (num_cpus < 1) {
    return absl::InvalidArgumentError(fmt::format("{}: resize to {} cpus", who, num_cpus));
  }
  if (!it->exclusive) {
    return absl::FailedPreconditionError(who + ": runs in the shared pool, nothing to resize");
  }
  if (rec->second.owner == Owner::kKubelet) {
    return absl::FailedPreconditionError(who + ": owned by kubelet's CPU manager");
  }
  const PodSpec& spec = rec->second.spec;
  const CpuSet current = it->cpuset;
  const int extra = num_cpus - current.Size();
  if (extra > 0 && SharedPool().Size() - extra < SharedCpusNeeded()) {
    return absl::ResourceExhaustedError(fmt::format(
        "{}: growing by {} would leave {} cpus in the shared pool, below the {} shared "
        "containers request",
        who, extra, SharedPool().Size() - extra, SharedCpusNeeded()));
  }
  ExclusiveRequest request;
  request.num_cpus = num_cpus;
  request.bind_policy = spec.bind_policy.value_or(config_.default_bind_policy);
  request.topology_policy = spec.topology_policy.value_or(config_.topology_policy);
  request.numa_strategy = config_.numa_strategy;
  request.capacity = config_.capacity;
  request.allocatable_cpus = user_pool_;
  absl::StatusOr<CpuSet> resized = shape_->allocator.Resize(current, SharedPool(), request);
  if (!resized.ok()) {
    return absl::Status(resized.status().code(),
                        who + ": " + std::string(resized.status().message()));
  }
  const CpuSet next = *std::move(resized);
  it->cpuset = next;
  it->mems = IdSet(topology_->NumaNodesOf(next));
  const CpuSet held = a.ExclusiveCpus();
  Give(rec->second.held.Difference(held));
  Take(held.Difference(rec->second.held));
  rec->second.held = held;
  a.numa_nodes = PodNumaNodes(a);
  return next;
}

// ---- Rebuild ------------------------------------------------------------------------------

NodeState::RebuildReport NodeState::Rebuild(
    const std::vector<std::pair<PodSpec, PodAllocation>>& pods) {
  exclusive_ = CpuSet();
  shared_milli_ = 0;
  pods_.clear();
  records_.clear();
  ResetCounters();
  // Devices and memory start over too: every device free but those held for other schedulers'
  // pods (HoldForeignDevices), and the memory manager's initial state.
  devices_free_ = config_.devices;
  for (const auto& [resource, counts] : foreign_devices_) {
    AddDevices(devices_free_, resource, counts, -1);
  }
  if (memory_policy_ != nullptr) memory_ = memory_policy_->InitialState();

  RebuildReport report;
  std::map<std::string, int> count;
  for (const auto& [spec, alloc] : pods) ++count[spec.uid];
  std::vector<const std::pair<PodSpec, PodAllocation>*> ok;
  std::set<std::string> rejected_dup;
  for (const auto& entry : pods) {
    const std::string& uid = entry.first.uid;
    if (count[uid] > 1) {
      if (rejected_dup.insert(uid).second) {
        report.rejected.emplace_back(
            uid, fmt::format("pod {}: appears {} times; none of them was taken", uid, count[uid]));
      }
      continue;
    }
    if (absl::Status s = CheckAssumable(entry.first, entry.second, Owner::kHuygens); !s.ok()) {
      report.rejected.emplace_back(uid, std::string(s.message()));
      continue;
    }
    ok.push_back(&entry);
  }
  // CPUs claimed by more than one pod: every claimant is rejected.
  CpuSet seen, contested;
  std::vector<CpuSet> held(ok.size());
  for (size_t i = 0; i < ok.size(); ++i) {
    held[i] = ok[i]->second.ExclusiveCpus();
    contested = contested.Union(held[i].Intersection(seen));
    seen = seen.Union(held[i]);
  }
  std::vector<const std::pair<PodSpec, PodAllocation>*> rebuilt;
  for (size_t i = 0; i < ok.size(); ++i) {
    const CpuSet mine = held[i].Intersection(contested);
    const std::string& uid = ok[i]->first.uid;
    if (mine.Empty()) {
      Commit(ok[i]->first, ok[i]->second, Owner::kHuygens);
      rebuilt.push_back(ok[i]);
      ++report.rebuilt;
      continue;
    }
    std::string others;
    for (size_t j = 0; j < ok.size(); ++j) {
      if (j != i && held[j].Intersects(mine)) {
        others += fmt::format("{}{} (cpus {})", others.empty() ? "" : ", ", ok[j]->first.uid,
                              held[j].Intersection(mine).ToString());
      }
    }
    report.rejected.emplace_back(
        uid, fmt::format("pod {}: cpus {} are also claimed by pod(s) {}; none of them was taken",
                         uid, mine.ToString(), others));
  }
  // Memory and devices as Assume restores them, by uid so that the order of `pods` does not
  // decide which pod gets a contested device.
  std::sort(rebuilt.begin(), rebuilt.end(),
            [](const auto* a, const auto* b) { return a->first.uid < b->first.uid; });
  for (const auto* entry : rebuilt) {
    RestoreMemory(entry->first, entry->second);
    RestoreDevices(entry->first, entry->second);
  }
  std::sort(report.rejected.begin(), report.rejected.end());
  return report;
}

// ---- Validate -----------------------------------------------------------------------------

std::vector<std::string> NodeState::Validate() const {
  std::vector<std::string> out;
  const CpuTopology& topo = *topology_;
  const CpuSet online = topo.OnlineCpus();
  auto report = [&](std::string line) { out.push_back(std::move(line)); };

  // 1. Pools.
  if (!(system_pool_ == config_.system_cpus)) {
    report(fmt::format("system pool is {} but the node's system cpus are {}",
                       system_pool_.ToString(), config_.system_cpus.ToString()));
  }
  if (const CpuSet both = system_pool_.Intersection(user_pool_); !both.Empty()) {
    report(fmt::format("cpus {} are in both the system pool and the user pool", both.ToString()));
  }
  if (const CpuSet off = system_pool_.Union(user_pool_).Difference(online); !off.Empty()) {
    report(fmt::format("pool cpus {} are offline or unknown", off.ToString()));
  }
  // 2 and 3. Every exclusive cpuset: inside the user pool, online, disjoint.
  CpuSet::Builder all;
  std::vector<std::pair<const std::string*, CpuSet>> per_pod;
  for (const auto& [uid, a] : pods_) {
    for (const ContainerAllocation& c : a.containers) {
      if (!c.exclusive) continue;
      if (const CpuSet off = c.cpuset.Difference(online); !off.Empty()) {
        report(fmt::format("pod {}: container {:?} holds offline or unknown cpus {}", uid, c.name,
                           off.ToString()));
      }
      if (const CpuSet sys = c.cpuset.Intersection(system_pool_); !sys.Empty()) {
        report(fmt::format("pod {}: container {:?} holds system-pool cpus {}", uid, c.name,
                           sys.ToString()));
      }
      if (const CpuSet out_of = c.cpuset.Difference(user_pool_).Difference(system_pool_);
          !out_of.Empty()) {
        report(fmt::format("pod {}: container {:?} holds cpus {} outside the user pool", uid,
                           c.name, out_of.ToString()));
      }
    }
    for (std::string& v : PodOverlapViolations(a)) report(std::move(v));
    const CpuSet held = a.ExclusiveCpus();
    for (const auto& [other, other_held] : per_pod) {
      if (const CpuSet both = held.Intersection(other_held); !both.Empty()) {
        report(fmt::format("pods {} and {} both hold cpus {}", *other, uid, both.ToString()));
      }
    }
    per_pod.emplace_back(&uid, held);
    all.Add(held);
    auto rec = records_.find(uid);
    if (rec == records_.end()) {
      report(fmt::format("pod {}: has an allocation but no record", uid));
    } else if (!(rec->second.held == held)) {
      report(fmt::format("pod {}: recorded as holding {} but its containers hold {}", uid,
                         rec->second.held.ToString(), held.ToString()));
    }
  }
  for (const auto& [uid, rec] : records_) {
    if (!pods_.contains(uid)) report(fmt::format("pod {}: has a record but no allocation", uid));
  }
  // 4. Exclusive and shared.
  const CpuSet union_held = all.Build();
  if (!(union_held == exclusive_)) {
    report(fmt::format("exclusive cpus are {} but the containers hold {} (stray: {}; "
                       "missing: {})",
                       exclusive_.ToString(), union_held.ToString(),
                       exclusive_.Difference(union_held).ToString(),
                       union_held.Difference(exclusive_).ToString()));
  }
  // 5. Counters and shared requests.
  int64_t milli = 0;
  for (const auto& [uid, rec] : records_) milli += rec.shared_milli;
  if (milli != shared_milli_) {
    report(fmt::format("shared requests are {} millicores but the pods add up to {}",
                       shared_milli_, milli));
  }
  const std::vector<NumaCounters> recount = Recount();
  for (size_t i = 0; i < recount.size() && i < counters_.size(); ++i) {
    const NumaCounters& want = recount[i];
    const NumaCounters& have = counters_[i];
    if (!(want == have)) {
      report(fmt::format("NUMA node {}: counters say user={} free={} free_cores={} "
                         "unshared_threads={} but the cpus give user={} free={} free_cores={} "
                         "unshared_threads={} (cpus {})",
                         want.numa, have.user_cpus, have.free_cpus, have.free_cores,
                         have.unshared_threads, want.user_cpus, want.free_cpus, want.free_cores,
                         want.unshared_threads,
                         topo.CpusInNumaNode(want.numa).Intersection(user_pool_).ToString()));
    }
  }
  if (recount.size() != counters_.size()) {
    report(fmt::format("{} NUMA counters for {} NUMA nodes", counters_.size(), recount.size()));
  }
  // 6. Devices.
  NodeDevices devices = devices_free_;
  for (const auto& [resource, counts] : foreign_devices_) AddDevices(devices, resource, counts, +1);
  for (const auto& [uid, rec] : records_) {
    for (const auto& [resource, counts] : rec.devices) AddDevices(devices, resource, counts, +1);
  }
  for (const auto& [resource, counts] : devices) {
    for (const auto& [numa, n] : counts) {
      const auto r = config_.devices.find(resource);
      const int64_t want = r == config_.devices.end() || !r->second.contains(numa)
                               ? 0
                               : r->second.at(numa);
      if (n != want) {
        report(fmt::format("{} on NUMA node {}: {} free + held but the node has {}", resource,
                           numa, n, want));
      }
    }
  }
  for (const auto& [resource, counts] : devices_free_) {
    for (const auto& [numa, n] : counts) {
      if (n < 0) report(fmt::format("{} on NUMA node {}: {} free", resource, numa, n));
    }
  }
  // Admission rule, not a structural invariant: report an overcommitted shared pool.
  if (SharedPool().Size() < SharedCpusNeeded()) {
    report(fmt::format("shared pool {} has {} cpus but shared containers request {} millicores",
                       SharedPool().ToString(), SharedPool().Size(), shared_milli_));
  }
  return out;
}

}  // namespace huygens
