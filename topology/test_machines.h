// Named, hand-built machines for tests (topology and the layers above).
//
// Each function returns a valid CpuTopology (built through CpuTopology::Create; a broken
// machine aborts). Ids follow the conventions of topology.h: core, socket and L3 ids unique
// machine-wide, cluster == core and die == socket unless stated.
//
// Thread-safety: free functions without shared state.
#ifndef HUYGENS_TOPOLOGY_TEST_MACHINES_H_
#define HUYGENS_TOPOLOGY_TEST_MACHINES_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <vector>

#include "topology/topology.h"

namespace huygens::test_machines {

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

}  // namespace huygens::test_machines

#endif  // HUYGENS_TOPOLOGY_TEST_MACHINES_H_
