#include "node/node_state.h"

#include <algorithm>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "alloc/waste.h"
#include "node/numa_ids.h"
#include "node/placement.h"

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
  absl::StatusOr<std::optional<KubeletPlacement>> kubelet = PredictKubelet(*this, pod);
  if (!kubelet.ok()) return kubelet.status();
  if (!kubelet->has_value()) return std::nullopt;
  KubeletNuma out;
  for (const auto& [container, numa] : (*kubelet)->devices_of) out.devices = UnionIds(out.devices, numa);
  for (const auto& [container, numa] : (*kubelet)->mems_of) out.memory = UnionIds(out.memory, numa);
  return out;
}

absl::StatusOr<PodAllocation> NodeState::AllocatePod(const PodSpec& pod,
                                                     const std::vector<int>& near_numa_nodes) {
  absl::StatusOr<PodPlacement> placed = PlacePod(*this, pod, near_numa_nodes);
  if (!placed.ok()) return placed.status();
  Commit(pod, placed->allocation, Owner::kHuygens);
  if (placed->memory) memory_ = *std::move(placed->memory);
  if (placed->devices_free) {
    devices_free_ = *std::move(placed->devices_free);
    records_.at(pod.uid).devices = std::move(placed->devices_held);
  }
  return std::move(placed->allocation);
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
