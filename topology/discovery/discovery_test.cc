// Discovery against every machine in ../shared/fixtures/topologies. Expected values come from
// the ground truth beside each file: the README table, hwloc's expected `.console` output, the
// dump's own sysfs files (node cpulist/cpumap, meminfo, distance, thread_siblings_list) and, for
// XML machines, the XML's objects and NUMALatency matrix. Where Huygens deliberately differs from
// hwloc's console (CPU-less NUMA nodes, POWER sockets, KNL memory-side caches) the row says why;
// docs/discovery.md has the full list.
#include "topology/discovery/discovery.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/json.h"
#include "topology/nrt.h"

namespace huygens {
namespace {

using ::testing::HasSubstr;

const std::string kDir = std::string(HUYGENS_FIXTURES) + "/topologies/";

constexpr uint64_t KiB = 1024;

struct Machine {
  std::string name;  // test name
  std::string file;  // under fixtures/topologies
  int sockets, cores, online_cpus;
  std::vector<int> numa_with_cpus, numa_without_cpus;
  std::string offline;  // cpu-list of offline CPUs
  int l3_groups;
  int clusters;  // distinct cluster ids of online CPUs (== cores without a cluster level)
  std::vector<std::pair<int, std::string>> siblings;  // cpu -> SiblingsOf(cpu)
  std::vector<std::pair<int, std::string>> node_cpus;  // NUMA id -> NumaNode::cpus
  std::vector<std::pair<int, std::vector<int>>> distance_rows;  // id -> row in NumaNodeIds order
  std::vector<std::pair<int, uint64_t>> memory;  // NUMA id -> bytes
  std::string possible = "", present = "";       // "" = not checked
};

absl::StatusOr<CpuTopology> Load(const std::string& file) {
  // Unpacking a dump is slow on a busy disk; each fixture is discovered once per test binary.
  static auto* cache = new std::map<std::string, absl::StatusOr<CpuTopology>>();
  auto it = cache->find(file);
  if (it != cache->end()) return it->second;
  const std::string path = kDir + file;
  absl::StatusOr<CpuTopology> t =
      file.ends_with(".xml") ? DiscoverFromXml(path) : DiscoverFromFsroot(path);
  cache->emplace(file, t);
  return t;
}

std::vector<Machine> Machines() {
  return {
      // README: SNC-2, nodes interleaved (node0 = 0,4,...,76), HT siblings n and n+40,
      // distances 10/11/21; node0 MemTotal 388492316 kB.
      {"MemorySideCachesTwoSocketSnc2", "memorysidecaches.tar.bz2", 2, 40, 80, {0, 1, 2, 3}, {},
       "", 2, 40, {{0, "0,40"}, {4, "4,44"}, {79, "39,79"}},
       {{0, "0,4,8,12,16,20,24,28,32,36,40,44,48,52,56,60,64,68,72,76"},
        {3, "3,7,11,15,19,23,27,31,35,39,43,47,51,55,59,63,67,71,75,79"}},
       {{0, {10, 21, 11, 21}}, {3, {21, 11, 21, 10}}},
       {{0, 388492316 * KiB}, {1, 390163848 * KiB}}, "0-79", "0-79"},
      // Console: 2 packages, 4 L3, 32 clusters (Group), 128 cores; no SMT.
      {"KunpengArmWithClusters", "128arm-2pa2n8cluster4co.tar.bz2", 2, 128, 128, {0, 1, 2, 3},
       {}, "", 4, 32, {{0, "0"}, {127, "127"}},
       {{0, "0-31"}, {1, "32-63"}, {3, "96-127"}},
       {{0, {10, 16, 32, 33}}, {3, {33, 32, 16, 10}}}, {{0, 131732940 * KiB}}},
      // physical_package_id = -1: socket = NUMA node (8), not hwloc's 64 one-core packages.
      // Node ids sparse; node cpumap only.
      {"Power7SparseNodesPackageMinusOne", "256ppc-8n8s4t.tar.bz2", 8, 64, 256,
       {0, 1, 4, 5, 8, 9, 12, 13}, {}, "", 64, 64, {{0, "0-3"}, {255, "252-255"}},
       {{0, "0-31"}, {4, "64-95"}, {13, "224-255"}},
       {{0, {10, 20, 40, 40, 40, 40, 40, 40}}, {4, {40, 40, 10, 20, 40, 40, 40, 40}}},
       {{0, 58458112 * KiB}, {13, 56885248 * KiB}}},
      // Six memory-only GPU nodes 250-255 (hwloc hides them); node cpulists name CPUs that are
      // not present, so node CPUs are cut to the present ones; possible >> present.
      {"Power9GpuMemoryNodes", "nvidiagpunumanodes.tar.bz2", 2, 8, 32, {0, 8},
       {250, 251, 252, 253, 254, 255}, "", 4, 8, {{0, "0-3"}, {100, "100-103"}},
       {{0, "0-15"}, {8, "88-103"}, {250, ""}},
       {{0, {10, 40, 80, 80, 80, 80, 80, 80}}, {253, {80, 80, 80, 80, 80, 10, 80, 80}}},
       {{8, 133952000 * KiB}, {250, 15728640 * KiB}}, "0-175", "0-15,88-103"},
      // SNC-4 + hybrid MCDRAM: 4 DRAM nodes with CPUs, 4 MCDRAM nodes without; SMT4 siblings
      // n, n+16, n+32, n+48. No L3 in sysfs (the console's 4 "L3Cache(MemorySideCache)" are
      // MCDRAM caches), so one L3 group = the socket. hwloc 2.9 makes the SNC-4 quadrants
      // "Cluster" groups (4 cores each, the same CPUs as the console's memory-side caches).
      {"KnightsLandingSnc4Hybrid", "64intel64-fakeKNL-SNC4-hybrid.tar.bz2", 1, 16, 64,
       {0, 1, 2, 3}, {4, 5, 6, 7}, "", 1, 4, {{0, "0,16,32,48"}, {5, "5,21,37,53"}},
       {{0, "0-3,16-19,32-35,48-51"}, {3, "12-15,28-31,44-47,60-63"}, {7, ""}},
       {{0, {10, 21, 21, 21, 41, 41, 41, 31}}, {4, {41, 31, 41, 41, 10, 41, 41, 41}}},
       {{0, 1048576 * KiB}, {4, 2097152 * KiB}}},
      // Nodes 0-3 CPU-only (2 CPUs each, no memory), 4 generic initiator, 5-10 memory-only; hwloc
      // folds 0-4 away and puts CPUs with 5,6,8,9. No L3 in the edited dump.
      {"FakeMemInitiatorsCpuOnlyNodes", "fakememinitiators-1np2c+1npp+gi.tar.bz2", 2, 8, 8,
       {0, 1, 2, 3}, {4, 5, 6, 7, 8, 9, 10}, "", 2, 8, {{0, "0"}, {7, "7"}},
       {{0, "0-1"}, {1, "2-3"}, {2, "4-5"}, {3, "6-7"}, {4, ""}, {10, ""}},
       {{0, {10, 21, 13, 21, 12, 11, 14, 17, 21, 21, 28}},
        {4, {12, 31, 12, 31, 10, 15, 15, 13, 31, 31, 13}}},
       {{0, 0}, {4, 0}, {5, 97447340 * KiB}, {7, 778043392 * KiB}}},
      // Node0 missing from sysfs: its CPUs (cpuN/node0 links) form node 0 without memory; its
      // distances come from node1's row (21). Online 4-20; 0-3,21-23 offline; possible 0-191.
      {"OfflineCpu0MissingNode0", "offline-cpu0-node0.tar.bz2", 2, 17, 17, {0, 1}, {},
       "0-3,21-23", 2, 17, {{4, "4"}, {5, "5"}},
       {{0, "0,2,4,6,8,10,12,14,16,18,20,22"}, {1, "1,3,5,7,9,11,13,15,17,19,21,23"}},
       {{0, {10, 21}}, {1, {21, 10}}}, {{0, 0}, {1, 67108864 * KiB}}, "0-191", "0-23"},
      // Old kernel: no online/possible files; cpu2,5,13,14 have online=0 and no topology/.
      // Console: 4 packages, 4 L3, 7 cores, 12 PUs.
      {"NetBurstOfflineCpusOldKernel", "16em64t-4s2c2t-offlines.tar.bz2", 4, 7, 12, {0}, {},
       "2,5,13-14", 4, 7, {{0, "0,8"}, {6, "6"}}, {{0, "0-15"}}, {{0, {10}}},
       {{0, 16772456 * KiB}}, "0-15", "0-15"},
      // The dump's cgroup v2 restricts the job to CPUs 0-5: ignored (whole machine). Two NUMA
      // nodes per socket, 4 CPUs each.
      {"MagnyCoursCgroupIgnored", "32amd64-4s2n4c-cgroup2.tar.bz2", 4, 32, 32,
       {0, 1, 2, 3, 4, 5, 6, 7}, {}, "", 8, 32, {{0, "0"}, {31, "31"}},
       {{0, "0-3"}, {1, "4-7"}, {7, "28-31"}},
       {{0, {10, 16, 16, 22, 16, 22, 16, 22}}, {7, {22, 16, 22, 16, 22, 16, 16, 10}}},
       {{0, 16775084 * KiB}, {1, 16777216 * KiB}}, "0-47", "0-31"},
      // Sparse node ids 0,1,2,33,34,45,72,73; uneven memory; NR_CPUS 48.
      {"MagnyCoursSparseNodeIds", "48amd64-4pa2n6c-sparse.tar.bz2", 4, 48, 48,
       {0, 1, 2, 33, 34, 45, 72, 73}, {}, "", 8, 48, {{0, "0"}},
       {{33, "18-23"}, {73, "42-47"}},
       {{33, {22, 16, 16, 10, 16, 16, 22, 22}}, {73, {22, 16, 16, 22, 22, 16, 16, 10}}},
       {{0, 8386460 * KiB}, {1, 16777216 * KiB}}},
      // Node -> CPU mapping not monotonic (node2 = 32-39, node6 = 16-23). Bulldozer compute units
      // share thread_siblings but have distinct core_id: hwloc and kubelet (core_id) see 64
      // single-thread cores, as the expected XML does.
      {"BulldozerNonMonotonicNodes", "64amd64-4p2n4ca2co.tar.bz2", 4, 64, 64,
       {0, 1, 2, 3, 4, 5, 6, 7}, {}, "", 8, 64, {{0, "0"}, {1, "1"}},
       {{2, "32-39"}, {6, "16-23"}, {7, "24-31"}},
       {{0, {10, 16, 16, 22, 16, 22, 16, 22}}, {2, {16, 22, 10, 16, 16, 16, 16, 16}}},
       {{0, 16428452 * KiB}}},
      // Hybrid: 6 P-cores with HT (siblings 2n, 2n+1) and 8 E-cores in 2 clusters of 4
      // (cluster_cpus_list 12-15, 16-19); P-cores have no cluster of their own beyond the core.
      {"RaptorLakeHybrid", "20em64t-hybrid-1p6c2t+2ca4co1t.tar.bz2", 1, 14, 20, {0}, {}, "", 1,
       8, {{0, "0-1"}, {10, "10-11"}, {12, "12"}, {19, "19"}}, {{0, "0-19"}}, {{0, {10}}},
       {{0, 32489480 * KiB}}},
      // SGI UV 2000: 24 sockets = 24 NUMA nodes, HT siblings n and n+192 (Core cpusets).
      // NUMALatency row 0: 10 50 65 ... 79; node 0 local_memory 33255329792.
      {"SgiUv2000Xml", "192em64t-24n8c2t.hwloc2.xml", 24, 192, 384,
       {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
        12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23},
       {}, "", 24, 192, {{0, "0,192"}, {383, "191,383"}},
       {{0, "0-7,192-199"}, {23, "184-191,376-383"}},
       {{0, {10, 50, 65, 65, 65, 65, 65, 65, 65, 65, 79, 79,
             65, 65, 79, 79, 65, 65, 79, 79, 79, 79, 79, 79}}},
       {{0, 33255329792}, {1, 33269219328}}},
      // hwloc's expected XML for the cgroup job: only PUs 0-5 exist in it; CPUs 6-31 of its
      // complete cpuset are kept as offline, in the node whose complete cpuset holds them.
      {"MagnyCoursCgroupXml", "32amd64-4s2n4c-cgroup2.hwloc2.xml", 1, 6, 6, {0, 1},
       {2, 3, 4, 5}, "6-31", 2, 6, {{0, "0"}}, {{0, "0-3"}, {1, "4-7"}, {2, "8-11"}}, {},
       {{0, 17177686016}, {1, 17179869184}}},
      {"BulldozerXml", "64amd64-4p2n4ca2co.hwloc2.xml", 4, 64, 64, {0, 1, 2, 3, 4, 5, 6, 7}, {},
       "", 8, 64, {{0, "0"}}, {{2, "32-39"}, {6, "16-23"}}, {}, {}},
      // CPUID-only: one NUMA node; 24 CCDs = 24 L3 of 8 cores; siblings n and n+192.
      {"Epyc9654Xml", "AMD-19h-Zen4-2xEpyc-9654.hwloc2.xml", 2, 192, 384, {0}, {}, "", 24, 192,
       {{0, "0,192"}, {191, "191,383"}}, {{0, "0-383"}}, {}, {}},
      {"SapphireRapidsXml", "Intel-SapphireRapids-2xXeonMax9460.hwloc2.xml", 2, 80, 160, {0},
       {}, "", 2, 80, {{0, "0,80"}, {79, "79,159"}}, {{0, "0-159"}}, {}, {}},
  };
}

class FixtureMachine : public ::testing::TestWithParam<Machine> {};

std::vector<int> Sorted(std::vector<int> v) {
  std::ranges::sort(v);
  return v;
}

TEST_P(FixtureMachine, DiscoveryMatchesTheGroundTruth) {
  const Machine& m = GetParam();
  absl::StatusOr<CpuTopology> t = Load(m.file);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->NumSockets(), m.sockets);
  EXPECT_EQ(t->NumCores(), m.cores);
  EXPECT_EQ(t->NumCpus(), m.online_cpus);
  EXPECT_EQ(t->OfflineCpus().ToString(), m.offline);
  EXPECT_EQ(t->NumL3Groups(), m.l3_groups);
  std::set<int> clusters;
  for (const CpuInfo& c : t->Cpus()) {
    if (c.online) clusters.insert(c.cluster);
  }
  EXPECT_EQ(static_cast<int>(clusters.size()), m.clusters);
  EXPECT_EQ(t->NumaNodeIdsWithCpus(), m.numa_with_cpus);
  std::vector<int> all = m.numa_with_cpus;
  all.insert(all.end(), m.numa_without_cpus.begin(), m.numa_without_cpus.end());
  EXPECT_EQ(t->NumaNodeIds(), Sorted(all));
  for (const auto& [cpu, siblings] : m.siblings) {
    EXPECT_EQ(t->SiblingsOf(cpu).ToString(), siblings) << "siblings of cpu " << cpu;
  }
  for (const auto& [id, cpus] : m.node_cpus) {
    ASSERT_TRUE(t->HasNumaNode(id)) << id;
    EXPECT_EQ(t->Numa(id).cpus.ToString(), cpus) << "NUMA node " << id;
  }
  for (const auto& [from, row] : m.distance_rows) {
    std::vector<int> got;
    for (int to : t->NumaNodeIds()) got.push_back(t->Distance(from, to));
    EXPECT_EQ(got, row) << "distances from NUMA node " << from;
  }
  if (!m.distance_rows.empty()) {
    EXPECT_TRUE(t->HasDistances());
  }
  for (const auto& [id, bytes] : m.memory) {
    EXPECT_EQ(t->Numa(id).memory_bytes, bytes) << "memory of NUMA node " << id;
  }
  if (!m.possible.empty()) {
    EXPECT_EQ(t->Machine().possible.ToString(), m.possible);
  }
  if (!m.present.empty()) {
    EXPECT_EQ(t->Machine().present.ToString(), m.present);
  }
  // Every online CPU's core lies within its NUMA node and socket (Create checks nesting); and
  // core ids are dense from 0 in order of smallest CPU.
  int next_core = 0;
  for (const CpuInfo& c : t->Cpus()) {
    if (!c.online) continue;
    if (c.core == next_core) ++next_core;
    EXPECT_LT(c.core, next_core) << "cpu " << c.id << " core id is not dense in CPU order";
  }
}

TEST_P(FixtureMachine, JsonRoundTripsExactly) {
  absl::StatusOr<CpuTopology> t = Load(GetParam().file);
  ASSERT_TRUE(t.ok()) << t.status();
  absl::StatusOr<CpuTopology> back = TopologyFromJson(ToJsonString(*t));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back == *t);
}

TEST_P(FixtureMachine, NrtCarriesTheExactTopologyAndOneZonePerNumaNode) {
  absl::StatusOr<CpuTopology> t = Load(GetParam().file);
  ASSERT_TRUE(t.ok()) << t.status();
  absl::StatusOr<nlohmann::json> object = BuildNrt({.node_name = "n1", .topology = &*t});
  ASSERT_TRUE(object.ok()) << object.status();
  absl::StatusOr<NrtObject> nrt = ReadNrt(nlohmann::json::parse(object->dump()));
  ASSERT_TRUE(nrt.ok()) << nrt.status();
  ASSERT_EQ(nrt->zones.size(), t->NumaNodes().size());
  for (const NrtZone& zone : nrt->zones) {
    ASSERT_TRUE(zone.NumaId().has_value()) << zone.name;
    EXPECT_TRUE(t->HasNumaNode(*zone.NumaId())) << zone.name;
  }
  absl::StatusOr<CpuTopology> back = TopologyFromNrt(*nrt);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back == *t);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, FixtureMachine, ::testing::ValuesIn(Machines()),
                         [](const auto& param_info) { return param_info.param.name; });

// Unpacks the memorysidecaches dump into a fresh `dir` (its root: dir + "/memorysidecaches").
bool UnpackMemorySideCaches(const std::string& dir) {
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return std::system(("tar xjf " + kDir + "memorysidecaches.tar.bz2 -C " + dir).c_str()) == 0;
}

TEST(DiscoverFromFsroot, ReadsAnUnpackedDirectoryLikeItsTarball) {
  // The tarball path and the directory path give the same topology.
  absl::StatusOr<CpuTopology> from_tar = Load("memorysidecaches.tar.bz2");
  ASSERT_TRUE(from_tar.ok()) << from_tar.status();
  const std::string dir = ::testing::TempDir() + "/huygens-unpacked";
  ASSERT_TRUE(UnpackMemorySideCaches(dir));
  absl::StatusOr<CpuTopology> from_dir = DiscoverFromFsroot(dir);
  ASSERT_TRUE(from_dir.ok()) << from_dir.status();
  EXPECT_TRUE(*from_dir == *from_tar);
  std::filesystem::remove_all(dir);
}

TEST(DiscoverFromFsroot, ReadsIsolcpusNohzFullAndTheirFlagsFromTheDump) {
  const std::string dir = ::testing::TempDir() + "/huygens-isolated";
  ASSERT_TRUE(UnpackMemorySideCaches(dir));
  const std::string root = dir + "/memorysidecaches";
  std::ofstream(root + "/proc/cmdline") << "ro isolcpus=managed_irq,domain,2-3,42 nohz_full=2-3\n";
  std::ofstream(root + "/sys/devices/system/cpu/isolated") << "5\n";
  absl::StatusOr<CpuTopology> t = DiscoverFromFsroot(root);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->Machine().isolated.ToString(), "2-3,5,42");
  EXPECT_EQ(t->IsolatedCpus().ToString(), "2-3,5,42");
  EXPECT_TRUE(t->Cpu(42).isolated);
  EXPECT_FALSE(t->Cpu(4).isolated);
  EXPECT_EQ(t->Machine().nohz_full.ToString(), "2-3");
  EXPECT_EQ(t->Machine().isolcpus_flags, (std::vector<std::string>{"managed_irq", "domain"}));
  // isolcpus=nohz,... without "domain" does not isolate from the scheduler's domains.
  std::ofstream(root + "/proc/cmdline") << "isolcpus=nohz,7\n";
  t = DiscoverFromFsroot(root);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->Machine().isolated.ToString(), "5");
  std::filesystem::remove_all(dir);
}

// Hugepages per NUMA node from nodeN/hugepages/hugepages-<kB>kB/nr_hugepages, as cadvisor gives
// them to kubelet's memory manager: every page size the node lists (0 pages included).
// memorysidecaches lists 2048 kB and 1048576 kB pages, none configured; here node 0 gets 512 x
// 2 MiB and node 3 two 1 GiB pages.
TEST(DiscoverFromFsroot, ReadsEachNodesHugepagesBySize) {
  absl::StatusOr<CpuTopology> as_dumped = Load("memorysidecaches.tar.bz2");
  ASSERT_TRUE(as_dumped.ok()) << as_dumped.status();
  for (int id : as_dumped->NumaNodeIds()) {
    EXPECT_EQ(as_dumped->Numa(id).hugepages,
              (std::map<uint64_t, uint64_t>{{2048 * KiB, 0}, {1048576 * KiB, 0}}))
        << "NUMA node " << id;
  }
  const std::string dir = ::testing::TempDir() + "/huygens-hugepages";
  ASSERT_TRUE(UnpackMemorySideCaches(dir));
  const std::string node = dir + "/memorysidecaches/sys/devices/system/node/";
  std::ofstream(node + "node0/hugepages/hugepages-2048kB/nr_hugepages") << "512\n";
  std::ofstream(node + "node3/hugepages/hugepages-1048576kB/nr_hugepages") << "2\n";
  absl::StatusOr<CpuTopology> t = DiscoverFromFsroot(dir + "/memorysidecaches");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->Numa(0).hugepages,
            (std::map<uint64_t, uint64_t>{{2048 * KiB, 512}, {1048576 * KiB, 0}}));
  EXPECT_EQ(t->Numa(3).hugepages,
            (std::map<uint64_t, uint64_t>{{2048 * KiB, 0}, {1048576 * KiB, 2}}));
  EXPECT_EQ(t->Numa(0).memory_bytes, 388492316 * KiB);
  std::filesystem::remove_all(dir);
}

// An online CPU whose cpuN/ lost its topology/ folder (hwloc then makes no PU for it) is placed
// from the other sysfs files. memorysidecaches: node1's cpulist names CPUs 1,5,9,...,77 (all
// in package 1); CPU 45's core_cpus_list is "5,45".
TEST(DiscoverFromFsroot, PlacesAnOnlineCpuWithoutTopologyFromTheOtherFiles) {
  const std::string dir = ::testing::TempDir() + "/huygens-no-topology";
  ASSERT_TRUE(UnpackMemorySideCaches(dir));
  const std::string cpu_dir = dir + "/memorysidecaches/sys/devices/system/cpu/";
  std::filesystem::remove_all(cpu_dir + "cpu5/topology");
  absl::StatusOr<CpuTopology> t = DiscoverFromFsroot(dir);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->NumCpus(), 80);
  EXPECT_TRUE(t->Cpu(5).online);
  EXPECT_EQ(t->Cpu(5).numa, 1);
  // CPU 45 names it as its sibling: it joins that core.
  EXPECT_EQ(t->SiblingsOf(5).ToString(), "5,45");
  EXPECT_EQ(t->Cpu(5).socket, t->Cpu(45).socket);
  EXPECT_EQ(t->Cpu(5).l3, t->Cpu(45).l3);
  EXPECT_EQ(t->NumCores(), 40);

  // Its sibling loses topology/ too: no file names either, so each is a core of its own in the
  // socket that the other CPUs of NUMA node 1 share.
  std::filesystem::remove_all(cpu_dir + "cpu45/topology");
  t = DiscoverFromFsroot(dir);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->NumCpus(), 80);
  EXPECT_EQ(t->SiblingsOf(5).ToString(), "5");
  EXPECT_EQ(t->SiblingsOf(45).ToString(), "45");
  EXPECT_EQ(t->Cpu(5).socket, t->Cpu(1).socket);
  EXPECT_EQ(t->Cpu(45).socket, t->Cpu(1).socket);
  EXPECT_EQ(t->Cpu(45).numa, 1);
  EXPECT_EQ(t->NumCores(), 41);
  std::filesystem::remove_all(dir);
}

TEST(DiscoverLive, DescribesThisMachineLikeSysfs) {
  absl::StatusOr<CpuTopology> t = DiscoverLive();
  ASSERT_TRUE(t.ok()) << t.status();
  std::ifstream online("/sys/devices/system/cpu/online");
  std::string list;
  std::getline(online, list);
  EXPECT_EQ(t->OnlineCpus().ToString(), CpuSet::Parse(list)->ToString());
  EXPECT_GE(t->NumNumaNodes(), 1);
}

// ---- NUMA splits ---------------------------------------------------------------------------

struct SplitCase {
  std::string name;
  std::string file;
  std::string split;
  int nodes;
  std::vector<std::pair<int, std::string>> node_cpus;
  std::vector<int> row0;  // distances from node 0
};

class NumaSplitOfExport : public ::testing::TestWithParam<SplitCase> {};

TEST_P(NumaSplitOfExport, CutsSocketsAlongL3OrCoreBoundaries) {
  const SplitCase& c = GetParam();
  absl::StatusOr<CpuTopology> t = Load(c.file);
  ASSERT_TRUE(t.ok()) << t.status();
  absl::StatusOr<NumaSplit> split = ParseNumaSplit(c.split);
  ASSERT_TRUE(split.ok()) << split.status();
  absl::StatusOr<CpuTopology> s = ApplyNumaSplit(*t, *split);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->NumNumaNodes(), c.nodes);
  EXPECT_EQ(s->NumaNodeIdsWithCpus().size(), static_cast<size_t>(c.nodes));
  for (const auto& [id, cpus] : c.node_cpus) {
    EXPECT_EQ(s->Numa(id).cpus.ToString(), cpus) << "NUMA node " << id;
  }
  std::vector<int> row;
  for (int to : s->NumaNodeIds()) row.push_back(s->Distance(0, to));
  EXPECT_EQ(row, c.row0);
  // Everything but NUMA is unchanged, and the machine's memory is shared out.
  EXPECT_EQ(s->NumCores(), t->NumCores());
  EXPECT_EQ(s->NumL3Groups(), t->NumL3Groups());
  EXPECT_EQ(s->Numa(0).memory_bytes, t->Numa(0).memory_bytes / static_cast<uint64_t>(c.nodes));
  for (const CpuInfo& cpu : s->Cpus()) {
    EXPECT_EQ(s->SocketsInNumaNode(cpu.numa).size(), 1u) << "cpu " << cpu.id;
  }
}

std::vector<int> Row(int same_socket, int total) {
  std::vector<int> row(static_cast<size_t>(total), 32);
  for (int i = 0; i < same_socket; ++i) row[static_cast<size_t>(i)] = 12;
  row[0] = 10;
  return row;
}

// EPYC 9654: 12 CCDs (L3) of 8 cores per socket, CPUs 0-95 socket 0, 96-191 socket 1, SMT
// siblings +192. NPS2 = 6 CCDs (48 cores) per node, NPS4 = 3 CCDs (24 cores).
// Sapphire Rapids Max 9460: 40 cores per socket on one L3; SNC4 = 10 cores per node.
INSTANTIATE_TEST_SUITE_P(
    Splits, NumaSplitOfExport,
    ::testing::Values(
        SplitCase{"Epyc9654Nps1", "AMD-19h-Zen4-2xEpyc-9654.hwloc2.xml", "per-socket:1", 2,
                  {{0, "0-95,192-287"}, {1, "96-191,288-383"}}, {10, 32}},
        SplitCase{"Epyc9654Nps2", "AMD-19h-Zen4-2xEpyc-9654.hwloc2.xml", "per-socket:2", 4,
                  {{0, "0-47,192-239"}, {1, "48-95,240-287"}, {3, "144-191,336-383"}},
                  Row(2, 4)},
        SplitCase{"Epyc9654Nps4", "AMD-19h-Zen4-2xEpyc-9654.hwloc2.xml", "per-socket:4", 8,
                  {{0, "0-23,192-215"}, {1, "24-47,216-239"}, {7, "168-191,360-383"}},
                  Row(4, 8)},
        SplitCase{"Epyc9654L3AsNuma", "AMD-19h-Zen4-2xEpyc-9654.hwloc2.xml", "l3", 24,
                  {{0, "0-7,192-199"}, {23, "184-191,376-383"}}, Row(12, 24)},
        SplitCase{"SapphireRapidsSnc4", "Intel-SapphireRapids-2xXeonMax9460.hwloc2.xml",
                  "per-socket:4", 8, {{0, "0-9,80-89"}, {4, "40-49,120-129"}}, Row(4, 8)},
        SplitCase{"SapphireRapidsSnc2", "Intel-SapphireRapids-2xXeonMax9460.hwloc2.xml",
                  "per-socket:2", 4, {{0, "0-19,80-99"}, {1, "20-39,100-119"}}, Row(2, 4)}),
    [](const auto& param_info) { return param_info.param.name; });

TEST(ApplyNumaSplit, RefusesMachinesWithCpuLessNodes) {
  absl::StatusOr<CpuTopology> t = Load("nvidiagpunumanodes.tar.bz2");
  ASSERT_TRUE(t.ok()) << t.status();
  absl::StatusOr<CpuTopology> s = ApplyNumaSplit(*t, *ParseNumaSplit("per-socket:2"));
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("NUMA node 250 has no online CPUs"));
}

TEST(ApplyNumaSplit, RefusesMoreNodesThanCores) {
  absl::StatusOr<CpuTopology> t = DiscoverSynthetic("package:1 core:2 pu:1");
  ASSERT_TRUE(t.ok()) << t.status();
  absl::StatusOr<CpuTopology> s = ApplyNumaSplit(*t, *ParseNumaSplit("per-socket:4"));
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("socket 0 has only 2 cores"));
}

TEST(ParseNumaSplit, AcceptsTheDocumentedFormsOnly) {
  EXPECT_EQ(ParseNumaSplit("none")->mode, NumaSplit::Mode::kNone);
  EXPECT_EQ(ParseNumaSplit("l3")->mode, NumaSplit::Mode::kPerL3);
  EXPECT_EQ(ParseNumaSplit("per-socket:4")->per_socket, 4);
  for (const char* bad : {"per-socket:0", "per-socket:", "per-socket:x", "nps4", "l3 "}) {
    EXPECT_EQ(ParseNumaSplit(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

// ---- Synthetic ------------------------------------------------------------------------------

TEST(DiscoverSynthetic, LinuxNumberingPutsSiblingsHalfTheMachineApart) {
  absl::StatusOr<CpuTopology> t =
      DiscoverSynthetic("package:2 numa:2 l3cache:2 core:8 pu:2", CpuNumbering::kLinux);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->NumCpus(), 128);
  EXPECT_EQ(t->NumCores(), 64);
  EXPECT_EQ(t->NumSockets(), 2);
  EXPECT_EQ(t->NumNumaNodes(), 4);
  EXPECT_EQ(t->NumL3Groups(), 8);
  EXPECT_EQ(t->SiblingsOf(0).ToString(), "0,64");
  EXPECT_EQ(t->SiblingsOf(63).ToString(), "63,127");
  EXPECT_EQ(t->Numa(0).cpus.ToString(), "0-15,64-79");
  EXPECT_EQ(t->CpusInL3Group(0).ToString(), "0-7,64-71");
  EXPECT_EQ(t->CpusInSocket(1).ToString(), "32-63,96-127");
  // Default distances: 10 local, 12 same socket, 32 other socket.
  EXPECT_EQ(t->Distance(0, 1), 12);
  EXPECT_EQ(t->Distance(0, 2), 32);
}

TEST(DiscoverSynthetic, AdjacentNumberingKeepsACoresThreadsTogether) {
  absl::StatusOr<CpuTopology> t =
      DiscoverSynthetic("package:2 numa:2 l3cache:2 core:8 pu:2", CpuNumbering::kAdjacent);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->NumCpus(), 128);
  EXPECT_EQ(t->SiblingsOf(0).ToString(), "0-1");
  EXPECT_EQ(t->SiblingsOf(127).ToString(), "126-127");
  EXPECT_EQ(t->Numa(1).cpus.ToString(), "32-63");
  EXPECT_EQ(t->CpusInSocket(1).ToString(), "64-127");
}

TEST(DiscoverSynthetic, WithoutSmtBothNumberingsAgree) {
  absl::StatusOr<CpuTopology> linux = DiscoverSynthetic("package:2 core:4 pu:1");
  absl::StatusOr<CpuTopology> adjacent =
      DiscoverSynthetic("package:2 core:4 pu:1", CpuNumbering::kAdjacent);
  ASSERT_TRUE(linux.ok() && adjacent.ok());
  EXPECT_TRUE(*linux == *adjacent);
  EXPECT_EQ(linux->NumNumaNodes(), 1);
}

TEST(ParseCpuNumbering, KnowsLinuxAndAdjacent) {
  EXPECT_EQ(*ParseCpuNumbering("linux"), CpuNumbering::kLinux);
  EXPECT_EQ(*ParseCpuNumbering("adjacent"), CpuNumbering::kAdjacent);
  EXPECT_THAT(std::string(ParseCpuNumbering("spread").status().message()), HasSubstr("spread"));
}

// ---- Bad input ------------------------------------------------------------------------------

struct BadInput {
  std::string name;
  std::function<absl::StatusOr<CpuTopology>(const std::string& tmp)> discover;
  absl::StatusCode code;
  std::string message_part;
};

class BadInputs : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputs, GiveOneLineNamingTheFileAndTheProblem) {
  const BadInput& c = GetParam();
  const std::string tmp = ::testing::TempDir() + "/huygens-bad-" + c.name;
  std::filesystem::remove_all(tmp);
  std::filesystem::create_directories(tmp);
  absl::StatusOr<CpuTopology> t = c.discover(tmp);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), c.code) << t.status();
  const std::string message(t.status().message());
  EXPECT_THAT(message, HasSubstr(c.message_part));
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  std::filesystem::remove_all(tmp);
}

std::string Write(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

INSTANTIATE_TEST_SUITE_P(
    Discovery, BadInputs,
    ::testing::Values(
        BadInput{"MissingFsroot",
                 [](const std::string& tmp) { return DiscoverFromFsroot(tmp + "/nope"); },
                 absl::StatusCode::kNotFound, "/nope: no such file or directory"},
        BadInput{"EmptyDirectory", [](const std::string& tmp) { return DiscoverFromFsroot(tmp); },
                 absl::StatusCode::kInvalidArgument, "no sys/devices/system/cpu inside"},
        BadInput{"DumpWithoutCpuDirectories",
                 [](const std::string& tmp) {
                   std::filesystem::create_directories(tmp + "/sys/devices/system/cpu");
                   Write(tmp + "/sys/devices/system/cpu/online", "0-3\n");
                   return DiscoverFromFsroot(tmp);
                 },
                 absl::StatusCode::kInvalidArgument, "online in sysfs but hwloc found no PU"},
        BadInput{"TruncatedTarball",
                 [](const std::string& tmp) {
                   std::ifstream in(kDir + "memorysidecaches.tar.bz2", std::ios::binary);
                   std::string bytes((std::istreambuf_iterator<char>(in)), {});
                   return DiscoverFromFsroot(
                       Write(tmp + "/cut.tar.bz2", bytes.substr(0, bytes.size() / 3)));
                 },
                 absl::StatusCode::kInvalidArgument, "cut.tar.bz2: not a readable .tar.bz2"},
        BadInput{"NotATarball",
                 [](const std::string& tmp) {
                   return DiscoverFromFsroot(Write(tmp + "/junk.tar.bz2", "hello"));
                 },
                 absl::StatusCode::kInvalidArgument, "junk.tar.bz2: not a readable .tar.bz2"},
        BadInput{"TarballOfSomethingElse",
                 [](const std::string& tmp) {
                   Write(tmp + "/a.txt", "x");
                   EXPECT_EQ(std::system(("tar cjf " + tmp + "/other.tar.bz2 -C " + tmp +
                                          " a.txt")
                                             .c_str()),
                             0);
                   return DiscoverFromFsroot(tmp + "/other.tar.bz2");
                 },
                 absl::StatusCode::kInvalidArgument, "other.tar.bz2: the tarball holds no"},
        BadInput{"BadNodeCpulistInDump",
                 [](const std::string& tmp) {
                   EXPECT_EQ(std::system(("tar xjf " + kDir + "memorysidecaches.tar.bz2 -C " +
                                          tmp)
                                             .c_str()),
                             0);
                   Write(tmp + "/memorysidecaches/sys/devices/system/node/node1/cpulist",
                         "1,,5\n");
                   return DiscoverFromFsroot(tmp);
                 },
                 absl::StatusCode::kInvalidArgument, "node/node1/cpulist: cpu-list"},
        BadInput{"MissingXml", [](const std::string& tmp) { return DiscoverFromXml(tmp + "/x"); },
                 absl::StatusCode::kNotFound, "/x: no such file"},
        BadInput{"EmptyXml",
                 [](const std::string& tmp) { return DiscoverFromXml(Write(tmp + "/e.xml", "")); },
                 absl::StatusCode::kInvalidArgument, "e.xml: empty file"},
        BadInput{"MalformedXml",
                 [](const std::string& tmp) {
                   return DiscoverFromXml(Write(
                       tmp + "/m.xml", "<?xml version=\"1.0\"?>\n<topology version=\"2.0\">\n"
                                       "<object type=\"Machine\" os_index=\"0\" cpuset=\""));
                 },
                 absl::StatusCode::kInvalidArgument, "m.xml: hwloc cannot"},
        BadInput{"NotTopologyXml",
                 [](const std::string& tmp) {
                   return DiscoverFromXml(Write(tmp + "/n.xml", "<html></html>"));
                 },
                 absl::StatusCode::kInvalidArgument, "n.xml: not an hwloc XML topology"},
        BadInput{"HwlocThreeXml",
                 [](const std::string&) {
                   return DiscoverFromXml(kDir + "AMD-19h-Zen4-2xEpyc-9654.xml");
                 },
                 absl::StatusCode::kInvalidArgument, "use the *.hwloc2.xml copy"},
        BadInput{"UnknownSyntheticType",
                 [](const std::string&) { return DiscoverSynthetic("package:2 gizmo:4 pu:2"); },
                 absl::StatusCode::kInvalidArgument, "unknown object type \"gizmo\""},
        BadInput{"SyntheticTokenWithoutCount",
                 [](const std::string&) { return DiscoverSynthetic("package:2 core pu:2"); },
                 absl::StatusCode::kInvalidArgument, "token \"core\" is not <type>:<count>"},
        BadInput{"SyntheticZeroCount",
                 [](const std::string&) { return DiscoverSynthetic("package:0 pu:2"); },
                 absl::StatusCode::kInvalidArgument, "count \"0\" is not a positive number"},
        BadInput{"EmptySynthetic", [](const std::string&) { return DiscoverSynthetic(""); },
                 absl::StatusCode::kInvalidArgument, "empty synthetic description"}),
    [](const auto& param_info) { return param_info.param.name; });

}  // namespace
}  // namespace huygens
