#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "alloc/device_manager.h"
#include "alloc/kubelet_admission.h"
#include "alloc/memory_manager.h"
#include "alloc/static_policy.h"
#include "alloc/take.h"
#include "fmt/format.h"
#include "node/node_state.h"
#include "rebalance/cache_groups.h"
#include "rebalance/planner.h"
#include "sched/cache.h"
#include "sched/evaluator.h"
#include "sched/node_topology.h"
#include "sched/profile.h"
#include "sched/queue.h"
#include "sched/scheduler.h"
#include "sim/cpu_ledger.h"
#include "base/yaml_reader.h"

namespace huygens::sim {
namespace {

// Everything one node group needs, computed once and shared by its nodes.
struct GroupModel {
  const NodeGroupSpec* spec = nullptr;
  std::shared_ptr<const CpuTopology> topology;  // with isolated flags in isolated mode
  std::shared_ptr<const LedgerShape> shape;
  CpuSet system_cpus;
  CpuSet user_pool;
  // Baseline and NRT runs: kubelet.
  std::optional<StaticPolicy> kubelet;
  // Baseline and NRT runs, groups whose kubelet runs the memory manager Static: its policy.
  std::optional<MemoryManagerPolicy> kubelet_memory;
  std::vector<int> numa_ids;
  std::map<int, std::map<int, int>> distances;
  // NRT run: the node's NodeResourceTopology but for the zones' available cpu, and each zone's
  // user CPUs (zones in NodeTopology order).
  sched::NodeTopology nrt;
  std::vector<CpuSet> zone_user_cpus;
  // The most user-pool CPUs one NUMA node of this shape has.
  int largest_numa_user_cpus = 0;
};

struct NodeModel {
  std::string name;
  int group = 0;
  std::unique_ptr<CpuLedger> ledger;
  std::optional<CpuManagerState> kubelet_state;  // baseline only
  std::optional<MemoryManagerState> kubelet_memory;  // with GroupModel::kubelet_memory
  NodeDevices kubelet_devices;  // kubelet runs: the device manager's free devices
};

struct PodRecord {
  sched::PodPtr pod;
  int node = -1;    // node index while running
  CpuSet held;      // exclusive CPUs while running
  bool running = false;
  bool ever_ran = false;
  bool failed = false;  // baseline: given up after re-creations
  NodeDevices devices;  // kubelet runs: the devices kubelet's device manager gave it
  int retries = 0;
  int scheduling_errors = 0;  // attempts that ended in ScheduleResult kError
  std::vector<std::pair<std::string, int>> last_reasons;
};

enum class EventKind { kDeparture, kRecreate, kResize, kRebalance };
struct Event {
  int64_t t = 0;
  uint64_t seq = 0;
  EventKind kind = EventKind::kDeparture;
  int pod = 0;
  int resize = -1;  // kResize: index into the pod's PodArrival::resizes
  bool operator>(const Event& o) const { return std::tie(t, seq) > std::tie(o.t, o.seq); }
};

absl::Time SimTime(int64_t us) { return absl::FromUnixMicros(us); }

// Rebalancer rounds in a row that may still move pods once nothing else is left to happen
// (SimulationOptions::rebalance): the planner reaches a fixed point long before (each round
// strictly improves a measure), so more is a bug, reported instead of running forever.
constexpr int kMaxIdleMovingRounds = 1000;

absl::StatusOr<std::shared_ptr<const CpuTopology>> WithIsolated(const CpuTopology& topo,
                                                                const CpuSet& isolated) {
  std::vector<CpuInfo> cpus = topo.Cpus();
  for (CpuInfo& c : cpus) c.isolated = isolated.Contains(c.id);
  MachineCpus machine = topo.Machine();
  machine.isolated = isolated;
  auto t = CpuTopology::Create(std::move(cpus), topo.NumaNodes(), machine);
  if (!t.ok()) return t.status();
  return std::make_shared<const CpuTopology>(*std::move(t));
}

// The NodeResourceTopology NFD's topology-updater publishes for a node of group `g`, but for
// the zones' available cpu (Run::NrtOf): attributes topologyManagerPolicy / topologyManagerScope
// from the group, no topologyManagerMaxNUMANodes (readers take 8); one zone per NUMA node, costs
// from the NUMA distances; memory: the node's allocatable memory shared among the zones in
// proportion to their online CPUs, and available = allocatable (with policy None pods hold no
// NUMA memory in the podresources API); on groups whose kubelet runs the memory manager Static,
// Run::NrtOf replaces it by the memory manager's state per NUMA node, hugepages included.
// `zone_user_cpus` gets each zone's user-pool CPUs.
sched::NodeTopology NrtTemplate(const NodeGroupSpec& g, const CpuTopology& topo,
                                const CpuSet& user_pool, std::vector<CpuSet>& zone_user_cpus) {
  sched::NodeTopology nrt;
  nrt.policy = g.topology_policy;
  nrt.scope = g.topology_scope;
  const int64_t online = topo.OnlineCpus().Size();
  for (const NumaNode& n : topo.NumaNodes()) {
    const CpuSet cpus = topo.CpusInNumaNode(n.id).Intersection(topo.OnlineCpus());
    const int64_t memory = online == 0 ? 0 : g.memory_bytes * cpus.Size() / online;
    nrt.zones.push_back({n.id, 0, memory});
    zone_user_cpus.push_back(cpus.Intersection(user_pool));
  }
  for (const NumaNode& a : topo.NumaNodes()) {
    for (const NumaNode& b : topo.NumaNodes()) nrt.costs.push_back(topo.Distance(a.id, b.id));
  }
  return nrt;
}

absl::StatusOr<GroupModel> BuildGroup(const NodeGroupSpec& g, bool baseline) {
  GroupModel m;
  m.spec = &g;
  const CpuTopology& topo = *g.topology;
  if (g.system_cpus) {
    m.system_cpus = *g.system_cpus;
  } else {
    auto taken = TakeByTopology(topo, topo.OnlineCpus(), g.system_cpu_count);
    if (!taken.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("node group {}: system CPUs: {}", g.name, Msg(taken.status())));
    }
    m.system_cpus = *taken;
  }
  m.topology = g.topology;
  if (g.mode == NodeMode::kIsolated) {
    auto t = WithIsolated(topo, topo.OnlineCpus().Difference(m.system_cpus));
    if (!t.ok()) return t.status();
    m.topology = *t;
  }
  m.shape = std::make_shared<const LedgerShape>(m.topology);
  m.user_pool = m.topology->OnlineCpus().Difference(m.system_cpus);
  for (const NumaNode& n : m.topology->NumaNodes()) {
    m.numa_ids.push_back(n.id);
    for (const NumaNode& o : m.topology->NumaNodes()) {
      m.distances[n.id][o.id] = m.topology->Distance(n.id, o.id);
    }
  }
  if (baseline) {
    m.nrt = NrtTemplate(g, *m.topology, m.user_pool, m.zone_user_cpus);
    if (m.system_cpus.Empty()) {
      return absl::InvalidArgumentError(fmt::format(
          "node group {}: the baseline models kubelet's static CPU manager, which needs at least "
          "one reserved CPU: set systemCpus or systemCpuCount > 0",
          g.name));
    }
    auto policy = StaticPolicy::Create(topo, m.system_cpus, m.system_cpus.Size(), {});
    if (!policy.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("node group {}: kubelet static policy: {}", g.name, Msg(policy.status())));
    }
    m.kubelet = *std::move(policy);
    if (g.memory_manager && g.memory_manager->static_policy) {
      auto memory = MemoryManagerPolicy::Create(topo, g.memory_manager->reserved_memory);
      if (!memory.ok()) {
        return absl::InvalidArgumentError(fmt::format("node group {}: kubelet memory manager: {}",
                                                      g.name, Msg(memory.status())));
      }
      m.kubelet_memory = *std::move(memory);
    }
  }
  return m;
}

double Percentile(std::vector<int64_t>& sorted_ns, double q) {
  if (sorted_ns.empty()) return 0;
  const size_t i = std::min(sorted_ns.size() - 1,
                            static_cast<size_t>(q * static_cast<double>(sorted_ns.size())));
  return static_cast<double>(sorted_ns[i]) / 1000.0;
}

// Whether `cpus` are whole cores of `topo`.
bool WholeCores(const CpuTopology& topo, const CpuSet& cpus) {
  for (int core : topo.CoresOf(cpus)) {
    if (!topo.CpusInCore(core).IsSubsetOf(cpus)) return false;
  }
  return true;
}

class Run {
 public:
  Run(const ClusterSpec& cluster, const std::vector<PodArrival>& arrivals, Scheduler which,
      const SimulationOptions& options)
      : cluster_(cluster), arrivals_(arrivals), which_(which), options_(options) {}

  absl::StatusOr<RunReport> Go();

 private:
  // Go's steps: the cluster and the pods; the event loop until nothing is left to happen;
  // the report's totals.
  absl::Status Prepare();
  absl::Status RunEvents();
  absl::Status HandleEvent(const Event& e);
  // A kRebalance event: one round, and the next one while anything can still change.
  absl::Status RebalanceRound();
  void SummarisePods();
  void SummariseTimeline();
  // The runs whose placements kubelet admits (nrt and baseline): NUMA-blind cache nodes, and
  // kubelet's topology manager and static CPU manager on each node.
  bool kubelet_admits() const { return which_ != Scheduler::kHuygens; }
  absl::Status BuildCluster();
  absl::Status Attempt(sched::QueuedPod queued);
  // SimulationOptions::explain_pod: every node's verdict and scores for `pod`, before the
  // attempt; Attempt completes it with the outcome.
  absl::StatusOr<PodExplanation> Explain(const sched::PodPtr& pod);
  // Baseline and NRT runs: kubelet admission of a pod the scheduler put on `node`
  // (TopologyManagerAdmit, alloc/kubelet_admission.h). Returns the rejection reason, or "" when
  // admitted (and `held` and the pod's devices set).
  // `memory_caused` / `device_caused`: the rejection is the memory manager's / the device
  // manager's (RunReport::memory_admission_rejected, device_admission_rejected).
  std::string Admit(int pod_index, int node, CpuSet& held, bool& memory_caused,
                    bool& device_caused);
  // Nodes with devices: counts an exclusive pod just placed that holds devices, and whether
  // its devices and its CPUs lie on different NUMA node sets (RunReport::device_misaligned_pods).
  void CountDevicePlacement(int pod_index, int node, const CpuSet& held);
  // Nodes that model memory: counts an exclusive pod just placed as remote-memory or
  // memory-unpinned (RunReport). `allocation`: Huygens' (nullopt in the kubelet runs).
  void CountMemoryPlacement(int pod_index, int node,
                            const std::optional<PodAllocation>& allocation);
  absl::Status Place(int pod_index, int node, const CpuSet& held,
                     const std::optional<PodAllocation>& allocation);
  absl::Status Depart(int pod_index);
  // NRT run: the node's NodeResourceTopology as NFD's topology-updater reports it from the
  // node's kubelet state: a zone's available cpu is its user CPUs that no container holds
  // exclusively (the podresources API lists exclusive CPUs only, so shared pods do not count).
  std::shared_ptr<const sched::NodeTopology> NrtOf(const NodeModel& node) const;
  // NRT run: republishes the node's NodeResourceTopology after its kubelet state changed (the
  // model has no publication delay: the scheduler always reads a fresh object).
  absl::Status PublishNrt(int node_idx);
  // A running pod's in-place resize (PodArrival::resizes[which]); a pod no longer running
  // ignores it. Huygens: ClusterCache::ResizeContainer; baseline: kubelet v1.35 refuses it.
  absl::Status Resize(int pod_index, int which);
  // Moves the pod's CPUs in its node's ledger from rec.held to `held`, keeping the counters.
  absl::Status Rehold(int pod_index, const CpuSet& held);
  absl::Status CheckAll() const;
  // One node of CheckAll.
  absl::Status CheckNode(const NodeModel& node) const;
  // SimulationOptions::rebalance: one interval of the rebalancer over every node. Sets `moved`
  // when some pod moved.
  absl::Status Rebalance(bool& moved);
  // The affinity-group figures of a timeline sample (TimelineSample::group_members_*).
  void CountGroupAlignment(TimelineSample& s) const;
  void Sample(int64_t t_us);
  void SnapshotCpuMaps(int64_t t_us);

  const ClusterSpec& cluster_;
  const std::vector<PodArrival>& arrivals_;
  Scheduler which_;
  const SimulationOptions& options_;

  std::vector<GroupModel> groups_;
  std::vector<NodeModel> nodes_;
  absl::flat_hash_map<std::string, int> node_index_;
  std::vector<int> map_nodes_;  // nodes sampled for CPU maps
  sched::ClusterCache cache_;
  std::unique_ptr<sched::Scheduler> scheduler_;
  std::unique_ptr<sched::ProfileEvaluator> evaluator_;  // explain_pod only
  sched::SchedulingQueue queue_;
  std::vector<PodRecord> pods_;
  absl::flat_hash_map<std::string, int> pod_index_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  uint64_t seq_ = 0;
  int64_t now_us_ = 0;
  size_t next_arrival_ = 0;  // arrivals_[next_arrival_] is the next pod to arrive
  // Rebalancer rounds in a row that moved something while nothing else was left to happen.
  int idle_moving_rounds_ = 0;

  // Cluster-wide counters, kept equal to the sum over ledgers.
  int64_t user_cpus_ = 0, held_ = 0, shared_cores_ = 0, fragmented_ = 0;
  // Sum over nodes of CpuLedger::NumaLoadSpread, and the nodes with a spread to measure.
  int64_t numa_spread_sum_ = 0;
  int spread_nodes_ = 0;
  // Affinity groups: each pod's group id (-1: none, or a spread group, which the alignment
  // figures leave out), and the pods that have one.
  std::vector<int> aligned_group_of_;
  std::vector<int> aligned_members_;
  int running_ = 0;
  std::vector<int64_t> latencies_ns_;
  int64_t total_ns_ = 0;
  int64_t sample_interval_us_ = 0, next_sample_us_ = 0;
  double peak_util_ = -1;
  int numa_sum_ = 0;
  int single_numa_ = 0;
  // The most user-pool CPUs one NUMA node of any node has: an exclusive pod of at most this
  // many CPUs "fits one NUMA node" (RunReport::fits_one_numa_pods).
  int largest_numa_user_cpus_ = 0;
  int fits_one_numa_ = 0, fits_one_numa_single_ = 0;
  RunReport report_;
};

absl::Status Run::BuildCluster() {
  for (const NodeGroupSpec& g : cluster_.groups) {
    auto m = BuildGroup(g, kubelet_admits());
    if (!m.ok()) return m.status();
    groups_.push_back(*std::move(m));
  }
  // CPU-map sample: first node of each group, then round-robin.
  std::vector<int> first_index;
  int total = 0;
  for (const NodeGroupSpec& g : cluster_.groups) {
    first_index.push_back(total);
    total += g.count;
  }
  for (int round = 0; static_cast<int>(map_nodes_.size()) < std::min(options_.cpu_map_nodes, total);
       ++round) {
    for (size_t gi = 0; gi < cluster_.groups.size(); ++gi) {
      if (round < cluster_.groups[gi].count &&
          static_cast<int>(map_nodes_.size()) < options_.cpu_map_nodes) {
        map_nodes_.push_back(first_index[gi] + round);
      }
    }
  }
  std::sort(map_nodes_.begin(), map_nodes_.end());
  for (GroupModel& m : groups_) {
    for (const NumaNode& n : m.topology->NumaNodes()) {
      m.largest_numa_user_cpus =
          std::max(m.largest_numa_user_cpus, n.cpus.Intersection(m.user_pool).Size());
    }
    largest_numa_user_cpus_ = std::max(largest_numa_user_cpus_, m.largest_numa_user_cpus);
  }
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    const GroupModel& m = groups_[gi];
    const NodeGroupSpec& g = *m.spec;
    for (int i = 0; i < g.count; ++i) {
      NodeModel nm;
      nm.name = fmt::format("{}-{}", g.name, i);
      nm.group = static_cast<int>(gi);
      nm.ledger = std::make_unique<CpuLedger>(m.shape, m.user_pool);
      sched::Node node;
      node.name = nm.name;
      node.labels = g.labels;
      node.taints = g.taints;
      node.allocatable.memory_bytes = g.memory_bytes;
      if (g.memory_manager) {
        // kubelet's allocatable memory leaves out the hugepages and the reserved memory.
        for (const NumaNode& n : m.topology->NumaNodes()) {
          for (const auto& [size, pages] : n.hugepages) {
            node.allocatable.memory_bytes -= static_cast<int64_t>(size * pages);
          }
        }
        for (const auto& [numa, resources] : g.memory_manager->reserved_memory) {
          auto it = resources.find(kMemoryResource);
          if (it != resources.end()) node.allocatable.memory_bytes -= static_cast<int64_t>(it->second);
        }
        node.allocatable.memory_bytes = std::max<int64_t>(0, node.allocatable.memory_bytes);
      }
      node.allocatable.pods = g.max_pods;
      for (const auto& [resource, counts] : g.devices) {
        node.allocatable.extended[resource] += DeviceCount(counts);
      }
      if (g.mode == NodeMode::kIsolated && !kubelet_admits()) {
        node.allocatable.cpu_milli = int64_t{m.system_cpus.Size()} * 1000;
        node.allocatable.extended[kIsolatedCpuResource] = m.user_pool.Size();
      } else {
        node.allocatable.cpu_milli = int64_t{m.user_pool.Size()} * 1000;
      }
      if (kubelet_admits()) {
        nm.kubelet_state = m.kubelet->InitialState();
        if (m.kubelet_memory) nm.kubelet_memory = m.kubelet_memory->InitialState();
        nm.kubelet_devices = g.devices;
        if (which_ == Scheduler::kNrt) node.nrt = NrtOf(nm);
      } else {
        NodeConfig config;
        config.name = nm.name;
        config.mode = g.mode;
        config.system_cpus = m.system_cpus;
        config.topology_policy = g.topology_policy;
        config.topology_scope = g.topology_scope;
        config.default_bind_policy = g.bind_policy;
        config.numa_strategy = g.numa_strategy;
        config.memory_manager = g.memory_manager;
        config.devices = g.devices;
        auto state = NodeState::Create(m.topology, std::move(config));
        if (!state.ok()) {
          return absl::InvalidArgumentError(
              fmt::format("node {}: {}", nm.name, Msg(state.status())));
        }
        node.cpu_state = std::make_shared<const NodeState>(*std::move(state));
      }
      if (auto st = cache_.AddNode(std::move(node)); !st.ok()) return st;
      user_cpus_ += nm.ledger->UserCpus();
      fragmented_ += nm.ledger->FragmentedFreeCpus();
      if (nm.ledger->UserNumaNodes() >= 2) ++spread_nodes_;
      node_index_[nm.name] = static_cast<int>(nodes_.size());
      nodes_.push_back(std::move(nm));
    }
  }
  sched::Profile profile = which_ == Scheduler::kHuygens ? sched::HuygensProfile()
                           : which_ == Scheduler::kNrt  ? sched::NrtProfile(options_.nrt_scoring)
                                                        : sched::DefaultProfile();
  std::unique_ptr<sched::BindPlugin> binder;
  if (!kubelet_admits() && options_.huygens_binder) binder = options_.huygens_binder(&cache_);
  auto s = sched::Scheduler::Create(&cache_, profile, std::move(binder));
  if (!s.ok()) return s.status();
  scheduler_ = *std::move(s);
  return absl::OkStatus();
}

std::shared_ptr<const sched::NodeTopology> Run::NrtOf(const NodeModel& node) const {
  const GroupModel& g = groups_[static_cast<size_t>(node.group)];
  auto nrt = std::make_shared<sched::NodeTopology>(g.nrt);
  for (size_t z = 0; z < nrt->zones.size(); ++z) {
    nrt->zones[z].cpu_available_milli =
        int64_t{g.zone_user_cpus[z].IntersectionSize(node.kubelet_state->default_cpu_set)} * 1000;
    const int numa = nrt->zones[z].numa;
    // Memory manager Static: the zone's memory and hugepages as NFD's topology-updater reports
    // them from kubelet's pod resources API (available = what the memory manager has not given
    // out on that NUMA node).
    if (node.kubelet_memory) {
      auto state = node.kubelet_memory->machine.find(numa);
      if (state != node.kubelet_memory->machine.end()) {
        for (const auto& [resource, table] : state->second.memory_map) {
          if (resource == kMemoryResource) {
            nrt->zones[z].memory_available_bytes = static_cast<int64_t>(table.free);
          } else if (table.allocatable > 0) {
            nrt->zones[z].extended_available[resource] = static_cast<int64_t>(table.free);
          }
        }
      }
    }
    // Devices: listed in the zones of their NUMA nodes, with kubelet's free count.
    for (const auto& [resource, counts] : g.spec->devices) {
      auto total = counts.find(numa);
      if (total == counts.end() || total->second <= 0) continue;
      auto free = node.kubelet_devices.find(resource);
      int64_t available = 0;
      if (free != node.kubelet_devices.end()) {
        auto n = free->second.find(numa);
        if (n != free->second.end()) available = n->second;
      }
      nrt->zones[z].extended_available[resource] = available;
    }
  }
  return nrt;
}

absl::Status Run::PublishNrt(int node_idx) {
  const NodeModel& nm = nodes_[static_cast<size_t>(node_idx)];
  const sched::NodeInfo* info = cache_.FindNode(nm.name);
  if (info == nullptr) return absl::InternalError(fmt::format("node {} left the cache", nm.name));
  sched::Node node = info->node;
  node.nrt = NrtOf(nm);
  return cache_.UpdateNode(std::move(node));
}

std::string Run::Admit(int pod_index, int node_idx, CpuSet& held, bool& memory_caused,
                       bool& device_caused) {
  NodeModel& node = nodes_[static_cast<size_t>(node_idx)];
  const GroupModel& g = groups_[static_cast<size_t>(node.group)];
  PodRecord& rec = pods_[static_cast<size_t>(pod_index)];
  // The stock kubelet: the CPU manager's static policy, the device manager (groups with
  // `devices`) and the memory manager (Static policy only) as hint providers.
  const TopologyManagerConfig config{.policy = g.spec->topology_policy,
                                     .scope = g.spec->topology_scope,
                                     .options = {},
                                     .numa_nodes = g.numa_ids,
                                     .distances = &g.distances};
  const KubeletHintProviders providers{
      .cpu_policy = &*g.kubelet,
      .cpu_state = &*node.kubelet_state,
      .memory_policy = g.kubelet_memory ? &*g.kubelet_memory : nullptr,
      .memory_state = node.kubelet_memory ? &*node.kubelet_memory : nullptr,
      .devices = &g.spec->devices,
      .free_devices = &node.kubelet_devices};
  PodAdmission admitted = TopologyManagerAdmit(config, providers, rec.pod->spec,
                                               /*tell_cause=*/true);
  memory_caused = admitted.cause == HintProvider::kMemoryManager;
  device_caused = admitted.cause == HintProvider::kDeviceManager;
  if (!admitted.admitted()) return admitted.reason;
  rec.devices = std::move(admitted.devices);
  CpuSet::Builder b;
  for (const ContainerAdmission& c : admitted.containers) b.Add(c.cpus);
  held = b.Build();
  return "";
}

absl::Status Run::Place(int pod_index, int node_idx, const CpuSet& held,
                        const std::optional<PodAllocation>& allocation) {
  PodRecord& rec = pods_[static_cast<size_t>(pod_index)];
  NodeModel& node = nodes_[static_cast<size_t>(node_idx)];
  const GroupModel& g = groups_[static_cast<size_t>(node.group)];
  const CpuTopology& topo = *g.topology;
  const PodSpec& spec = rec.pod->spec;
  // Policy checks on the placement.
  const TopologyPolicy policy =
      kubelet_admits() ? g.spec->topology_policy
                       : spec.topology_policy.value_or(g.spec->topology_policy);
  const TopologyScope scope = g.spec->topology_scope;
  auto violation = [&](const std::string& what) {
    return absl::InternalError(fmt::format("{} run: pod {} on node {}: {}", report_.scheduler,
                                           spec.uid, node.name, what));
  };
  if (allocation) {
    const BindPolicy bind = spec.bind_policy.value_or(g.spec->bind_policy);
    for (const ContainerAllocation& c : allocation->containers) {
      if (!c.exclusive) continue;
      const ContainerSpec* cs = nullptr;
      for (const auto* list : {&spec.init_containers, &spec.containers}) {
        for (const ContainerSpec& x : *list) {
          if (x.name == c.name) cs = &x;
        }
      }
      if (cs == nullptr) return violation(fmt::format("unknown container {}", c.name));
      const int want = g.spec->mode == NodeMode::kIsolated ? static_cast<int>(cs->isolated_cpus)
                                                           : ExclusiveCpus(spec, *cs);
      if (c.cpuset.Size() != want) {
        return violation(fmt::format("container {} holds {} CPUs ({}), wants {}", c.name,
                                     c.cpuset.Size(), c.cpuset.ToString(), want));
      }
      if (policy == TopologyPolicy::kSingleNumaNode && scope == TopologyScope::kContainer &&
          topo.NumaNodesOf(c.cpuset).size() > 1) {
        return violation(fmt::format("container {} spans NUMA nodes under single-numa-node ({})",
                                     c.name, c.cpuset.ToString()));
      }
      if (bind == BindPolicy::kFullCores && !WholeCores(topo, c.cpuset)) {
        return violation(fmt::format("container {} splits a core under full-cores ({})", c.name,
                                     c.cpuset.ToString()));
      }
    }
  }
  if (policy == TopologyPolicy::kSingleNumaNode && scope == TopologyScope::kPod &&
      topo.NumaNodesOf(held).size() > 1) {
    return violation(fmt::format("pod spans NUMA nodes under single-numa-node ({})", held.ToString()));
  }
  rec.node = node_idx;
  if (absl::Status st = Rehold(pod_index, held); !st.ok()) return violation(Msg(st));
  rec.running = true;
  rec.ever_ran = true;
  ++running_;
  ++report_.scheduled;
  if (!held.Empty()) {
    if (g.spec->memory_manager) CountMemoryPlacement(pod_index, node_idx, allocation);
    if (!g.spec->devices.empty()) CountDevicePlacement(pod_index, node_idx, held);
    ++report_.exclusive_pods;
    const int n = static_cast<int>(topo.NumaNodesOf(held).size());
    numa_sum_ += n;
    if (n == 1) ++single_numa_;
    if (topo.SocketsOf(held).size() > 1) ++report_.multi_socket_pods;
    if (held.Size() <= largest_numa_user_cpus_) {
      ++fits_one_numa_;
      if (n == 1) ++fits_one_numa_single_;
    }
  }
  const int64_t lifetime = arrivals_[static_cast<size_t>(pod_index)].lifetime_us;
  if (lifetime >= 0) events_.push({now_us_ + lifetime, seq_++, EventKind::kDeparture, pod_index});
  const std::vector<ResizeEvent>& resizes = arrivals_[static_cast<size_t>(pod_index)].resizes;
  for (size_t i = 0; i < resizes.size(); ++i) {
    if (lifetime < 0 || resizes[i].after_us < lifetime) {
      events_.push({now_us_ + resizes[i].after_us, seq_++, EventKind::kResize, pod_index,
                    static_cast<int>(i)});
    }
  }
  return absl::OkStatus();
}

void Run::CountMemoryPlacement(int pod_index, int node_idx,
                               const std::optional<PodAllocation>& allocation) {
  const NodeModel& node = nodes_[static_cast<size_t>(node_idx)];
  const GroupModel& g = groups_[static_cast<size_t>(node.group)];
  const CpuTopology& topo = *g.topology;
  const std::string& uid = pods_[static_cast<size_t>(pod_index)].pod->Uid();
  // Whether memory on `mems` is remote for CPUs `cpus`: some memory NUMA node holds none of them.
  auto remote = [&](const CpuSet& cpus, const std::vector<int>& mems) {
    const std::vector<int> cpu_numa = topo.NumaNodesOf(cpus);
    return std::ranges::any_of(
        mems, [&](int m) { return std::find(cpu_numa.begin(), cpu_numa.end(), m) == cpu_numa.end(); });
  };
  bool is_remote = false;
  if (!kubelet_admits()) {
    if (!allocation) return;
    for (const ContainerAllocation& c : allocation->containers) {
      if (!c.exclusive) continue;
      if (remote(c.cpuset, std::vector<int>(c.mems.begin(), c.mems.end()))) is_remote = true;
    }
  } else if (!node.kubelet_memory) {
    ++report_.memory_unpinned_pods;  // kubelet's memory manager None: nothing pins the memory
    return;
  } else {
    auto it = node.kubelet_state->assignments.find(uid);
    if (it == node.kubelet_state->assignments.end()) return;
    for (const auto& [container, cpus] : it->second) {
      if (remote(cpus, MemoryManagerPolicy::MemoryNumaNodes(*node.kubelet_memory, uid, container))) {
        is_remote = true;
      }
    }
  }
  if (is_remote) ++report_.remote_memory_pods;
}

void Run::CountDevicePlacement(int pod_index, int node_idx, const CpuSet& held) {
  const NodeModel& node = nodes_[static_cast<size_t>(node_idx)];
  const PodRecord& rec = pods_[static_cast<size_t>(pod_index)];
  NodeDevices devices = rec.devices;
  if (!kubelet_admits()) {
    const sched::NodeInfo* info = cache_.FindNode(node.name);
    if (info == nullptr || info->cpu_state == nullptr) return;
    devices = info->cpu_state->DevicesOf(rec.pod->Uid());
  }
  const std::vector<int> cpu_numa =
      groups_[static_cast<size_t>(node.group)].topology->NumaNodesOf(held);
  std::set<int> device_numa;
  for (const auto& [resource, counts] : devices) {
    for (int numa : DeviceNumaNodes(counts)) device_numa.insert(numa);
  }
  if (device_numa.empty()) return;
  ++report_.device_pods;
  if (!std::ranges::equal(device_numa, cpu_numa)) ++report_.device_misaligned_pods;
}

absl::Status Run::Rehold(int pod_index, const CpuSet& held) {
  PodRecord& rec = pods_[static_cast<size_t>(pod_index)];
  NodeModel& node = nodes_[static_cast<size_t>(rec.node)];
  held_ -= node.ledger->HeldCpus();
  shared_cores_ -= node.ledger->SharedSiblingCores();
  fragmented_ -= node.ledger->FragmentedFreeCpus();
  numa_spread_sum_ -= node.ledger->NumaLoadSpread();
  node.ledger->Release(pod_index, rec.held);
  absl::Status st = node.ledger->Take(pod_index, held);
  held_ += node.ledger->HeldCpus();
  shared_cores_ += node.ledger->SharedSiblingCores();
  fragmented_ += node.ledger->FragmentedFreeCpus();
  numa_spread_sum_ += node.ledger->NumaLoadSpread();
  if (st.ok()) rec.held = held;
  return st;
}

absl::Status Run::Resize(int pod_index, int which) {
  PodRecord& rec = pods_[static_cast<size_t>(pod_index)];
  if (!rec.running) return absl::OkStatus();
  const ResizeEvent& e = arrivals_[static_cast<size_t>(pod_index)].resizes[static_cast<size_t>(which)];
  ++report_.resizes;
  if (kubelet_admits()) {
    ++report_.resizes_refused;
    ++report_.resize_refused_reasons["Infeasible: kubelet's static CPU manager policy"];
    return absl::OkStatus();
  }
  const std::string& uid = rec.pod->Uid();
  absl::StatusOr<CpuSet> resized = cache_.ResizeContainer(uid, e.container, e.cpus);
  if (!resized.ok()) {
    ++report_.resizes_refused;
    ++report_.resize_refused_reasons[absl::StatusCodeToString(resized.status().code())];
    return absl::OkStatus();
  }
  const sched::ClusterCache::PodEntry* entry = cache_.FindPod(uid);
  const CpuSet held =
      entry != nullptr && entry->allocation ? entry->allocation->ExclusiveCpus() : CpuSet();
  if (absl::Status st = Rehold(pod_index, held); !st.ok()) {
    return absl::InternalError(fmt::format("huygens run: pod {} resized on node {}: {}", uid,
                                           nodes_[static_cast<size_t>(rec.node)].name, Msg(st)));
  }
  queue_.OnClusterEvent(sched::ClusterEvent::kPodUpdated, SimTime(now_us_));
  return absl::OkStatus();
}

absl::Status Run::Depart(int pod_index) {
  PodRecord& rec = pods_[static_cast<size_t>(pod_index)];
  if (!rec.running) return absl::OkStatus();
  NodeModel& node = nodes_[static_cast<size_t>(rec.node)];
  if (auto st = cache_.RemovePod(rec.pod->Uid()); !st.ok()) {
    return absl::InternalError(fmt::format("pod {} departs: {}", rec.pod->Uid(), Msg(st)));
  }
  if (kubelet_admits()) {
    const StaticPolicy& policy = *groups_[static_cast<size_t>(node.group)].kubelet;
    for (const auto* list : {&rec.pod->spec.init_containers, &rec.pod->spec.containers}) {
      for (const ContainerSpec& c : *list) {
        policy.RemoveContainer(*node.kubelet_state, rec.pod->Uid(), c.name);
        if (node.kubelet_memory) {
          groups_[static_cast<size_t>(node.group)].kubelet_memory->RemoveContainer(
              *node.kubelet_memory, rec.pod->Uid(), c.name);
        }
      }
    }
    for (const auto& [resource, counts] : rec.devices) {
      for (const auto& [numa, n] : counts) node.kubelet_devices[resource][numa] += n;
    }
    rec.devices.clear();
    if (which_ == Scheduler::kNrt) {
      if (absl::Status st = PublishNrt(rec.node); !st.ok()) return st;
    }
  }
  if (absl::Status st = Rehold(pod_index, CpuSet()); !st.ok()) return st;
  rec.running = false;
  rec.node = -1;
  --running_;
  queue_.OnClusterEvent(sched::ClusterEvent::kPodDeleted, SimTime(now_us_));
  return absl::OkStatus();
}

absl::StatusOr<PodExplanation> Run::Explain(const sched::PodPtr& pod) {
  if (evaluator_ == nullptr) {
    auto e = sched::ProfileEvaluator::Create(scheduler_->profile(), &cache_);
    if (!e.ok()) return e.status();
    evaluator_ = *std::move(e);
  }
  const std::vector<sched::NodeInfo*>& all = cache_.Nodes();
  const std::vector<const sched::NodeInfo*> nodes(all.begin(), all.end());
  std::vector<std::string> refused_by;
  auto verdicts = evaluator_->Filter(pod, nodes, &refused_by);
  if (!verdicts.ok()) return verdicts.status();
  std::vector<const sched::NodeInfo*> feasible;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if ((*verdicts)[i].ok()) feasible.push_back(nodes[i]);
  }
  auto scores = evaluator_->ScoreByPlugin(pod, feasible);
  if (!scores.ok()) return scores.status();
  PodExplanation e;
  e.pod = pod->spec.name;
  e.seconds = static_cast<double>(now_us_) / 1e6;
  e.score_plugins = scores->plugins;
  e.weights = scores->weights;
  const size_t n = feasible.size();
  for (size_t k = 0; k < n; ++k) {
    PodExplanation::NodeVerdict v;
    v.node = feasible[k]->node.name;
    for (size_t p = 0; p < scores->plugins.size(); ++p) v.scores.push_back(scores->normalised[p * n + k]);
    v.total = scores->totals[k];
    e.nodes.push_back(std::move(v));
  }
  std::stable_sort(e.nodes.begin(), e.nodes.end(),
                   [](const auto& a, const auto& b) { return a.total > b.total; });
  for (size_t i = 0; i < nodes.size(); ++i) {
    if ((*verdicts)[i].ok()) continue;
    e.nodes.push_back({.node = nodes[i]->node.name, .filter = refused_by[i],
                       .reason = (*verdicts)[i].Message(), .scores = {}, .total = 0});
  }
  return e;
}

absl::Status Run::Attempt(sched::QueuedPod queued) {
  const std::string uid = queued.pod->Uid();
  const int pod_index = pod_index_.at(uid);
  PodRecord& rec = pods_[static_cast<size_t>(pod_index)];
  std::optional<PodExplanation> explanation;
  if (which_ == Scheduler::kHuygens && !options_.explain_pod.empty() &&
      queued.pod->spec.name == options_.explain_pod) {
    absl::StatusOr<PodExplanation> e = Explain(queued.pod);
    if (!e.ok()) return e.status();
    explanation = *std::move(e);
  }
  std::vector<sched::NodeVerdict> visited;  // explained attempts: the nodes the attempt visited
  const int64_t t0 = options_.clock_ns();
  sched::ScheduleResult result =
      scheduler_->ScheduleOne(queued.pod, explanation ? &visited : nullptr);
  const int64_t dt = options_.clock_ns() - t0;
  latencies_ns_.push_back(dt);
  total_ns_ += dt;
  ++report_.attempts;
  if (explanation) {
    PodExplanation& e = *explanation;
    e.message = result.message;
    // A PreFilter verdict covers every node without a visit (no verdicts then).
    e.visited_nodes = static_cast<int>(e.nodes.size());
    if (!visited.empty()) {
      std::set<std::string_view> names;
      for (const sched::NodeVerdict& v : visited) names.insert(v.node);
      for (PodExplanation::NodeVerdict& n : e.nodes) n.visited = names.contains(n.node);
      e.visited_nodes = static_cast<int>(names.size());
      // What the choice compared first: feasible and visited, then feasible, then refused.
      std::stable_sort(e.nodes.begin(), e.nodes.end(), [](const auto& a, const auto& b) {
        return std::pair(!a.filter.empty(), !a.visited) < std::pair(!b.filter.empty(), !b.visited);
      });
    }
    switch (result.outcome) {
      case sched::ScheduleResult::Outcome::kScheduled:
        e.outcome = "scheduled";
        e.node = result.node;
        if (result.allocation) {
          e.numa_nodes = result.allocation->numa_nodes;
          for (const ContainerAllocation& c : result.allocation->containers) {
            e.cpusets.emplace_back(c.name, c.exclusive ? c.cpuset.ToString() : std::string());
          }
        }
        break;
      case sched::ScheduleResult::Outcome::kUnschedulable: e.outcome = "unschedulable"; break;
      case sched::ScheduleResult::Outcome::kError: e.outcome = "error"; break;
    }
    report_.explanations.push_back(std::move(e));
  }
  switch (result.outcome) {
    case sched::ScheduleResult::Outcome::kScheduled: {
      queue_.Done(uid);
      const int node_idx = node_index_.at(result.node);
      CpuSet held;
      if (kubelet_admits()) {
        bool memory_caused = false, device_caused = false;
        const std::string why = Admit(pod_index, node_idx, held, memory_caused, device_caused);
        if (!why.empty()) {
          ++report_.admission_rejected;
          ++report_.admission_rejected_reasons[why];
          if (memory_caused) ++report_.memory_admission_rejected;
          if (device_caused) ++report_.device_admission_rejected;
          if (auto st = cache_.RemovePod(uid); !st.ok()) {
            return absl::InternalError(fmt::format("rejected pod {}: {}", uid, Msg(st)));
          }
          queue_.OnClusterEvent(sched::ClusterEvent::kPodDeleted, SimTime(now_us_));
          if (rec.retries < options_.max_admission_retries) {
            ++rec.retries;
            events_.push({now_us_ + options_.admission_retry_delay_us, seq_++,
                          EventKind::kRecreate, pod_index});
          } else {
            rec.failed = true;
            ++report_.admission_failed_pods;
          }
          return absl::OkStatus();
        }
        if (which_ == Scheduler::kNrt) {
          if (absl::Status st = PublishNrt(node_idx); !st.ok()) return st;
        }
      } else if (result.allocation) {
        held = result.allocation->ExclusiveCpus();
      }
      return Place(pod_index, node_idx, held, kubelet_admits() ? std::nullopt : result.allocation);
    }
    case sched::ScheduleResult::Outcome::kUnschedulable:
      rec.last_reasons = std::move(result.reasons);
      queue_.AddFailed(std::move(queued), /*unschedulable=*/true, SimTime(now_us_));
      return absl::OkStatus();
    case sched::ScheduleResult::Outcome::kError:
      ++report_.scheduling_errors;
      if (++rec.scheduling_errors >= options_.max_scheduling_errors_per_pod) {
        return absl::InternalError(fmt::format(
            "{} run: pod {}: {} scheduling attempts ended in an error (the run would retry it "
            "forever); the last: {}",
            report_.scheduler, uid, rec.scheduling_errors, result.message));
      }
      rec.last_reasons = {{result.message, 1}};
      queue_.AddFailed(std::move(queued), /*unschedulable=*/false, SimTime(now_us_));
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

absl::Status Run::CheckAll() const {
  for (const NodeModel& node : nodes_) {
    if (absl::Status st = CheckNode(node); !st.ok()) return st;
  }
  return absl::OkStatus();
}

absl::Status Run::CheckNode(const NodeModel& node) const {
  if (kubelet_admits()) {
    const CpuManagerState& s = *node.kubelet_state;
    CpuSet::Builder seen;
    for (const auto& [uid, containers] : s.assignments) {
      CpuSet pod_cpus;
      for (const auto& [name, cpus] : containers) pod_cpus = pod_cpus.Union(cpus);
      for (int cpu : pod_cpus) {
        if (seen.Contains(cpu)) {
          return absl::InternalError(
              fmt::format("{}: node {}: CPU {} held by two pods", report_.scheduler,
                          node.name, cpu));
        }
      }
      seen.Add(pod_cpus);
      if (s.default_cpu_set.Intersects(pod_cpus)) {
        return absl::InternalError(fmt::format(
            "{}: node {}: pod {} holds CPUs of the shared pool", report_.scheduler, node.name,
            uid));
      }
    }
  } else {
    const sched::NodeInfo* info = cache_.FindNode(node.name);
    if (info == nullptr || info->cpu_state == nullptr) {
      return absl::InternalError(fmt::format("node {} lost its CPU state", node.name));
    }
    std::vector<std::string> problems = info->cpu_state->Validate();
    if (!problems.empty()) {
      return absl::InternalError(
          fmt::format("{}: node {}: {}", report_.scheduler, node.name, problems[0]));
    }
    if (info->cpu_state->ExclusiveCpus().Size() != node.ledger->HeldCpus()) {
      return absl::InternalError(fmt::format(
          "huygens: node {}: the scheduler holds {} exclusive CPUs, the simulator {}",
          node.name, info->cpu_state->ExclusiveCpus().Size(), node.ledger->HeldCpus()));
    }
  }
  return absl::OkStatus();
}

absl::Status Run::Rebalance(bool& moved) {
  moved = false;
  ++report_.rebalance_intervals;
  const RebalanceSettings& settings = *options_.rebalance;
  for (const NodeModel& node : nodes_) {
    const sched::NodeInfo* info = cache_.FindNode(node.name);
    if (info == nullptr || info->cpu_state == nullptr) {
      return absl::InternalError(fmt::format("node {} lost its CPU state", node.name));
    }
    // The node's groups and pinned pods as huygens-scheduler's rebalancer takes them (no system
    // namespaces here), each group's policy from the workload.
    rebalance::NodeGroups node_groups = rebalance::GroupsOfNode(
        cache_, *info, [this](const sched::Pod& pod) {
          return arrivals_[static_cast<size_t>(pod_index_.at(pod.Uid()))].affinity_policy;
        });
    if (node_groups.groups.empty() && !settings.planner.balance) continue;
    const std::vector<rebalance::AffinityGroup>& groups = node_groups.groups;
    const std::set<std::string>& pinned = node_groups.pinned;
    absl::StatusOr<rebalance::Plan> plan =
        rebalance::PlanMoves(*info->cpu_state, groups, pinned, settings.planner);
    if (!plan.ok()) {
      return absl::InternalError(
          fmt::format("{} run: node {}: rebalancer: {}", report_.scheduler, node.name,
                      Msg(plan.status())));
    }
    for (const rebalance::Move& move : plan->moves) {
      const int pod_index = pod_index_.at(move.pod_uid);
      if (absl::Status st = cache_.MovePod(move.pod_uid, move.to); !st.ok()) {
        return absl::InternalError(fmt::format("{} run: node {}: move of pod {} ({}): {}",
                                               report_.scheduler, node.name, move.pod_uid,
                                               move.reason, Msg(st)));
      }
      if (absl::Status st = Rehold(pod_index, move.to.ExclusiveCpus()); !st.ok()) {
        return absl::InternalError(fmt::format("{} run: node {}: move of pod {}: {}",
                                               report_.scheduler, node.name, move.pod_uid,
                                               Msg(st)));
      }
      ++report_.rebalance_moves;
      report_.rebalance_moved_cpus += move.moved_cpus;
    }
    if (!plan->moves.empty()) {
      moved = true;
      if (absl::Status st = CheckNode(node); !st.ok()) return st;
    }
  }
  if (moved) queue_.OnClusterEvent(sched::ClusterEvent::kPodUpdated, SimTime(now_us_));
  return absl::OkStatus();
}

void Run::CountGroupAlignment(TimelineSample& s) const {
  // (group, node) -> members there, their exclusive CPUs, and the one NUMA node they all lie
  // on (-1: not yet known, -2: more than one).
  struct Together {
    int members = 0;
    int cpus = 0;
    int numa = -1;
  };
  std::map<std::pair<int, int>, Together> sets;
  for (int pod_index : aligned_members_) {
    const PodRecord& rec = pods_[static_cast<size_t>(pod_index)];
    if (!rec.running || rec.held.Empty()) continue;
    const NodeModel& node = nodes_[static_cast<size_t>(rec.node)];
    const std::vector<int> numa = node.ledger->Topology().NumaNodesOf(rec.held);
    Together& t = sets[{aligned_group_of_[static_cast<size_t>(pod_index)], rec.node}];
    ++t.members;
    t.cpus += rec.held.Size();
    if (numa.size() != 1 || (t.numa != -1 && t.numa != numa[0])) {
      t.numa = -2;
    } else if (t.numa == -1) {
      t.numa = numa[0];
    }
  }
  for (const auto& [key, t] : sets) {
    // Only members that one NUMA node of their node could hold together can be aligned.
    const NodeModel& node = nodes_[static_cast<size_t>(key.second)];
    const GroupModel& g = groups_[static_cast<size_t>(node.group)];
    if (t.members < 2 || t.cpus > g.largest_numa_user_cpus) continue;
    s.group_members_colocated += t.members;
    if (t.numa >= 0) s.group_members_aligned += t.members;
  }
}

void Run::SnapshotCpuMaps(int64_t t_us) {
  report_.cpu_maps.clear();
  for (int idx : map_nodes_) {
    const NodeModel& node = nodes_[static_cast<size_t>(idx)];
    const GroupModel& g = groups_[static_cast<size_t>(node.group)];
    CpuMap map;
    map.node = node.name;
    map.shape = g.spec->shape;
    map.seconds = static_cast<double>(t_us) / 1e6;
    std::map<int, int> local;  // pod index -> index in map.pods
    for (const CpuInfo& c : g.topology->Cpus()) {
      if (!c.online) continue;
      CpuMap::Cpu cpu{c.id, c.core, c.socket, c.numa, g.user_pool.Contains(c.id), -1};
      const int owner = node.ledger->Owner(c.id);
      if (owner >= 0) {
        auto [it, fresh] = local.emplace(owner, static_cast<int>(map.pods.size()));
        if (fresh) map.pods.push_back(pods_[static_cast<size_t>(owner)].pod->spec.name);
        cpu.pod = it->second;
      }
      map.cpus.push_back(cpu);
    }
    report_.cpu_maps.push_back(std::move(map));
  }
}

void Run::Sample(int64_t t_us) {
  if (sample_interval_us_ <= 0) return;
  while (next_sample_us_ <= t_us) {
    TimelineSample s;
    s.seconds = static_cast<double>(next_sample_us_) / 1e6;
    s.exclusive_utilisation =
        user_cpus_ > 0 ? static_cast<double>(held_) / static_cast<double>(user_cpus_) : 0;
    s.shared_sibling_cores = static_cast<int>(shared_cores_);
    s.fragmented_cpus = static_cast<int>(fragmented_);
    s.running_pods = running_;
    s.pending_pods = static_cast<int>(queue_.Size());
    s.numa_load_spread = spread_nodes_ > 0 ? static_cast<double>(numa_spread_sum_) /
                                                 static_cast<double>(spread_nodes_)
                                           : 0;
    if (!aligned_members_.empty()) CountGroupAlignment(s);
    if (s.exclusive_utilisation > peak_util_) {
      peak_util_ = s.exclusive_utilisation;
      SnapshotCpuMaps(next_sample_us_);
    }
    report_.timeline.push_back(s);
    next_sample_us_ += sample_interval_us_;
    // Simulated time can run far past the workload's span (pods forever pending, backoffs,
    // a workload whose pods all arrive at 0 and never leave: a 1 µs step): keep every other
    // sample and double the step, so the timeline never holds more than 2 x timeline_samples
    // points and sampling costs O(samples), not O(simulated microseconds).
    if (report_.timeline.size() >= 2 * static_cast<size_t>(options_.timeline_samples)) {
      std::vector<TimelineSample> kept;
      kept.reserve(report_.timeline.size() / 2 + 1);
      for (size_t i = 0; i < report_.timeline.size(); i += 2) kept.push_back(report_.timeline[i]);
      report_.timeline = std::move(kept);
      sample_interval_us_ *= 2;
      next_sample_us_ =
          static_cast<int64_t>(std::llround(report_.timeline.back().seconds * 1e6)) +
          sample_interval_us_;
    }
  }
}

absl::StatusOr<RunReport> Run::Go() {
  if (auto st = Prepare(); !st.ok()) return st;
  if (auto st = RunEvents(); !st.ok()) return st;
  if (auto st = CheckAll(); !st.ok()) return st;
  Sample(now_us_);
  report_.simulated_seconds = static_cast<double>(now_us_) / 1e6;
  SummarisePods();
  SummariseTimeline();
  if (options_.progress) options_.progress(1.0);
  return std::move(report_);
}

absl::Status Run::Prepare() {
  report_.scheduler = which_ == Scheduler::kHuygens
                          ? (options_.rebalance ? "huygens+rebalance" : "huygens")
                      : which_ == Scheduler::kNrt ? "nrt"
                                                  : "baseline";
  report_.pods = static_cast<int>(arrivals_.size());
  if (auto st = BuildCluster(); !st.ok()) return st;
  const std::string scheduler_name = scheduler_->profile().scheduler_name;
  pods_.resize(arrivals_.size());
  int64_t end_us = 0;
  for (size_t i = 0; i < arrivals_.size(); ++i) {
    auto pod = std::make_shared<sched::Pod>(arrivals_[i].pod);
    pod->scheduler_name = scheduler_name;
    pods_[i].pod = std::move(pod);
    if (!pod_index_.emplace(arrivals_[i].pod.Uid(), static_cast<int>(i)).second) {
      return absl::InvalidArgumentError(
          fmt::format("workload: two pods have the uid {:?}", arrivals_[i].pod.Uid()));
    }
    end_us = std::max(end_us, arrivals_[i].arrival_us +
                                  std::max<int64_t>(0, arrivals_[i].lifetime_us));
  }
  if (options_.timeline_samples > 0) {
    sample_interval_us_ = std::max<int64_t>(1, end_us / options_.timeline_samples);
  }
  aligned_group_of_.assign(arrivals_.size(), -1);
  std::map<std::string, int> group_ids;
  for (size_t i = 0; i < arrivals_.size(); ++i) {
    const std::string& group = arrivals_[i].pod.spec.affinity_group;
    if (group.empty() || arrivals_[i].affinity_policy == rebalance::GroupPolicy::kSpread) continue;
    aligned_group_of_[i] =
        group_ids.emplace(group, static_cast<int>(group_ids.size())).first->second;
    aligned_members_.push_back(static_cast<int>(i));
  }
  if (!kubelet_admits() && options_.rebalance.has_value()) {
    if (options_.rebalance->interval_us <= 0) {
      return absl::InvalidArgumentError("rebalance: the interval must be positive");
    }
    events_.push({options_.rebalance->interval_us, seq_++, EventKind::kRebalance, -1});
  }
  return absl::OkStatus();
}

absl::Status Run::RunEvents() {
  uint64_t generation_at_idle = UINT64_MAX;
  size_t progress_mark = 0;
  int64_t ignore_wakeups_until = -1;  // a wakeup that found nothing to do is not repeated
  while (true) {
    std::optional<int64_t> t;
    bool from_wakeup = false;
    if (next_arrival_ < arrivals_.size()) t = arrivals_[next_arrival_].arrival_us;
    if (!events_.empty() && (!t || events_.top().t < *t)) t = events_.top().t;
    // Queue wakeups: backoff expiries always; the periodic flush of unschedulable pods only when
    // the cluster changed since they last failed (otherwise they would fail the same way).
    if (auto wake = queue_.NextWakeup()) {
      const bool useful = queue_.BackoffSize() > 0 || cache_.Generation() != generation_at_idle;
      const int64_t wake_us = std::max(now_us_, absl::ToUnixMicros(*wake));
      if (useful && wake_us > ignore_wakeups_until && (!t || wake_us < *t)) {
        t = wake_us;
        from_wakeup = true;
      }
    }
    if (!t) return absl::OkStatus();
    bool acted = false;
    now_us_ = std::max(now_us_, *t);
    Sample(now_us_);
    while (next_arrival_ < arrivals_.size() && arrivals_[next_arrival_].arrival_us <= now_us_) {
      queue_.Add(pods_[next_arrival_].pod, SimTime(now_us_));
      ++next_arrival_;
      acted = true;
    }
    while (!events_.empty() && events_.top().t <= now_us_) {
      const Event e = events_.top();
      events_.pop();
      acted = true;
      if (auto st = HandleEvent(e); !st.ok()) return st;
      if (options_.check_every_event) {
        if (auto st = CheckAll(); !st.ok()) return st;
      }
    }
    while (auto queued = queue_.Pop(SimTime(now_us_))) {
      acted = true;
      if (auto st = Attempt(*std::move(queued)); !st.ok()) return st;
      if (options_.check_every_event) {
        if (auto st = CheckAll(); !st.ok()) return st;
      }
    }
    generation_at_idle = cache_.Generation();
    if (from_wakeup && !acted) ignore_wakeups_until = now_us_;
    if (options_.progress && next_arrival_ >= progress_mark) {
      options_.progress(static_cast<double>(next_arrival_) /
                        static_cast<double>(std::max<size_t>(1, arrivals_.size())));
      progress_mark = next_arrival_ + std::max<size_t>(1, arrivals_.size() / 200);
    }
  }
}

absl::Status Run::HandleEvent(const Event& e) {
  switch (e.kind) {
    case EventKind::kDeparture:
      return Depart(e.pod);
    case EventKind::kResize:
      return Resize(e.pod, e.resize);
    case EventKind::kRebalance:
      return RebalanceRound();
    case EventKind::kRecreate:
      break;
  }
  queue_.Add(pods_[static_cast<size_t>(e.pod)].pod, SimTime(now_us_));  // the pod comes back
  return absl::OkStatus();
}

absl::Status Run::RebalanceRound() {
  bool moved = false;
  if (auto st = Rebalance(moved); !st.ok()) return st;
  // Until nothing else is left to happen and the planner has reached its fixed point.
  const bool busy = next_arrival_ < arrivals_.size() || !events_.empty();
  idle_moving_rounds_ = busy || !moved ? 0 : idle_moving_rounds_ + 1;
  if (idle_moving_rounds_ > kMaxIdleMovingRounds) {
    return absl::InternalError(fmt::format(
        "{} run: the rebalancer still moves pods after {} rounds with nothing else "
        "happening (the planner reaches no fixed point)",
        report_.scheduler, kMaxIdleMovingRounds));
  }
  if (busy || moved) {
    events_.push({now_us_ + options_.rebalance->interval_us, seq_++, EventKind::kRebalance, -1});
  }
  return absl::OkStatus();
}

void Run::SummarisePods() {
  for (const PodRecord& rec : pods_) {
    if (rec.ever_ran || rec.failed) continue;
    ++report_.unschedulable;
    if (rec.last_reasons.empty()) {
      ++report_.unschedulable_reasons["never attempted"];
    }
    for (const auto& [reason, nodes] : rec.last_reasons) ++report_.unschedulable_reasons[reason];
  }
  if (report_.exclusive_pods > 0) {
    report_.single_numa_ratio =
        static_cast<double>(single_numa_) / static_cast<double>(report_.exclusive_pods);
    report_.mean_numa_nodes_per_pod =
        static_cast<double>(numa_sum_) / static_cast<double>(report_.exclusive_pods);
  }
  report_.fits_one_numa_pods = fits_one_numa_;
  if (fits_one_numa_ > 0) {
    report_.fits_one_numa_single_ratio =
        static_cast<double>(fits_one_numa_single_) / static_cast<double>(fits_one_numa_);
  }
  std::sort(latencies_ns_.begin(), latencies_ns_.end());
  report_.p50_micros = Percentile(latencies_ns_, 0.50);
  report_.p90_micros = Percentile(latencies_ns_, 0.90);
  report_.p99_micros = Percentile(latencies_ns_, 0.99);
  report_.max_micros = latencies_ns_.empty() ? 0 : static_cast<double>(latencies_ns_.back()) / 1000.0;
  report_.attempts_per_second =
      total_ns_ > 0 ? static_cast<double>(report_.attempts) * 1e9 / static_cast<double>(total_ns_)
                    : 0;
}

void Run::SummariseTimeline() {
  if (report_.timeline.empty()) return;
  double util = 0, shared = 0, frag = 0, spread = 0;
  int64_t colocated = 0, aligned = 0;
  for (const TimelineSample& s : report_.timeline) {
    util += s.exclusive_utilisation;
    shared += s.shared_sibling_cores;
    frag += s.fragmented_cpus;
    colocated += s.group_members_colocated;
    aligned += s.group_members_aligned;
    spread += s.numa_load_spread;
    report_.exclusive_utilisation_peak =
        std::max(report_.exclusive_utilisation_peak, s.exclusive_utilisation);
    report_.shared_sibling_cores = std::max(report_.shared_sibling_cores, s.shared_sibling_cores);
    report_.fragmented_cpus_peak = std::max(report_.fragmented_cpus_peak, s.fragmented_cpus);
  }
  const auto n = static_cast<double>(report_.timeline.size());
  if (colocated > 0) {
    report_.group_aligned_share = static_cast<double>(aligned) / static_cast<double>(colocated);
  }
  report_.group_members_colocated_mean = static_cast<double>(colocated) / n;
  report_.numa_load_spread_mean = spread / n;
  report_.exclusive_utilisation_mean = util / n;
  report_.shared_sibling_cores_mean = shared / n;
  report_.fragmented_cpus_mean = frag / n;
}

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

absl::StatusOr<RunReport> RunSimulation(const ClusterSpec& cluster,
                                        const std::vector<PodArrival>& arrivals, Scheduler which,
                                        const SimulationOptions& options) {
  SimulationOptions opts = options;
  if (!opts.clock_ns) opts.clock_ns = &SteadyNowNs;
  Run run(cluster, arrivals, which, opts);
  return run.Go();
}

absl::StatusOr<Report> Simulate(const ClusterSpec& cluster, const std::vector<PodArrival>& arrivals,
                                const SimulationOptions& options, bool with_baseline) {
  Report report;
  report.has_baseline = with_baseline;
  for (const NodeGroupSpec& g : cluster.groups) {
    Report::Group rg;
    rg.name = g.name;
    rg.shape = g.shape;
    rg.topology_policy = ToString(g.topology_policy);
    rg.topology_scope = ToString(g.topology_scope);
    if (g.memory_manager) {
      rg.memory_manager = g.memory_manager->static_policy ? "Static" : "None";
      report.memory_modelled = true;
    }
    if (!g.devices.empty()) report.devices_modelled = true;
    rg.count = g.count;
    rg.cpus_per_node = g.topology->NumCpus();
    rg.numa_nodes_per_node = static_cast<int>(g.topology->NumaNodeIdsWithCpus().size());
    report.nodes += g.count;
    report.cpus += int64_t{g.count} * rg.cpus_per_node;
    report.groups.push_back(std::move(rg));
  }
  report.cpu_map_sample_nodes = std::min(options.cpu_map_nodes, report.nodes);
  report.nrt_scoring = sched::ToString(options.nrt_scoring);
  // The columns in run order: huygens, [huygens+rebalance], [nrt, baseline].
  struct Column {
    Scheduler which;
    bool rebalance;
    RunReport* out;
  };
  std::vector<Column> runs = {{Scheduler::kHuygens, false, &report.huygens}};
  if (options.rebalance) {
    report.has_rebalance = true;
    report.rebalance_interval_us = options.rebalance->interval_us;
    report.rebalance_max_moves = options.rebalance->planner.max_moves;
    report.rebalance_balance = options.rebalance->planner.balance;
    runs.push_back({Scheduler::kHuygens, true, &report.huygens_rebalance});
  }
  if (with_baseline) {
    runs.push_back({Scheduler::kNrt, false, &report.nrt});
    runs.push_back({Scheduler::kBaseline, false, &report.baseline});
  }
  report.affinity_figures =
      report.has_rebalance ||
      std::ranges::any_of(arrivals, [](const PodArrival& a) {
        return !a.pod.spec.affinity_group.empty();
      });
  for (size_t i = 0; i < runs.size(); ++i) {
    SimulationOptions run_options = options;
    if (!runs[i].rebalance) run_options.rebalance.reset();
    if (runs[i].rebalance) run_options.explain_pod.clear();
    if (options.progress) {
      const double from = static_cast<double>(i) / static_cast<double>(runs.size());
      const double share = 1.0 / static_cast<double>(runs.size());
      run_options.progress = [&options, from, share](double f) {
        options.progress(from + f * share);
      };
    }
    auto run = RunSimulation(cluster, arrivals, runs[i].which, run_options);
    if (!run.ok()) return run.status();
    *runs[i].out = *std::move(run);
  }
  return report;
}

}  // namespace huygens::sim
