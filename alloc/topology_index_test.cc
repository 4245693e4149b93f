#include "alloc/topology_index.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

using testing::BuildMachine;
using testing::MachineSpec;
using testing::SiblingNumbering;

// ToLocalBits' definition, one member at a time.
std::vector<uint64_t> LocalBitsOneByOne(const TopologyIndex& index, const CpuSet& cpus) {
  std::vector<uint64_t> out(index.LocalWords(), 0);
  for (int cpu : cpus) {
    const int local = index.LocalOf(cpu);
    if (local >= 0) out[static_cast<size_t>(local) >> 6] |= uint64_t{1} << (local & 63);
  }
  return out;
}

std::vector<uint64_t> LocalBits(const TopologyIndex& index, const CpuSet& cpus) {
  std::vector<uint64_t> out(index.LocalWords(), ~uint64_t{0});  // overwritten, not ORed into
  index.ToLocalBits(cpus, out);
  return out;
}

struct MachineCase {
  std::string name;
  CpuTopology topo;
};

// Machines whose id -> local index runs have every stride ToLocalBits moves word-wise (1 with
// adjacent siblings, 2, 4 and 8 with split siblings), a stride it cannot (3 threads), offline
// holes, sparse NUMA ids, and runs crossing 64-bit words at odd offsets.
std::vector<MachineCase> Machines() {
  return {
      {"split siblings, 2 threads", testing::DualSocketHT()},
      {"adjacent siblings", testing::DualSocketHTAdjacent()},
      {"no SMT", testing::DualSocketNoHT()},
      {"offline CPUs", testing::DualSocketHTWithOffline()},
      {"sparse NUMA ids", testing::SparseNumaIds()},
      {"split L3 groups, adjacent", testing::EpycLikeSplitL3()},
      {"768 CPUs, split", testing::LargeMachine(48)},
      {"split siblings, 4 threads",
       BuildMachine({.sockets = 2, .numa_per_socket = 2, .cores_per_numa = 9,
                     .threads_per_core = 4})},
      {"split siblings, 8 threads",
       BuildMachine({.sockets = 1, .numa_per_socket = 3, .cores_per_numa = 7,
                     .threads_per_core = 8})},
      {"split siblings, 3 threads (no word-wise stride)",
       BuildMachine({.sockets = 2, .cores_per_numa = 11, .threads_per_core = 3})},
      {"adjacent siblings, 4 threads, offline CPUs",
       BuildMachine({.sockets = 2, .numa_per_socket = 2, .cores_per_numa = 13,
                     .threads_per_core = 4, .numbering = SiblingNumbering::kAdjacent,
                     .offline = CpuSet({0, 7, 64, 65, 130, 207})})},
  };
}

TEST(TopologyIndexToLocalBits, MapsEveryOnlineMemberToItsLocalIndexAndDropsTheRest) {
  std::mt19937 rng(7);
  for (const MachineCase& m : Machines()) {
    SCOPED_TRACE(m.name);
    const TopologyIndex index(m.topo);
    const int max_id = m.topo.AllCpus().Max();
    std::vector<CpuSet> sets = {CpuSet(), m.topo.AllCpus(), m.topo.OnlineCpus(),
                                m.topo.OfflineCpus(), CpuSet::Range(0, max_id + 70),
                                CpuSet({max_id + 1, CpuSet::kMaxCpus - 1})};
    for (int round = 0; round < 50; ++round) {
      CpuSet::Builder b;
      const unsigned density = 1 + rng() % 8;  // from 1/8 to all of the CPUs
      for (int cpu = 0; cpu <= max_id + 64; ++cpu) {
        if (rng() % 8 < density) b.Add(cpu);
      }
      sets.push_back(b.Build());
    }
    for (const CpuSet& cpus : sets) {
      EXPECT_EQ(LocalBits(index, cpus), LocalBitsOneByOne(index, cpus)) << cpus;
    }
  }
}

}  // namespace
}  // namespace huygens
