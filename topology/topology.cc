#include "topology/topology.h"

#include <algorithm>
#include <set>
#include <utility>

#include "absl/base/internal/raw_logging.h"
#include "absl/status/status.h"
#include "fmt/format.h"

namespace huygens {
namespace {

// Sorted keys of a unit -> CPUs map.
std::vector<int> Keys(const std::map<int, CpuSet>& m) {
  std::vector<int> out;
  out.reserve(m.size());
  for (const auto& [id, cpus] : m) out.push_back(id);
  return out;
}

CpuSet Lookup(const std::map<int, CpuSet>& m, int id) {
  auto it = m.find(id);
  return it == m.end() ? CpuSet() : it->second;
}

CpuSet LookupAll(const std::map<int, CpuSet>& m, std::span<const int> ids) {
  CpuSet::Builder b;
  for (int id : ids) {
    auto it = m.find(id);
    if (it != m.end()) b.Add(it->second);
  }
  return b.Build();
}

absl::Status CpuError(int cpu, std::string_view what) {
  return absl::InvalidArgumentError(fmt::format("cpu {}: {}", cpu, what));
}

// Checks that every unit of one level (e.g. every core) lies in exactly one unit of an enclosing
// level (e.g. one socket), over the CPUs where both ids are known (>= 0).
absl::Status CheckNested(const std::vector<CpuInfo>& cpus, int CpuInfo::*inner,
                         std::string_view inner_name, int CpuInfo::*outer,
                         std::string_view outer_name) {
  std::map<int, std::pair<int, int>> seen;  // inner id -> (outer id, first cpu)
  for (const CpuInfo& c : cpus) {
    const int in = c.*inner, out = c.*outer;
    if (in < 0 || out < 0) continue;
    auto [it, inserted] = seen.try_emplace(in, out, c.id);
    if (!inserted && it->second.first != out) {
      return CpuError(c.id, fmt::format("{} {} lies in {} {} here but in {} {} at cpu {}",
                                        inner_name, in, outer_name, out, outer_name,
                                        it->second.first, it->second.second));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CpuTopology> CpuTopology::Create(std::vector<CpuInfo> cpus,
                                                std::vector<NumaNode> numa_nodes,
                                                MachineCpus machine) {
  std::sort(cpus.begin(), cpus.end(),
            [](const CpuInfo& a, const CpuInfo& b) { return a.id < b.id; });
  std::sort(numa_nodes.begin(), numa_nodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });

  // NUMA node ids.
  for (size_t i = 0; i < numa_nodes.size(); ++i) {
    const int id = numa_nodes[i].id;
    if (id < 0) {
      return absl::InvalidArgumentError(fmt::format("NUMA node {}: id is negative", id));
    }
    if (i > 0 && numa_nodes[i - 1].id == id) {
      return absl::InvalidArgumentError(fmt::format("NUMA node {}: listed twice", id));
    }
  }
  auto numa_listed = [&](int id) {
    return std::ranges::binary_search(numa_nodes, id, {}, &NumaNode::id);
  };

  // Per-CPU rules.
  std::map<int, CpuSet::Builder> numa_members;
  for (size_t i = 0; i < cpus.size(); ++i) {
    const CpuInfo& c = cpus[i];
    if (c.id < 0 || c.id >= CpuSet::kMaxCpus) {
      return CpuError(c.id, fmt::format("id is outside [0, {})", CpuSet::kMaxCpus));
    }
    if (i > 0 && cpus[i - 1].id == c.id) return CpuError(c.id, "listed twice");
    const std::pair<const char*, int> fields[] = {{"core", c.core},     {"cluster", c.cluster},
                                                  {"die", c.die},       {"socket", c.socket},
                                                  {"NUMA node", c.numa}, {"L3 group", c.l3}};
    for (const auto& [name, value] : fields) {
      if (value < -1) {
        return CpuError(c.id, fmt::format("{} id {} is invalid (want >= 0, or -1 for unknown)",
                                          name, value));
      }
      if (c.online && value < 0) {
        return CpuError(c.id, fmt::format("online CPU has unknown {} (-1)", name));
      }
    }
    if (c.numa >= 0) {
      if (!numa_listed(c.numa)) {
        return CpuError(c.id, fmt::format("NUMA node {} is not listed", c.numa));
      }
      numa_members[c.numa].Add(c.id);
    }
  }

  // Nesting rules.
  struct Nesting {
    int CpuInfo::*inner;
    const char* inner_name;
    int CpuInfo::*outer;
    const char* outer_name;
  };
  const Nesting nestings[] = {
      {&CpuInfo::core, "core", &CpuInfo::socket, "socket"},
      {&CpuInfo::core, "core", &CpuInfo::die, "die"},
      {&CpuInfo::core, "core", &CpuInfo::numa, "NUMA node"},
      {&CpuInfo::core, "core", &CpuInfo::l3, "L3 group"},
      {&CpuInfo::core, "core", &CpuInfo::cluster, "cluster"},
      {&CpuInfo::die, "die", &CpuInfo::socket, "socket"},
  };
  for (const Nesting& n : nestings) {
    if (absl::Status s = CheckNested(cpus, n.inner, n.inner_name, n.outer, n.outer_name);
        !s.ok()) {
      return s;
    }
  }

  // Per-NUMA-node rules.
  for (const NumaNode& node : numa_nodes) {
    auto it = numa_members.find(node.id);
    const CpuSet expected = it == numa_members.end() ? CpuSet() : it->second.Build();
    if (node.cpus != expected) {
      return absl::InvalidArgumentError(fmt::format(
          "NUMA node {}: cpus {:?} differ from the CPUs whose NUMA node is {} ({:?})", node.id,
          node.cpus.ToString(), node.id, expected.ToString()));
    }
    if (node.distances.empty()) continue;
    for (const auto& [to, distance] : node.distances) {
      if (!numa_listed(to)) {
        return absl::InvalidArgumentError(fmt::format(
            "NUMA node {}: distance to NUMA node {} which is not listed", node.id, to));
      }
      if (distance <= 0) {
        return absl::InvalidArgumentError(fmt::format(
            "NUMA node {}: distance {} to NUMA node {} is not positive", node.id, distance, to));
      }
    }
    for (const NumaNode& other : numa_nodes) {
      if (!node.distances.contains(other.id)) {
        return absl::InvalidArgumentError(fmt::format(
            "NUMA node {}: distances lack an entry for NUMA node {}", node.id, other.id));
      }
    }
    const int self = node.distances.at(node.id);
    for (const auto& [to, distance] : node.distances) {
      if (distance < self) {
        return absl::InvalidArgumentError(fmt::format(
            "NUMA node {}: distance {} to NUMA node {} is smaller than the distance {} to "
            "itself",
            node.id, distance, to, self));
      }
    }
  }

  CpuTopology t;
  t.cpus_ = std::move(cpus);
  t.numa_nodes_ = std::move(numa_nodes);
  t.machine_ = std::move(machine);
  CpuSet::Builder all, online;
  std::map<int, CpuSet::Builder> core, socket, numa, l3, cluster, die;
  t.index_of_cpu_.assign(t.cpus_.empty() ? 0 : static_cast<size_t>(t.cpus_.back().id) + 1, -1);
  for (size_t i = 0; i < t.cpus_.size(); ++i) {
    const CpuInfo& c = t.cpus_[i];
    t.index_of_cpu_[static_cast<size_t>(c.id)] = static_cast<int>(i);
    all.Add(c.id);
    if (!c.online) continue;
    online.Add(c.id);
    core[c.core].Add(c.id);
    socket[c.socket].Add(c.id);
    numa[c.numa].Add(c.id);
    l3[c.l3].Add(c.id);
    cluster[c.cluster].Add(c.id);
    die[c.die].Add(c.id);
  }
  t.all_ = all.Build();
  t.online_ = online.Build();
  auto build = [](const std::map<int, CpuSet::Builder>& in, std::map<int, CpuSet>& out) {
    for (const auto& [id, b] : in) out.emplace(id, b.Build());
  };
  build(core, t.core_cpus_);
  build(socket, t.socket_cpus_);
  build(numa, t.numa_cpus_);
  build(l3, t.l3_cpus_);
  build(cluster, t.cluster_cpus_);
  build(die, t.die_cpus_);
  return t;
}

CpuSet CpuTopology::IsolatedCpus() const {
  CpuSet::Builder b;
  for (const CpuInfo& c : cpus_) {
    if (c.isolated) b.Add(c.id);
  }
  return b.Build();
}

int CpuTopology::NumCores() const { return static_cast<int>(core_cpus_.size()); }
int CpuTopology::NumSockets() const { return static_cast<int>(socket_cpus_.size()); }
int CpuTopology::NumL3Groups() const { return static_cast<int>(l3_cpus_.size()); }

int CpuTopology::CpusPerCore() const {
  return core_cpus_.empty() ? 0 : NumCpus() / NumCores();
}
int CpuTopology::CpusPerSocket() const {
  return socket_cpus_.empty() ? 0 : NumCpus() / NumSockets();
}
int CpuTopology::CpusPerNumaNode() const {
  return numa_cpus_.empty() ? 0 : NumCpus() / static_cast<int>(numa_cpus_.size());
}

std::vector<int> CpuTopology::CoreIds() const { return Keys(core_cpus_); }
std::vector<int> CpuTopology::SocketIds() const { return Keys(socket_cpus_); }
std::vector<int> CpuTopology::NumaNodeIdsWithCpus() const { return Keys(numa_cpus_); }
std::vector<int> CpuTopology::L3GroupIds() const { return Keys(l3_cpus_); }
std::vector<int> CpuTopology::NumaNodeIds() const {
  std::vector<int> out;
  out.reserve(numa_nodes_.size());
  for (const NumaNode& n : numa_nodes_) out.push_back(n.id);
  return out;
}

bool CpuTopology::HasCpu(int cpu) const {
  return cpu >= 0 && static_cast<size_t>(cpu) < index_of_cpu_.size() &&
         index_of_cpu_[static_cast<size_t>(cpu)] >= 0;
}

const CpuInfo& CpuTopology::Cpu(int cpu) const {
  ABSL_RAW_CHECK(HasCpu(cpu), "CpuTopology::Cpu: unknown cpu");
  return cpus_[static_cast<size_t>(index_of_cpu_[static_cast<size_t>(cpu)])];
}

CpuSet CpuTopology::SiblingsOf(int cpu) const {
  const CpuInfo& c = Cpu(cpu);
  ABSL_RAW_CHECK(c.online, "CpuTopology::SiblingsOf: offline cpu");
  return Lookup(core_cpus_, c.core);
}

CpuSet CpuTopology::CpusInCore(int core) const { return Lookup(core_cpus_, core); }
CpuSet CpuTopology::CpusInCores(std::span<const int> cores) const {
  return LookupAll(core_cpus_, cores);
}
CpuSet CpuTopology::CpusInSocket(int socket) const { return Lookup(socket_cpus_, socket); }
CpuSet CpuTopology::CpusInSockets(std::span<const int> sockets) const {
  return LookupAll(socket_cpus_, sockets);
}
CpuSet CpuTopology::CpusInNumaNode(int numa) const { return Lookup(numa_cpus_, numa); }
CpuSet CpuTopology::CpusInNumaNodes(std::span<const int> numa_nodes) const {
  return LookupAll(numa_cpus_, numa_nodes);
}
CpuSet CpuTopology::CpusInL3Group(int l3) const { return Lookup(l3_cpus_, l3); }
CpuSet CpuTopology::CpusInCluster(int cluster) const { return Lookup(cluster_cpus_, cluster); }
CpuSet CpuTopology::CpusInDie(int die) const { return Lookup(die_cpus_, die); }

std::vector<int> CpuTopology::UnitsOf(const CpuSet& cpus, int CpuInfo::*unit) const {
  std::set<int> ids;
  for (int cpu : cpus.Intersection(online_)) ids.insert(Cpu(cpu).*unit);
  return std::vector<int>(ids.begin(), ids.end());
}

std::vector<int> CpuTopology::CoresOf(const CpuSet& cpus) const {
  return UnitsOf(cpus, &CpuInfo::core);
}
std::vector<int> CpuTopology::SocketsOf(const CpuSet& cpus) const {
  return UnitsOf(cpus, &CpuInfo::socket);
}
std::vector<int> CpuTopology::NumaNodesOf(const CpuSet& cpus) const {
  return UnitsOf(cpus, &CpuInfo::numa);
}
std::vector<int> CpuTopology::L3GroupsOf(const CpuSet& cpus) const {
  return UnitsOf(cpus, &CpuInfo::l3);
}

std::vector<int> CpuTopology::CoresInNumaNode(int numa) const {
  return CoresOf(CpusInNumaNode(numa));
}
std::vector<int> CpuTopology::CoresInSocket(int socket) const {
  return CoresOf(CpusInSocket(socket));
}
std::vector<int> CpuTopology::SocketsInNumaNode(int numa) const {
  return SocketsOf(CpusInNumaNode(numa));
}
std::vector<int> CpuTopology::NumaNodesInSocket(int socket) const {
  return NumaNodesOf(CpusInSocket(socket));
}
std::vector<int> CpuTopology::L3GroupsInNumaNode(int numa) const {
  return L3GroupsOf(CpusInNumaNode(numa));
}
std::vector<int> CpuTopology::L3GroupsInSocket(int socket) const {
  return L3GroupsOf(CpusInSocket(socket));
}
int CpuTopology::ThreadsPerCore(int core) const { return CpusInCore(core).Size(); }

const NumaNode* CpuTopology::FindNuma(int numa) const {
  auto it = std::lower_bound(numa_nodes_.begin(), numa_nodes_.end(), numa,
                             [](const NumaNode& n, int id) { return n.id < id; });
  return it != numa_nodes_.end() && it->id == numa ? &*it : nullptr;
}

bool CpuTopology::HasNumaNode(int numa) const { return FindNuma(numa) != nullptr; }

const NumaNode& CpuTopology::Numa(int numa) const {
  const NumaNode* n = FindNuma(numa);
  ABSL_RAW_CHECK(n != nullptr, "CpuTopology::Numa: unknown NUMA node");
  return *n;
}

int CpuTopology::Distance(int a, int b) const {
  const NumaNode& from = Numa(a);
  ABSL_RAW_CHECK(HasNumaNode(b), "CpuTopology::Distance: unknown NUMA node");
  auto it = from.distances.find(b);
  if (it != from.distances.end()) return it->second;
  return a == b ? kLocalDistance : kRemoteDistance;
}

bool CpuTopology::HasDistances() const {
  return std::any_of(numa_nodes_.begin(), numa_nodes_.end(),
                     [](const NumaNode& n) { return !n.distances.empty(); });
}

CpuTopology CpuTopology::Restrict(const CpuSet& cpus) const {
  std::vector<CpuInfo> kept;
  for (const CpuInfo& c : cpus_) {
    if (cpus.Contains(c.id)) kept.push_back(c);
  }
  std::vector<NumaNode> nodes = numa_nodes_;
  for (NumaNode& n : nodes) n.cpus = n.cpus.Intersection(cpus);
  MachineCpus machine = machine_;
  machine.possible = machine.possible.Intersection(cpus);
  machine.present = machine.present.Intersection(cpus);
  machine.isolated = machine.isolated.Intersection(cpus);
  machine.nohz_full = machine.nohz_full.Intersection(cpus);
  absl::StatusOr<CpuTopology> t = Create(std::move(kept), std::move(nodes), std::move(machine));
  // A subset of a valid topology satisfies every invariant.
  ABSL_RAW_CHECK(t.ok(), "CpuTopology::Restrict produced an invalid topology");
  return *std::move(t);
}

std::string HugepageResourceName(uint64_t page_size_bytes) {
  static constexpr const char* kSuffix[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  int unit = 0;
  while (page_size_bytes != 0 && page_size_bytes % 1024 == 0 && unit < 6) {
    page_size_bytes /= 1024;
    ++unit;
  }
  return fmt::format("hugepages-{}{}", page_size_bytes, kSuffix[unit]);
}

}  // namespace huygens
