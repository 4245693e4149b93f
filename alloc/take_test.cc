// Tests for alloc/take.h. Expected cpusets are reasoned from kubelet's documented algorithm
// (cpu_assignment.go, 1.34): whole NUMA nodes / sockets (larger unit first), then whole cores,
// then single threads; every order is "fewest free CPUs first, then lowest id". The machines
// and their numbering are described in topology/testing/machines.h.
#include "alloc/take.h"

#include <cctype>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

using ::huygens::testing::BuildMachine;
using ::huygens::testing::MachineSpec;

CpuSet Cpus(const char* list) { return *CpuSet::Parse(list); }

std::string TestName(const std::string& sentence) {
  std::string name;
  for (char c : sentence) {
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  }
  return name;
}

struct TakeCase {
  std::string name;
  std::function<CpuTopology()> machine;
  const char* available;
  int num_cpus;
  TakeOptions options;
  const char* expected;  // nullptr: an error is expected
};

class TakeByTopologyTest : public ::testing::TestWithParam<TakeCase> {};

TEST_P(TakeByTopologyTest, GivesKubeletsChoice) {
  const TakeCase& c = GetParam();
  const CpuTopology topo = c.machine();
  absl::StatusOr<CpuSet> got = TakeByTopology(topo, Cpus(c.available), c.num_cpus, c.options);
  if (c.expected == nullptr) {
    EXPECT_FALSE(got.ok()) << *got;
    return;
  }
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, Cpus(c.expected));
}

const TakeOptions kSpread{.cpu_sorting_strategy = CpuSortingStrategy::kSpread};
const TakeOptions kUncore{.prefer_align_by_uncore_cache = true};
// kubelet v1.35.4 exactly on machines with cores of different sizes (see take.h).
const TakeOptions kWhole{.whole_units_by_average_size = true};
const TakeOptions kWholeUncore{.prefer_align_by_uncore_cache = true,
                               .whole_units_by_average_size = true};

// Shaped like the hybrid fixture 20em64t-hybrid-1p6c2t+2ca4co1t (6 cores of 2 threads, 8 of 1;
// one socket, NUMA node and L3 group): BuildMachine's 14 cores x 2 threads with the second
// threads of cores 6-13 (CPUs 20-27) offline. Core c < 6 holds CPUs c and c + 14; core c >= 6
// holds CPU c. 20 CPUs on 14 cores make kubelet's CPUsPerCore() 20 / 14 = 1.
CpuTopology HybridLike() {
  return BuildMachine({.cores_per_numa = 14, .offline = CpuSet::Range(20, 27)});
}

// Shaped like kubelet's test machine topoDualSocketMultiNumaPerSocketHT grown to 8 NUMA nodes
// (the oracle's kubelet-shaped 2s4n6c2t): 2 sockets x 4 NUMA nodes x 6 cores x 2 threads = 96
// CPUs; NUMA node n holds cores 6n..6n+5, i.e. CPUs 6n..6n+5 and 48+6n..48+6n+5.
CpuTopology TwoSocketsEightNuma() {
  return BuildMachine({.sockets = 2, .numa_per_socket = 4, .cores_per_numa = 6});
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TakeByTopologyTest,
    ::testing::Values(
        // ---- SingleSocketHT: CPUs 0-7, core c = {c, c+4}.
        TakeCase{"takes the lowest whole core first", testing::SingleSocketHT, "0-7", 2, {},
                 "0,4"},
        // One whole core (0,4), then one thread: all other cores have 2 free, so core 1's
        // first thread.
        TakeCase{"takes whole cores before single threads", testing::SingleSocketHT, "0-7", 3,
                 {}, "0-1,4"},
        // Core 0 has one free thread (4): cores with fewer free CPUs come first.
        TakeCase{"fills a partly used core before splitting a free one",
                 testing::SingleSocketHT, "1-7", 1, {}, "4"},
        TakeCase{"takes the whole machine", testing::SingleSocketHT, "0-7", 8, {}, "0-7"},
        TakeCase{"takes nothing for zero CPUs", testing::SingleSocketHT, "0-7", 0, {}, ""},
        TakeCase{"fails when fewer CPUs are available than requested",
                 testing::SingleSocketHT, "0-1", 3, {}, nullptr},
        TakeCase{"fails for a negative request", testing::SingleSocketHT, "0-7", -1, {},
                 nullptr},
        // Spread skips whole cores and walks the socket's free CPUs by id: 0 and 1 are on
        // different cores with this numbering.
        TakeCase{"spreads over cores with the spread strategy", testing::SingleSocketHT, "0-7",
                 2, kSpread, "0-1"},
        TakeCase{"spreads four CPUs over four cores", testing::SingleSocketHT, "0-7", 4,
                 kSpread, "0-3"},
        // Surprising but kubelet v1.35.4's: spread is CPU-id order within the socket, so with
        // siblings adjacent the first two CPUs are one core (kubelet#140688, fixed upstream
        // after v1.35.4; Huygens mirrors v1.35.4, docs/allocate.md).
        TakeCase{"spread follows CPU ids even when siblings are adjacent",
                 testing::DualSocketHTAdjacent, "0-23", 2, kSpread, "0-1"},
        TakeCase{"takes whole cores when siblings are adjacent", testing::DualSocketHTAdjacent,
                 "0-23", 4, {}, "0-3"},
        // ---- No SMT.
        TakeCase{"takes the lowest CPUs without SMT", testing::SingleSocketNoHT, "0-7", 3, {},
                 "0-2"},
        TakeCase{"takes a whole socket without SMT", testing::DualSocketNoHT, "0-11", 6, {},
                 "0-5"},
        // Socket 1 has fewer free CPUs (5) than socket 0 (6): it is packed first.
        TakeCase{"packs into the fuller socket without SMT", testing::DualSocketNoHT,
                 "0-5,7-11", 2, {}, "7-8"},
        // ---- DualSocketHT: socket s (= NUMA s) holds cores 6s..6s+5, CPUs 6s..6s+5 and
        // 12+6s..12+6s+5.
        TakeCase{"takes a whole NUMA node for a node's worth of CPUs", testing::DualSocketHT,
                 "0-23", 12, {}, "0-5,12-17"},
        // Socket 0 has 11 free CPUs, socket 1 has 12: socket 0 is packed first, and its first
        // whole core is core 1.
        TakeCase{"packs cores into the socket with fewer free CPUs", testing::DualSocketHT,
                 "1-23", 2, {}, "1,13"},
        // 14 CPUs: the only free NUMA node (1) whole, then core 0 of socket 0.
        TakeCase{"takes a free NUMA node and then cores from the other",
                 testing::DualSocketHT, "0,2-23", 14, {}, "0,6-12,18-23"},
        TakeCase{"takes the whole machine on two sockets", testing::DualSocketHT, "0-23", 24,
                 {}, "0-23"},
        // ---- Offline CPUs: 5, 17 (all of core 5) and 18 (one thread of core 6). 21 online
        // CPUs on 11 cores make kubelet's CpusPerCore 21/11 = 1, so a core is "free" when one
        // CPU of it is free: core 6 (only CPU 6 online) is the first such core with size 1.
        TakeCase{"treats a core with an offline sibling as a whole core of one",
                 testing::DualSocketHTWithOffline, "0-23", 1, {}, "6"},
        TakeCase{"never takes offline CPUs", testing::DualSocketHTWithOffline, "0-23", 21, {},
                 "0-4,6-16,19-23"},
        TakeCase{"fails when only offline CPUs would satisfy the request",
                 testing::DualSocketHTWithOffline, "0-23", 22, {}, nullptr},
        // ---- Cores of different sizes, as kubelet v1.35.4 answers (the kubelet oracle agrees,
        // testbed/oracle_diff_test.cc): a core whose free CPUs number kubelet's average core
        // size (1 here) is "free" and taken whole, its busy sibling too.
        // HybridLike, 0 and 6 free: core 0 (CPU 0 free, 14 busy) is the first free core.
        TakeCase{"takes a hybrid core with one free thread whole, its busy sibling too",
                 HybridLike, "0,6", 2, kWhole, "0,14"},
        TakeCase{"takes only the free thread of such a core without whole units", HybridLike,
                 "0,6", 2, {}, "0,6"},
        // Core 1 has both threads free: 2 is not the average 1, so it is not a free core; core
        // 7 is, then core 1's first thread comes from the remaining CPUs.
        TakeCase{"passes over a hybrid core with both threads free in the whole-core phase",
                 HybridLike, "1,7,15", 2, kWhole, "1,7"},
        // Uncore option: 4 cores of the only L3 group (0-3) hold 7 free CPUs, not 4, so no
        // partial L3 take; the whole-core phase takes core 0 (with busy 14), then cores 7, 8.
        TakeCase{"takes a hybrid core whole after the uncore step misses",
                 HybridLike, "0-5,7-13,15-19", 4, kWholeUncore, "0,7-8,14"},
        // DualSocketHTWithOffline with CPU 12 busy: core 0 (CPUs 0, 12) has one free CPU, the
        // average core size (21 / 11 = 1), so kubelet takes it whole.
        TakeCase{"takes a core with a busy sibling whole on a machine with offline threads",
                 testing::DualSocketHTWithOffline, "0-4,6-11,13-16,19-23", 2, kWhole, "0,12"},
        // The same for sockets: socket 0 has 10 online CPUs, socket 1 11 (18 is offline), so
        // the average socket is 21 / 2 = 10. With 0 and 6 busy, socket 1 has 10 free CPUs,
        // counts as a free socket, and 11 CPUs are its 11 CPUs, busy 6 included.
        TakeCase{"takes a socket whole when its free CPUs number the average socket size",
                 testing::DualSocketHTWithOffline, "1-4,7-16,19-23", 11, kWhole, "6-11,19-23"},
        // ---- DualSocketMultiNumaPerSocketHT: NUMA n holds CPUs 4n..4n+3, 16+4n..16+4n+3;
        // sockets hold NUMA {0,1} and {2,3}; 2 sockets < 4 NUMA nodes, so sockets come first.
        TakeCase{"takes a whole socket first when sockets are the larger unit",
                 testing::DualSocketMultiNumaPerSocketHT, "0-31", 16, {}, "0-7,16-23"},
        // Socket 0 (15 free) sorts before socket 1 (16 free); inside it NUMA 1 is the free one.
        TakeCase{"takes a whole NUMA node inside the fuller socket",
                 testing::DualSocketMultiNumaPerSocketHT, "1-31", 8, {}, "4-7,20-23"},
        // NUMA 0 (7 free) sorts before NUMA 1; its core 0 is partly used, core 1 is whole.
        TakeCase{"takes a whole core from the fuller NUMA node",
                 testing::DualSocketMultiNumaPerSocketHT, "1-31", 2, {}, "1,17"},
        // ---- Sparse NUMA ids 0, 1, 4, 5 (same shape): socket 1 (15 free) first, then its
        // free NUMA node 5 (ids, not positions, order the nodes).
        TakeCase{"orders NUMA nodes by their sparse ids", testing::SparseNumaIds,
                 "0-7,9-31", 8, {}, "12-15,28-31"},
        // ---- QuadSocket4NumaSMT: NUMA n holds CPUs 4n..4n+3 and 32+4n..32+4n+3, socket s
        // holds NUMA 2s, 2s+1. A whole socket (16), then a whole NUMA node of socket 1.
        TakeCase{"takes a socket and then a NUMA node on four sockets",
                 testing::QuadSocket4NumaSMT, "0-63", 24, {}, "0-11,32-43"},
        TakeCase{"takes whole sockets on four sockets", testing::QuadSocket4NumaSMT, "0-63", 32,
                 {}, "0-15,32-47"},
        // ---- L3 groups (EPYC-like: core c = CPUs 2c, 2c+1; L3 g = CPUs 16g..16g+15; NUMA n =
        // CPUs 32n..32n+31). Cores 0-5 busy: L3 0 keeps 4 free CPUs (12-15).
        // Packed: whole cores by id inside NUMA 0: 12-17 spans L3 0 and 1.
        TakeCase{"packs cores across an L3 boundary without the uncore option",
                 testing::EpycLikeSplitL3, "12-127", 6, {}, "12-17"},
        // Uncore: L3 0 (4 free) cannot hold 6, L3 1 can: its first three cores.
        TakeCase{"fits the request into one L3 group with the uncore option",
                 testing::EpycLikeSplitL3, "12-127", 6, kUncore, "16-21"},
        TakeCase{"takes a whole L3 group with the uncore option", testing::EpycLikeSplitL3,
                 "0-127", 16, kUncore, "0-15"},
        // An odd request: kubelet's partial-uncore step takes ceil(3/2) = 2 cores of L3 0 and
        // drops the highest free CPU of them (3): 0-2.
        TakeCase{"takes an odd request from the first L3 group with the uncore option",
                 testing::EpycLikeSplitL3, "0-127", 3, kUncore, "0-2"},
        // L3 0 has one free CPU (15) and cannot hold 3; L3 1 can: cores 8 and 9 less their
        // highest CPU (19). Without the odd-request rule the whole-core phase would take core 8
        // and then fill the half-free core 7 (15-17).
        TakeCase{"fits an odd request into the next L3 group with the uncore option",
                 testing::EpycLikeSplitL3, "15-127", 3, kUncore, "16-18"},
        // SingleSocketFourL3: L3 g holds cores 4g..4g+3 (CPUs 4g..4g+3, 16+4g..16+4g+3). L3 0
        // has 6 free (cores 1-3), L3 1 8: the fuller L3 0 holds 6 exactly.
        TakeCase{"fits into the fullest L3 group that can hold the request",
                 testing::SingleSocketFourL3, "1-15,17-31", 6, kUncore, "1-3,17-19"}),
    [](const ::testing::TestParamInfo<TakeCase>& p) { return TestName(p.param.name); });

TEST(TakeByTopologyTest, ReportsKubeletsNotEnoughMessage) {
  absl::StatusOr<CpuSet> got = TakeByTopology(testing::SingleSocketHT(), Cpus("0-1"), 3);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(got.status().message(),
            "not enough cpus available to satisfy request: requested=3, available=2");
}

TEST(TakeByTopologyTest, IndexAndTopologyFormsAgree) {
  const CpuTopology topo = testing::DualSocketMultiNumaPerSocketHT();
  const TopologyIndex index(topo);
  for (int n = 0; n <= 31; ++n) {
    EXPECT_EQ(*TakeByTopology(index, Cpus("1-31"), n), *TakeByTopology(topo, Cpus("1-31"), n));
  }
}

// ---- Distributed (distribute-cpus-across-numa) ------------------------------------------

struct DistributedCase {
  std::string name;
  std::function<CpuTopology()> machine;
  const char* available;
  int num_cpus;
  int group_size;
  const char* expected;
  TakeOptions options = {};
};

class TakeDistributedTest : public ::testing::TestWithParam<DistributedCase> {};

TEST_P(TakeDistributedTest, GivesKubeletsChoice) {
  const DistributedCase& c = GetParam();
  absl::StatusOr<CpuSet> got =
      TakeByTopologyNumaDistributed(c.machine(), Cpus(c.available), c.num_cpus, c.group_size,
                                    c.options);
  if (c.expected == nullptr) {
    EXPECT_FALSE(got.ok()) << *got;
    return;
  }
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, Cpus(c.expected));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, TakeDistributedTest,
    ::testing::Values(
        // One NUMA node suffices (k = 1): the first node in order, 2 whole cores.
        DistributedCase{"keeps a small request on one NUMA node",
                        testing::DualSocketMultiNumaPerSocketHT, "0-31", 4, 2, "0-1,16-17"},
        // 12 CPUs need two nodes: 6 from each of NUMA 0 and 1 (balance 3 for every pair, the
        // first pair wins); packing would take all of NUMA 0 instead.
        DistributedCase{"splits a request evenly over two NUMA nodes",
                        testing::DualSocketMultiNumaPerSocketHT, "0-31", 12, 2,
                        "0-2,4-6,16-18,20-22"},
        // 10 = 4 + 4 + a remainder group of 2 from the first node.
        DistributedCase{"hands the remainder group to the first NUMA node",
                        testing::DualSocketMultiNumaPerSocketHT, "0-31", 10, 2,
                        "0-2,4-5,16-18,20-21"},
        // 5 is not a multiple of the group size: kubelet packs.
        DistributedCase{"packs a request that is not a multiple of the group size",
                        testing::DualSocketMultiNumaPerSocketHT, "0-31", 5, 2, "0-2,16-17"},
        DistributedCase{"fails when fewer CPUs are available than requested",
                        testing::DualSocketMultiNumaPerSocketHT, "0-3", 6, 2, nullptr},
        // The spinning family: NUMA 0-3 of QuadSocket4NumaSMT have 5 free CPUs each (cores
        // 4n, 4n+1 and CPU 4n+2), the rest none. 14 CPUs: k = 4, 2 from each node, remainder
        // 6; the pair subsets leave 1 CPU on each node and made kubelet loop forever. The
        // 4-node subset hands 2 more to each of NUMA 0, 1, 2.
        DistributedCase{"answers where kubelet's remainder loop spins",
                        testing::QuadSocket4NumaSMT, "0-2,4-6,8-10,12-14,32-33,36-37,40-41,44-45",
                        14, 2, "0-1,4-5,8-9,12,32-33,36-37,40-41,44"},
        // kubelet keeps its best NUMA combination by reference into the slice its
        // combination walk appends to, so later combinations rewrite it (take.cc,
        // KeptCombination). 32 of 64 free CPUs need k = 4 nodes of 8; every 4-combination
        // balances alike and the first, NUMA {0,1,2,3}, wins, but the walk goes on through
        // {0,1,2,4} .. {0,1,2,7} with the same 3-node prefix, which shares the fourth slot:
        // kubelet takes NUMA 0, 1, 2 and 7.
        DistributedCase{"takes the NUMA nodes kubelet's kept combination names after its walk",
                        testing::QuadSocket4NumaSMT, "0-63", 32, 1, "0-11,28-43,60-63"},
        // The same for the remainder subset. 46 CPUs in groups of 2 over 8 NUMA nodes with
        // 8, 8, 8, 8, 1, 12, 5, 6 free (NUMA 0-7): only NUMA {7,5,0,1,2,3} can take 6 each,
        // leaving 10 over remainder candidates 5, 0, 1, 2, 3 (2 free each, 6 on NUMA 5). The
        // best subset is {5,0,1,2} (2 each and 2 more from NUMA 5), but its fourth slot is
        // rewritten by {5,0,1,3}, the next subset with its prefix: NUMA 3 gives the remainder
        // and NUMA 2 keeps 2 free CPUs (12-17,60-65 hold NUMA 2).
        DistributedCase{"hands the remainder to the subset kubelet's kept subset names",
                        TwoSocketsEightNuma,
                        "0-3,6-9,12-15,18-21,24,30-38,42-44,48-51,54-57,60-63,66-69,78-85,90-92",
                        46, 2,
                        "0-3,6-9,12-14,18-21,30-34,42-44,48-51,54-57,60-62,66-69,78-82,90-92"},
        // kubelet takes each NUMA node's share with its packed take, whose whole-core test
        // compares with the machine's average core size: 21 CPUs on 12 cores make it 1, so
        // core 0 with one free thread (0; 12 is busy) counts as free and is taken whole, busy
        // thread included, for 2 of the 2 CPUs (TakeOptions::whole_units_by_average_size).
        DistributedCase{"takes a NUMA node's share with whole cores as kubelet's packed take",
                        testing::DualSocketHTWithOffline, "0-1", 2, 1, "0,12", kWhole},
        DistributedCase{"counts the busy threads of whole cores in each NUMA node's share",
                        testing::DualSocketHTWithOffline, "0-1,6-7", 4, 1, "0,6-7,12", kWhole}),
    [](const ::testing::TestParamInfo<DistributedCase>& p) {
      return TestName(p.param.name);
    });

TEST(TakeDistributedTest, RejectsAZeroGroupSize) {
  EXPECT_FALSE(TakeByTopologyNumaDistributed(testing::SingleSocketHT(), Cpus("0-7"), 2, 0).ok());
}

// The whole family of kubelet's non-terminating inputs: cpu group size 2 and an odd number of
// free CPUs on several NUMA nodes. Every request must be answered (exact size, within the
// available CPUs) or refused with an error; reaching the end of the loop proves termination.
TEST(TakeDistributedTest, TerminatesOnOddFreeCountsPerNumaNode) {
  const CpuTopology topo = testing::QuadSocket4NumaSMT();
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    CpuSet::Builder available;
    for (const NumaNode& node : topo.NumaNodes()) {
      const int odd = 1 + 2 * static_cast<int>(rng() % 4);  // 1, 3, 5 or 7 free
      std::vector<int> cpus = node.cpus.ToVector();
      std::shuffle(cpus.begin(), cpus.end(), rng);
      if (rng() % 4 == 0) continue;  // some nodes fully busy
      for (int i = 0; i < odd; ++i) available.Add(cpus[static_cast<size_t>(i)]);
    }
    const CpuSet avail = available.Build();
    for (int n = 2; n <= avail.Size() + 2; n += 2) {
      absl::StatusOr<CpuSet> got = TakeByTopologyNumaDistributed(topo, avail, n, 2);
      if (n > avail.Size()) {
        EXPECT_FALSE(got.ok());
        continue;
      }
      ASSERT_TRUE(got.ok()) << got.status() << " available " << avail << " n " << n;
      EXPECT_EQ(got->Size(), n);
      EXPECT_TRUE(got->IsSubsetOf(avail));
    }
  }
}

// ---- Properties on random topologies and states --------------------------------------------

MachineSpec RandomSpec(std::mt19937& rng) {
  MachineSpec spec;
  spec.sockets = 1 + static_cast<int>(rng() % 4);
  spec.numa_per_socket = 1 + static_cast<int>(rng() % 3);
  spec.threads_per_core = 1 + static_cast<int>(rng() % 2);
  const int l3_per_numa = 1 + static_cast<int>(rng() % 2);
  spec.cores_per_l3 = 1 + static_cast<int>(rng() % 4);
  spec.cores_per_numa = spec.cores_per_l3 * l3_per_numa;
  spec.numbering = rng() % 2 ? testing::SiblingNumbering::kSplit
                             : testing::SiblingNumbering::kAdjacent;
  if (rng() % 3 == 0) {
    for (int i = 0; i < spec.sockets * spec.numa_per_socket; ++i) {
      spec.numa_ids.push_back(3 * i + static_cast<int>(rng() % 3));
    }
  }
  const int total = spec.sockets * spec.numa_per_socket * spec.cores_per_numa *
                    spec.threads_per_core;
  if (rng() % 3 == 0) {
    CpuSet::Builder offline;
    for (int i = 0; i < total / 8; ++i) offline.Add(static_cast<int>(rng() % static_cast<unsigned>(total)));
    spec.offline = offline.Build();
  }
  return spec;
}

TEST(TakePropertiesTest, ResultIsExactWithinAvailableAndDeterministic) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 400; ++round) {
    const CpuTopology topo = BuildMachine(RandomSpec(rng));
    const TopologyIndex index(topo);
    CpuSet::Builder b;
    for (int cpu : topo.AllCpus()) {
      if (rng() % 2) b.Add(cpu);
    }
    const CpuSet available = b.Build();
    const int usable = available.IntersectionSize(topo.OnlineCpus());
    const int n = static_cast<int>(rng() % static_cast<unsigned>(usable + 2));
    const TakeOptions options{
        .cpu_sorting_strategy = rng() % 2 ? CpuSortingStrategy::kPacked : CpuSortingStrategy::kSpread,
        .prefer_align_by_uncore_cache = rng() % 2 == 0};
    const int group = 1 + static_cast<int>(rng() % 2);
    for (bool distributed : {false, true}) {
      auto take = [&] {
        return distributed ? TakeByTopologyNumaDistributed(index, available, n, group, options)
                           : TakeByTopology(index, available, n, options);
      };
      absl::StatusOr<CpuSet> got = take();
      if (n > usable) {
        EXPECT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted);
        continue;
      }
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_EQ(got->Size(), n);
      EXPECT_TRUE(got->IsSubsetOf(available.Intersection(topo.OnlineCpus())));
      EXPECT_EQ(*take(), *got) << "not deterministic";
    }
  }
}

// With whole cores free and a request that is a multiple of the core size, packing never
// splits a core (what full-pcpus-only relies on).
TEST(TakePropertiesTest, PackingWholeCoresNeverSplitsACore) {
  std::mt19937 rng(99);
  for (int round = 0; round < 300; ++round) {
    MachineSpec spec = RandomSpec(rng);
    spec.threads_per_core = 2;
    spec.offline = CpuSet();
    const CpuTopology topo = BuildMachine(spec);
    CpuSet::Builder b;
    for (int core : topo.CoreIds()) {
      if (rng() % 2) b.Add(topo.CpusInCore(core));
    }
    const CpuSet available = b.Build();
    const int n = 2 * static_cast<int>(rng() % static_cast<unsigned>(available.Size() / 2 + 1));
    for (bool distributed : {false, true}) {
      absl::StatusOr<CpuSet> got =
          distributed ? TakeByTopologyNumaDistributed(topo, available, n, 2)
                      : TakeByTopology(topo, available, n);
      ASSERT_TRUE(got.ok()) << got.status();
      for (int cpu : *got) {
        EXPECT_TRUE(topo.SiblingsOf(cpu).IsSubsetOf(*got)) << "split core of cpu " << cpu;
      }
    }
  }
}

}  // namespace
}  // namespace huygens
