// Named test machines: synthetic CpuTopology values for tests and benchmarks.
//
// What it is: the one set of named test machines. A builder (MachineSpec -> CpuTopology,
// through CpuTopology::Create) and named regular machines in the spirit of kubelet's cpumanager
// test topologies (inline, below), and hand-built irregular machines (memory-only nodes,
// offline CPUs without topology, machine masks; machines.cc, "Hand-built machines"). Shapes are
// regular: sockets x NUMA nodes per socket x cores per NUMA node x threads per core, with
// optional L3 groups smaller than a NUMA node, two numbering schemes for SMT siblings, sparse
// NUMA ids, offline CPUs and a NUMA distance table (10 local, 12 same socket, 32 remote).
//
// Numbering (documented so that expected results in tests can be reasoned about):
//   - cores are numbered machine-wide, socket-major then NUMA-major: core k of NUMA node n of
//     socket s is core ((s * numa_per_socket + n) * cores_per_numa + k);
//   - SiblingNumbering::kSplit (Intel/Linux default, "siblings N/2 apart"): thread t of core c
//     is CPU c + t * NumCores, so CPUs 0..NumCores-1 are the first threads;
//   - SiblingNumbering::kAdjacent (many AMD/ARM machines, "siblings adjacent"): thread t of core
//     c is CPU c * threads_per_core + t;
//   - L3 group of core c is c / cores_per_l3 (cores_per_l3 = 0: one L3 group per NUMA node);
//   - sockets are 0..sockets-1; NUMA node ids are numa_ids[i] for the i-th NUMA node in
//     socket-major order (default 0, 1, 2, ...).
// Offline CPUs keep their place in the numbering but are marked offline with unknown (-1)
// topology, as sysfs reports them.
//
// Thread-safety: plain functions over values.
#ifndef HUYGENS_TOPOLOGY_TESTING_MACHINES_H_
#define HUYGENS_TOPOLOGY_TESTING_MACHINES_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/base/internal/raw_logging.h"
#include "cpuset/cpuset.h"
#include "topology/topology.h"

namespace huygens::testing {

enum class SiblingNumbering {
  kSplit,     // thread t of core c is CPU c + t * NumCores ("siblings N/2 apart")
  kAdjacent,  // thread t of core c is CPU c * threads_per_core + t ("siblings adjacent")
};

struct MachineSpec {
  int sockets = 1;
  int numa_per_socket = 1;
  int cores_per_numa = 4;
  int threads_per_core = 2;
  // Cores per L3 group; 0 means one L3 group per NUMA node. Must divide cores_per_numa.
  int cores_per_l3 = 0;
  SiblingNumbering numbering = SiblingNumbering::kSplit;
  // NUMA node ids in socket-major order; empty means 0, 1, 2, ...
  std::vector<int> numa_ids;
  // CPUs (by id in the numbering above) that are offline.
  CpuSet offline;
  uint64_t memory_per_numa_bytes = uint64_t{64} << 30;
  bool with_distances = true;
};

// Builds the machine. Aborts on an invalid spec (a test-authoring error).
inline CpuTopology BuildMachine(const MachineSpec& spec) {
  ABSL_RAW_CHECK(spec.sockets > 0 && spec.numa_per_socket > 0 && spec.cores_per_numa > 0 &&
                     spec.threads_per_core > 0,
                 "BuildMachine: every count must be positive");
  const int cores_per_l3 = spec.cores_per_l3 == 0 ? spec.cores_per_numa : spec.cores_per_l3;
  ABSL_RAW_CHECK(spec.cores_per_numa % cores_per_l3 == 0,
                 "BuildMachine: cores_per_l3 must divide cores_per_numa");
  const int num_numa = spec.sockets * spec.numa_per_socket;
  ABSL_RAW_CHECK(spec.numa_ids.empty() || static_cast<int>(spec.numa_ids.size()) == num_numa,
                 "BuildMachine: numa_ids must name every NUMA node");
  const int num_cores = num_numa * spec.cores_per_numa;
  auto numa_id = [&](int index) {
    return spec.numa_ids.empty() ? index : spec.numa_ids[static_cast<size_t>(index)];
  };

  std::vector<CpuInfo> cpus;
  std::vector<CpuSet::Builder> numa_cpus(static_cast<size_t>(num_numa));
  for (int core = 0; core < num_cores; ++core) {
    const int numa_index = core / spec.cores_per_numa;
    const int socket = numa_index / spec.numa_per_socket;
    for (int t = 0; t < spec.threads_per_core; ++t) {
      CpuInfo c;
      c.id = spec.numbering == SiblingNumbering::kSplit ? core + t * num_cores
                                                        : core * spec.threads_per_core + t;
      if (spec.offline.Contains(c.id)) {
        c.online = false;  // sysfs gives an offline CPU no topology
      } else {
        c.core = core;
        c.cluster = core;
        c.die = socket;
        c.socket = socket;
        c.numa = numa_id(numa_index);
        c.l3 = core / cores_per_l3;
        numa_cpus[static_cast<size_t>(numa_index)].Add(c.id);
      }
      cpus.push_back(c);
    }
  }
  std::vector<NumaNode> nodes;
  for (int i = 0; i < num_numa; ++i) {
    NumaNode node;
    node.id = numa_id(i);
    node.cpus = numa_cpus[static_cast<size_t>(i)].Build();
    node.memory_bytes = spec.memory_per_numa_bytes;
    if (spec.with_distances) {
      for (int j = 0; j < num_numa; ++j) {
        const bool same_socket = i / spec.numa_per_socket == j / spec.numa_per_socket;
        node.distances[numa_id(j)] = i == j ? 10 : (same_socket ? 12 : 32);
      }
    }
    nodes.push_back(std::move(node));
  }
  std::sort(cpus.begin(), cpus.end(),
            [](const CpuInfo& a, const CpuInfo& b) { return a.id < b.id; });
  std::sort(nodes.begin(), nodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  MachineCpus machine;
  machine.possible = CpuSet::Range(0, static_cast<int>(cpus.size()) - 1);
  machine.present = machine.possible;
  absl::StatusOr<CpuTopology> topo =
      CpuTopology::Create(std::move(cpus), std::move(nodes), std::move(machine));
  if (!topo.ok()) {
    ABSL_RAW_LOG(FATAL, "BuildMachine: %s", std::string(topo.status().message()).c_str());
  }
  return *std::move(topo);
}

// ---- Named machines ------------------------------------------------------------------------

// 1 socket, 1 NUMA node, 4 cores, 2 threads: CPUs 0-7, siblings n / n+4 (kubelet's
// topoSingleSocketHT).
inline CpuTopology SingleSocketHT() { return BuildMachine({}); }

// 1 socket, 1 NUMA node, 8 cores, no SMT: CPUs 0-7.
inline CpuTopology SingleSocketNoHT() {
  return BuildMachine({.cores_per_numa = 8, .threads_per_core = 1});
}

// 2 sockets x 6 cores x 2 threads = 24 CPUs, one NUMA node per socket; socket 0 holds CPUs
// 0-5,12-17, socket 1 holds 6-11,18-23; siblings n / n+12.
inline CpuTopology DualSocketHT() {
  return BuildMachine({.sockets = 2, .cores_per_numa = 6});
}

// DualSocketHT with siblings adjacent: core c is CPUs 2c, 2c+1; socket 0 holds 0-11.
inline CpuTopology DualSocketHTAdjacent() {
  return BuildMachine(
      {.sockets = 2, .cores_per_numa = 6, .numbering = SiblingNumbering::kAdjacent});
}

// 2 sockets x 6 cores, no SMT: socket 0 holds CPUs 0-5, socket 1 holds 6-11.
inline CpuTopology DualSocketNoHT() {
  return BuildMachine({.sockets = 2, .cores_per_numa = 6, .threads_per_core = 1});
}

// 2 sockets x 2 NUMA nodes x 4 cores x 2 threads = 32 CPUs; NUMA node n holds cores 4n..4n+3,
// i.e. CPUs 4n..4n+3 and 16+4n..16+4n+3; sockets hold NUMA nodes {0,1} and {2,3}.
inline CpuTopology DualSocketMultiNumaPerSocketHT() {
  return BuildMachine({.sockets = 2, .numa_per_socket = 2, .cores_per_numa = 4});
}

// 1 NUMA node spanning 2 sockets (NUMA node larger than a socket): kubelet then takes whole
// NUMA nodes before whole sockets. 2 sockets x 4 cores x 2 threads = 16 CPUs, all in NUMA 0.
// Built by hand since BuildMachine nests NUMA nodes inside sockets.
inline CpuTopology DualSocketOneNumaHT() {
  std::vector<CpuInfo> cpus;
  for (int cpu = 0; cpu < 16; ++cpu) {
    const int core = cpu % 8;
    const int socket = core / 4;
    cpus.push_back(CpuInfo{.id = cpu, .core = core, .cluster = core, .die = socket,
                           .socket = socket, .numa = 0, .l3 = socket});
  }
  NumaNode node{.id = 0, .cpus = CpuSet::Range(0, 15), .memory_bytes = uint64_t{64} << 30};
  absl::StatusOr<CpuTopology> topo = CpuTopology::Create(std::move(cpus), {node});
  ABSL_RAW_CHECK(topo.ok(), "DualSocketOneNumaHT");
  return *std::move(topo);
}

// 4 sockets x 2 NUMA nodes x 4 cores x 2 threads = 64 CPUs (8 NUMA nodes).
inline CpuTopology QuadSocket4NumaSMT() {
  return BuildMachine({.sockets = 4, .numa_per_socket = 2, .cores_per_numa = 4});
}

// EPYC-like: 2 sockets x 2 NUMA nodes x 16 cores x 2 threads = 128 CPUs, 8 cores per L3
// group (2 L3 groups per NUMA node, 8 in total), siblings adjacent as on AMD machines.
inline CpuTopology EpycLikeSplitL3() {
  return BuildMachine({.sockets = 2,
                       .numa_per_socket = 2,
                       .cores_per_numa = 16,
                       .cores_per_l3 = 8,
                       .numbering = SiblingNumbering::kAdjacent});
}

// 1 socket, 1 NUMA node, 16 cores x 2 threads, 4 cores per L3 group (4 L3 groups); split
// numbering: L3 group g holds cores 4g..4g+3, CPUs 4g..4g+3 and 16+4g..16+4g+3.
inline CpuTopology SingleSocketFourL3() {
  return BuildMachine({.cores_per_numa = 16, .cores_per_l3 = 4});
}

// DualSocketMultiNumaPerSocketHT with sparse NUMA ids 0, 1, 4, 5.
inline CpuTopology SparseNumaIds() {
  return BuildMachine(
      {.sockets = 2, .numa_per_socket = 2, .cores_per_numa = 4, .numa_ids = {0, 1, 4, 5}});
}

// DualSocketHT with CPUs 5 and 17 (both threads of core 5) and 18 (thread of core 6) offline.
inline CpuTopology DualSocketHTWithOffline() {
  return BuildMachine({.sockets = 2, .cores_per_numa = 6, .offline = CpuSet{5, 17, 18}});
}

// Large machines for benchmarks: 2 sockets x 4 NUMA nodes x `cores_per_numa` cores x 2
// threads (48 cores per NUMA node gives 768 CPUs, 24 gives 384), 8 cores per L3 group.
inline CpuTopology LargeMachine(int cores_per_numa) {
  return BuildMachine(
      {.sockets = 2, .numa_per_socket = 4, .cores_per_numa = cores_per_numa, .cores_per_l3 = 8});
}

// ---- Hand-built machines (machines.cc) -----------------------------------------------------
// Each returns a valid CpuTopology (built through CpuTopology::Create; a broken machine aborts).
// Ids follow the conventions of topology.h: core, socket and L3 ids unique machine-wide,
// cluster == core and die == socket unless stated.


// An online CPU whose cluster is its core and whose die is its socket.
CpuInfo Online(int id, int core, int socket, int numa, int l3);

// An offline CPU without a topology/ directory: every id unknown (-1).
CpuInfo Offline(int id);

// A NUMA node without hugepages.
NumaNode Node(int id, CpuSet cpus, uint64_t memory_bytes = 0,
              std::map<int, int> distances = {});

// One socket, four cores, no SMT, one NUMA node (8 GiB), one L3 group.
CpuTopology OneSocketNoSmt();

// Two sockets of four 2-thread cores, Linux numbering: siblings are n and n + 8. One NUMA node
// (16 GiB; 512 2 MiB hugepages, and two 1 GiB ones on node 0) and one L3 group per socket;
// SLIT 10/21. CPUs 0-3,8-11 are socket 0 (cores 0-3), 4-7,12-15 socket 1 (cores 4-7).
CpuTopology TwoSocketsSmt();

// One socket, 8 cores without SMT split into four NUMA nodes with sparse ids 0,1,4,5 (two cores
// each, like an NPS4 part; 1 GiB each, distance 12 between them); two L3 groups (CPUs 0-3 and
// 4-7), each spanning two NUMA nodes; and a memory-only node 250 (64 GiB of CXL memory, distance
// 30 from every other node) with no CPUs.
CpuTopology SparseNumaWithMemoryOnlyNode();

// One socket, two 2-thread cores (siblings adjacent: 0,1 and 2,3; NUMA node 0 without memory
// or distances), CPUs 4 and 5 offline with no topology; CPU 2 isolated. Machine masks: possible
// 0-7, present 0-5, isolated 2, nohz_full 2-3, isolcpus flags ["domain"].
CpuTopology OfflineCpusAdjacentSiblings();

// Every named machine above plus the empty topology, for tests parameterised over machines.
struct NamedMachine {
  const char* name;
  CpuTopology (*make)();
};
std::vector<NamedMachine> AllNamed();
// Prints the machine's name (gtest parameter printing).
void PrintTo(const NamedMachine& m, std::ostream* os);

}  // namespace huygens::testing

#endif  // HUYGENS_TOPOLOGY_TESTING_MACHINES_H_
