// CpuTopology: a faithful, flat model of one machine's CPUs and NUMA nodes.
//
// What it is: per logical CPU, the core, cluster, die, socket, NUMA node and L3 group it belongs
// to, whether it is online and whether it is isolated; per NUMA node, its CPUs (possibly none),
// memory, hugepages and distances; and machine-level CPU masks (possible, present, isolated,
// nohz_full). Queries follow kubelet's CPUDetails style (`CpusInNumaNodes`, `CoresInSocket`,
// ...). The model is built by discovery (topology/discovery), by the JSON reader
// (topology/json.h) or by hand in tests, always through CpuTopology::Create, which validates it.
//
// Ids: CPU ids are the kernel's logical CPU numbers. NUMA node ids are the kernel's node
// numbers and may be sparse (0,1,4,5 or 250-255). Core, cluster, die, socket and L3-group ids
// are unique machine-wide (a core id is NOT sysfs core_id, which repeats per socket); discovery
// numbers them densely from 0 in order of their smallest CPU. An id of -1 means "unknown" and is
// allowed only for offline CPUs (an offline CPU has no topology/ directory in sysfs).
//
// Invariants (checked by Create):
//   - CPU ids are unique and in [0, CpuSet::kMaxCpus); NUMA node ids are unique and >= 0;
//   - every unit id is >= -1;
//   - every online CPU has core, socket, die, NUMA node and L3 group >= 0 and its NUMA node is
//     listed in numa_nodes (so is the NUMA node of an offline CPU, when known); cluster is >= 0
//     (equal to the core id when the machine has no cluster level);
//   - a core lies in one socket, one die, one NUMA node, one L3 group and one cluster; a die
//     lies in one socket (where both ids are known). An L3 group MAY span NUMA nodes (NPS4/SNC
//     parts) and sockets: kubelet takes machines without L3 information (uncore id 0 on every
//     CPU of every socket, as its own test machines have), one L3 group over all sockets;
//   - NumaNode::cpus equals the set of known CPUs whose `numa` is that node;
//   - NumaNode::distances, when non-empty, has an entry for every
//     listed NUMA node and none for unlisted ones, every distance is positive, and the distance
//     from a node to itself is the smallest in its row (ties allowed).
//
// Thread-safety: immutable after Create; any number of threads may query it.
#ifndef HUYGENS_TOPOLOGY_TOPOLOGY_H_
#define HUYGENS_TOPOLOGY_TOPOLOGY_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cpuset/cpuset.h"

namespace huygens {

// One logical CPU.
struct CpuInfo {
  int id = 0;
  int core = -1;     // machine-wide core id; SMT siblings share it
  int cluster = -1;  // machine-wide cluster id (ARM/E-core group); == core when no cluster level
  int die = -1;      // machine-wide die id; == socket when the machine reports no dies
  int socket = -1;   // machine-wide socket (package) id
  int numa = -1;     // kernel NUMA node id (the sysfs node directory that lists this CPU)
  int l3 = -1;       // machine-wide L3 group id (CPUs sharing one L3 / uncore cache)
  bool online = true;
  bool isolated = false;  // in the kernel's isolated set (isolcpus= / sysfs cpu/isolated)

  friend bool operator==(const CpuInfo&, const CpuInfo&) = default;
};

// One NUMA node. A node may have memory and no CPUs (CXL, HBM, GPU memory) or CPUs and no
// memory (fakememinitiators); both are kept.
struct NumaNode {
  int id = 0;
  CpuSet cpus;                 // known CPUs of this node, online or not
  uint64_t memory_bytes = 0;   // MemTotal of the node
  // Hugepages by page size: page size in bytes -> number of pages configured.
  std::map<uint64_t, uint64_t> hugepages;
  // ACPI SLIT distances: NUMA node id -> distance (10 = local). Empty when unknown.
  std::map<int, int> distances;

  friend bool operator==(const NumaNode&, const NumaNode&) = default;
};

// Machine-level CPU masks (sysfs /sys/devices/system/cpu/{possible,present,online,isolated,
// nohz_full} and the kernel command line).
struct MachineCpus {
  CpuSet possible;
  CpuSet present;
  CpuSet isolated;       // union of sysfs `isolated` and the domain CPUs of isolcpus=
  CpuSet nohz_full;
  // isolcpus= flag words as given on the kernel command line ("domain", "managed_irq",
  // "nohz"), in order; empty when isolcpus= is absent or has no flags.
  std::vector<std::string> isolcpus_flags;

  friend bool operator==(const MachineCpus&, const MachineCpus&) = default;
};

class CpuTopology {
 public:
  // An empty topology (no CPUs, no NUMA nodes).
  CpuTopology() = default;

  // Validates and indexes a topology. `cpus` may come in any order; `numa_nodes` likewise.
  // Errors: InvalidArgument naming the CPU or NUMA node and the broken invariant (see the file
  // comment), e.g. "cpu 5: NUMA node 3 is not listed".
  static absl::StatusOr<CpuTopology> Create(std::vector<CpuInfo> cpus,
                                            std::vector<NumaNode> numa_nodes,
                                            MachineCpus machine = {});

  // ---- Whole machine -------------------------------------------------------------------
  const std::vector<CpuInfo>& Cpus() const { return cpus_; }     // ascending by id
  const std::vector<NumaNode>& NumaNodes() const { return numa_nodes_; }  // ascending by id
  const MachineCpus& Machine() const { return machine_; }

  CpuSet AllCpus() const { return all_; }         // every known CPU, online or not
  CpuSet OnlineCpus() const { return online_; }
  CpuSet OfflineCpus() const { return all_.Difference(online_); }
  CpuSet IsolatedCpus() const;                    // known CPUs marked isolated

  // Counts over online CPUs only (what an allocator can use), like kubelet's CPUTopology.
  int NumCpus() const { return online_.Size(); }
  int NumCores() const;
  int NumSockets() const;
  int NumNumaNodes() const { return static_cast<int>(numa_nodes_.size()); }  // incl. CPU-less
  int NumL3Groups() const;
  // Threads per core as kubelet computes it: NumCpus() / NumCores() (1 without SMT). Hybrid
  // machines mix 2-thread and 1-thread cores; use ThreadsPerCore(core) there.
  int CpusPerCore() const;
  int CpusPerSocket() const;   // NumCpus() / NumSockets()
  int CpusPerNumaNode() const; // NumCpus() / number of NUMA nodes with online CPUs

  // Sorted id lists over online CPUs.
  std::vector<int> CoreIds() const;
  std::vector<int> SocketIds() const;
  std::vector<int> NumaNodeIds() const;            // all NUMA nodes, with or without CPUs
  std::vector<int> NumaNodeIdsWithCpus() const;    // nodes with at least one online CPU
  std::vector<int> L3GroupIds() const;

  // ---- One CPU ----------------------------------------------------------------------------
  bool HasCpu(int cpu) const;
  // REQUIRES: HasCpu(cpu).
  const CpuInfo& Cpu(int cpu) const;
  // Online CPUs of the same core, including `cpu` itself. REQUIRES: HasCpu(cpu) and online.
  CpuSet SiblingsOf(int cpu) const;

  // ---- Membership queries (online CPUs only; ids not present give empty results) ----------
  CpuSet CpusInCore(int core) const;
  CpuSet CpusInCores(std::span<const int> cores) const;
  CpuSet CpusInSocket(int socket) const;
  CpuSet CpusInSockets(std::span<const int> sockets) const;
  CpuSet CpusInNumaNode(int numa) const;
  CpuSet CpusInNumaNodes(std::span<const int> numa_nodes) const;
  CpuSet CpusInL3Group(int l3) const;
  CpuSet CpusInCluster(int cluster) const;
  CpuSet CpusInDie(int die) const;

  // Ids (sorted, unique) of the units that hold at least one CPU of `cpus`.
  std::vector<int> CoresOf(const CpuSet& cpus) const;
  std::vector<int> SocketsOf(const CpuSet& cpus) const;
  std::vector<int> NumaNodesOf(const CpuSet& cpus) const;
  std::vector<int> L3GroupsOf(const CpuSet& cpus) const;

  std::vector<int> CoresInNumaNode(int numa) const;
  std::vector<int> CoresInSocket(int socket) const;
  std::vector<int> SocketsInNumaNode(int numa) const;   // usually one; NUMA may span sockets
  std::vector<int> NumaNodesInSocket(int socket) const;
  std::vector<int> L3GroupsInNumaNode(int numa) const;
  std::vector<int> L3GroupsInSocket(int socket) const;
  int ThreadsPerCore(int core) const;  // online CPUs of the core

  // ---- NUMA -----------------------------------------------------------------------------
  bool HasNumaNode(int numa) const;
  // REQUIRES: HasNumaNode(numa).
  const NumaNode& Numa(int numa) const;
  // The kernel's default distances when the firmware gives no SLIT table.
  static constexpr int kLocalDistance = 10;
  static constexpr int kRemoteDistance = 20;

  // ACPI distance from a to b. Without a distance table for `a`: kLocalDistance when a == b,
  // else kRemoteDistance (the kernel's defaults). REQUIRES: both nodes exist.
  int Distance(int a, int b) const;
  // True when at least one NUMA node carries a distance table.
  bool HasDistances() const;

  // ---- Derived topologies -------------------------------------------------------------------
  // The same machine with only `cpus` known (others removed entirely, also from the machine
  // masks possible/present/isolated/nohz_full); NUMA nodes (now possibly CPU-less), memory,
  // hugepages, distances, unit ids and isolcpus flags are kept unchanged. Used to model a pool
  // (e.g. the user pool) as a machine of its own.
  CpuTopology Restrict(const CpuSet& cpus) const;

  friend bool operator==(const CpuTopology& a, const CpuTopology& b) {
    return a.cpus_ == b.cpus_ && a.numa_nodes_ == b.numa_nodes_ && a.machine_ == b.machine_;
  }

 private:
  std::vector<int> UnitsOf(const CpuSet& cpus, int CpuInfo::*unit) const;
  const NumaNode* FindNuma(int numa) const;  // nullptr when absent

  std::vector<CpuInfo> cpus_;
  std::vector<NumaNode> numa_nodes_;
  MachineCpus machine_;
  // Indexes, derived in Create.
  CpuSet all_, online_;
  std::vector<int> index_of_cpu_;  // cpu id -> index in cpus_, -1 when absent
  std::map<int, CpuSet> core_cpus_, socket_cpus_, numa_cpus_, l3_cpus_, cluster_cpus_,
      die_cpus_;  // online CPUs per unit
};

// Kubernetes' resource name for regular memory, as kubelet's memory manager and the
// NodeResourceTopology zones spell it.
inline constexpr char kMemoryResource[] = "memory";

// Kubernetes' resource name for a hugepage size in bytes: "hugepages-" + the size as a
// canonical binary-SI quantity (2 MiB -> "hugepages-2Mi", 1 GiB -> "hugepages-1Gi", 64 KiB ->
// "hugepages-64Ki", 1536 KiB -> "hugepages-1536Ki"), as kubelet names NumaNode::hugepages sizes.
// REQUIRES: page_size_bytes > 0.
std::string HugepageResourceName(uint64_t page_size_bytes);

}  // namespace huygens

#endif  // HUYGENS_TOPOLOGY_TOPOLOGY_H_
