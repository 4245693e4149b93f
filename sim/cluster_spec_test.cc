#include "sim/cluster_spec.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace huygens::sim {
namespace {

using ::testing::HasSubstr;

TEST(PresetTest, EveryPresetHasTheRealServersShape) {
  struct Case {
    const char* name;
    int cpus, sockets, numa_nodes, threads_per_core, l3_groups;
    int sibling_of_0;  // the other thread of cpu 0's core, -1 without SMT
  };
  const Case cases[] = {
      {"epyc-9654-2s-nps1", 384, 2, 2, 2, 24, 192},
      {"epyc-9654-2s-nps4", 384, 2, 8, 2, 24, 192},
      {"xeon-8480-2s", 224, 2, 2, 2, 2, 112},
      {"xeon-6230-2s-snc2", 80, 2, 4, 2, 2, 40},
      {"kunpeng-920-2s", 128, 2, 4, 1, 4, -1},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto topo = PresetTopology(c.name);
    ASSERT_TRUE(topo.ok()) << topo.status();
    EXPECT_EQ(topo->NumCpus(), c.cpus);
    EXPECT_EQ(topo->NumSockets(), c.sockets);
    EXPECT_EQ(static_cast<int>(topo->NumaNodeIdsWithCpus().size()), c.numa_nodes);
    EXPECT_EQ(topo->CpusPerCore(), c.threads_per_core);
    EXPECT_EQ(topo->NumL3Groups(), c.l3_groups);
    if (c.sibling_of_0 >= 0) {
      EXPECT_EQ(topo->SiblingsOf(0), CpuSet({0, c.sibling_of_0}));
    }
    // Every NUMA node holds the same number of CPUs and lies in one socket.
    for (int numa : topo->NumaNodeIdsWithCpus()) {
      EXPECT_EQ(topo->CpusInNumaNode(numa).Size(), c.cpus / c.numa_nodes);
      EXPECT_EQ(topo->SocketsInNumaNode(numa).size(), 1u);
    }
    // Remote NUMA nodes are farther than local ones.
    const auto ids = topo->NumaNodeIdsWithCpus();
    EXPECT_LT(topo->Distance(ids.front(), ids.front()), topo->Distance(ids.front(), ids.back()));
  }
}

TEST(PresetTest, EpycNps4NumaNodesFollowCcdBoundaries) {
  auto topo = PresetTopology("epyc-9654-2s-nps4");
  ASSERT_TRUE(topo.ok()) << topo.status();
  // 12 L3 groups (CCDs) of 8 cores per socket, 3 per NUMA node.
  for (int numa : topo->NumaNodeIdsWithCpus()) {
    EXPECT_EQ(topo->L3GroupsInNumaNode(numa).size(), 3u);
  }
}

TEST(PresetTest, AnUnknownPresetIsNamedWithTheKnownOnes) {
  auto topo = PresetTopology("epyc-7763");
  ASSERT_FALSE(topo.ok());
  EXPECT_THAT(std::string(topo.status().message()), HasSubstr("epyc-9654-2s-nps4"));
}

TEST(ClusterSpecTest, AFullGroupIsParsed) {
  auto spec = ParseClusterSpec(R"(nodeGroups:
  - name: big
    count: 3
    topology: {preset: epyc-9654-2s-nps4}
    systemCpus: "0,192"
    mode: allocatable
    topologyPolicy: restricted
    topologyScope: pod
    numaStrategy: spread
    bindPolicy: full-cores
    labels: {zone: a}
    taints: [{key: dedicated, value: db, effect: NoSchedule}]
    memory: 512Gi
    maxPods: 200
  - name: small
    topology: {synthetic: "package:1 core:4 pu:2"}
    systemCpuCount: 1
)",
                               "c.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->groups.size(), 2u);
  const NodeGroupSpec& g = spec->groups[0];
  EXPECT_EQ(g.name, "big");
  EXPECT_EQ(g.count, 3);
  EXPECT_EQ(g.system_cpus, CpuSet({0, 192}));
  EXPECT_EQ(g.topology_policy, TopologyPolicy::kRestricted);
  EXPECT_EQ(g.topology_scope, TopologyScope::kPod);
  EXPECT_EQ(g.numa_strategy, NumaStrategy::kLeastAllocated);
  EXPECT_EQ(g.bind_policy, BindPolicy::kFullCores);
  EXPECT_EQ(g.labels.at("zone"), "a");
  ASSERT_EQ(g.taints.size(), 1u);
  EXPECT_EQ(g.taints[0].effect, sched::TaintEffect::kNoSchedule);
  EXPECT_EQ(g.memory_bytes, int64_t{512} << 30);
  EXPECT_EQ(g.max_pods, 200);
  EXPECT_EQ(spec->groups[1].count, 1);  // default
  EXPECT_EQ(spec->groups[1].topology->NumCpus(), 8);
  EXPECT_EQ(spec->groups[1].system_cpu_count, 1);
  EXPECT_EQ(spec->TotalNodes(), 4);
}

TEST(ClusterSpecTest, DevicesAreACountPerNumaNodeWithCpusOrAMapOfNumaNodes) {
  auto spec = ParseClusterSpec(R"(nodeGroups:
  - name: a
    topology: {synthetic: "package:2 numa:2 core:4 pu:2"}
    devices:
      example.com/gpu: {0: 2, 3: 1}
      example.com/vf: 4
)",
                               "c.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->groups[0].devices,
            (NodeDevices{{"example.com/gpu", {{0, 2}, {3, 1}}},
                         {"example.com/vf", {{0, 4}, {1, 4}, {2, 4}, {3, 4}}}}));
}

TEST(ClusterSpecTest, ATopologyFileIsLoadedRelativeToTheSpec) {
  const std::string dir = std::string(HUYGENS_FIXTURES) + "/topologies/";
  auto spec = ParseClusterSpec(R"(nodeGroups:
  - name: genoa
    topology: {file: AMD-19h-Zen4-2xEpyc-9654.hwloc2.xml, numaSplit: "per-socket:4"}
)",
                               dir + "cluster.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->groups[0].topology->NumCpus(), 384);
  EXPECT_EQ(spec->groups[0].topology->NumaNodeIdsWithCpus().size(), 8u);
}

// Every bad input names the file, the line and the field.
TEST(ClusterSpecTest, BadInputIsReportedWithFileLineAndField) {
  struct Case {
    const char* what;
    const char* yaml;
    const char* expected;  // substring of the message
  };
  const Case cases[] = {
      {"an unknown top-level field", "nodegroups: []\n", "c.yaml:1:1: cluster.nodegroups: unknown field"},
      {"an unknown group field",
       "nodeGroups:\n  - name: a\n    topology: {preset: xeon-8480-2s}\n    cpus: 4\n",
       "c.yaml:4:5: nodeGroups[0].cpus: unknown field"},
      {"a negative count",
       "nodeGroups:\n  - name: a\n    count: -2\n    topology: {preset: xeon-8480-2s}\n",
       "c.yaml:3:12: nodeGroups[0].count: -2 is out of range"},
      {"a count that is not a number",
       "nodeGroups:\n  - name: a\n    count: many\n    topology: {preset: xeon-8480-2s}\n",
       "c.yaml:3:12: nodeGroups[0].count: expected an integer"},
      {"memory in a wrong unit",
       "nodeGroups:\n  - name: a\n    topology: {preset: xeon-8480-2s}\n    memory: 12GB\n",
       "c.yaml:4:13: nodeGroups[0].memory: \"12GB\" is not a memory quantity"},
      {"a topology file that does not load",
       "nodeGroups:\n  - name: a\n    topology: {file: /nonexistent/machine.xml}\n",
       "c.yaml:3:22: nodeGroups[0].topology.file: "},
      {"an unknown preset",
       "nodeGroups:\n  - name: a\n    topology: {preset: pentium}\n",
       "c.yaml:3:24: nodeGroups[0].topology.preset: unknown preset"},
      {"a synthetic description hwloc rejects",
       "nodeGroups:\n  - name: a\n    topology: {synthetic: \"socket:x\"}\n",
       "c.yaml:3:27: nodeGroups[0].topology.synthetic:"},
      {"two topology sources",
       "nodeGroups:\n  - name: a\n    topology: {preset: xeon-8480-2s, synthetic: \"core:2\"}\n",
       "c.yaml:3:15: nodeGroups[0].topology: give exactly one of"},
      {"an unknown policy",
       "nodeGroups:\n  - name: a\n    topology: {preset: xeon-8480-2s}\n    topologyPolicy: strict\n",
       "c.yaml:4:21: nodeGroups[0].topologyPolicy: unknown value \"strict\""},
      {"system CPUs outside the machine",
       "nodeGroups:\n  - name: a\n    topology: {preset: xeon-6230-2s-snc2}\n    systemCpus: \"0,100\"\n",
       "c.yaml:4:17: nodeGroups[0].systemCpus: CPUs 100 are not online CPUs"},
      {"a bad cpu-list", "nodeGroups:\n  - name: a\n    topology: {preset: xeon-6230-2s-snc2}\n    systemCpus: \"3-1\"\n",
       "c.yaml:4:17: nodeGroups[0].systemCpus: "},
      {"a taint without effect",
       "nodeGroups:\n  - name: a\n    topology: {preset: xeon-8480-2s}\n    taints: [{key: k}]\n",
       "c.yaml:4:14: nodeGroups[0].taints[0].effect: required"},
      {"a duplicate group name",
       "nodeGroups:\n  - {name: a, topology: {preset: xeon-8480-2s}}\n  - {name: a, topology: {preset: xeon-8480-2s}}\n",
       "c.yaml:3:12: nodeGroups[1].name: duplicate group name"},
      {"a YAML syntax error", "nodeGroups: [\n", "c.yaml:2:1: YAML syntax error"},
      {"no node at all", "nodeGroups:\n  - {name: a, count: 0, topology: {preset: xeon-8480-2s}}\n",
       "c.yaml:2:3: nodeGroups: the cluster has no node"},
      {"an unknown memory manager policy",
       "nodeGroups:\n  - name: a\n    topology: {preset: xeon-8480-2s}\n    memoryManager: {policy: static}\n",
       "c.yaml:4:29: nodeGroups[0].memoryManager.policy: unknown value \"static\" (one of None, Static)"},
      {"a Static memory manager without reserved memory",
       "nodeGroups:\n  - name: a\n    topology: {preset: xeon-8480-2s}\n    memoryManager: {policy: Static}\n",
       "nodeGroups[0].memoryManager.reservedMemory: "},
      {"reserved memory on a NUMA node the machine lacks",
       "nodeGroups:\n  - name: a\n    topology: {preset: xeon-8480-2s}\n    memoryManager:\n"
       "      reservedMemory: [{numaNode: 5, limits: {memory: 1Gi}}]\n",
       "c.yaml:5:23: nodeGroups[0].memoryManager.reservedMemory: "},
      {"a reservation of an unknown resource",
       "nodeGroups:\n  - name: a\n    topology: {preset: xeon-8480-2s}\n    memoryManager:\n"
       "      reservedMemory: [{numaNode: 0, limits: {cpu: 1}}]\n",
       "nodeGroups[0].memoryManager.reservedMemory[0].limits.cpu: unknown field"},
      {"a NUMA node reserved twice",
       "nodeGroups:\n  - name: a\n    topology: {preset: xeon-8480-2s}\n    memoryManager:\n"
       "      reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}, {numaNode: 0, limits: {memory: 1Gi}}]\n",
       "nodeGroups[0].memoryManager.reservedMemory[1].numaNode: NUMA node 0 is listed twice"},
      {"a hugepage size Linux on x86 does not have",
       "nodeGroups:\n  - name: a\n    topology: {preset: xeon-8480-2s}\n    memoryManager: {hugepages: {4Mi: 1}}\n",
       "nodeGroups[0].memoryManager.hugepages.4Mi: unknown field"},
      {"more hugepages than a NUMA node's memory",
       "nodeGroups:\n  - name: a\n    topology: {synthetic: \"package:1 numa:2 core:2 pu:1\"}\n    memory: 8Gi\n"
       "    memoryManager: {hugepages: {1Gi: 5}}\n",
       "nodeGroups[0].memoryManager.hugepages: the hugepages exceed NUMA node 0's memory of "
       "4294967296 bytes"},
      {"a device resource without a domain",
       "nodeGroups:\n  - name: a\n    topology: {preset: xeon-8480-2s}\n    devices: {gpu: 2}\n",
       "c.yaml:4:15: nodeGroups[0].devices.gpu: a device-plugin resource name has a domain"},
      {"devices on a NUMA node the machine lacks",
       "nodeGroups:\n  - name: a\n    topology: {preset: xeon-8480-2s}\n    devices: {nvidia.com/gpu: {9: 1}}\n",
       "nodeGroups[0].devices.nvidia.com/gpu.9: NUMA node 9 does not exist"},
      {"so many hugepages that their bytes would overflow",
       "nodeGroups:\n  - name: a\n    topology: {synthetic: \"package:1 numa:2 core:2 pu:1\"}\n"
       "    memoryManager: {hugepages: {1Gi: 1099511627776}}\n",
       "nodeGroups[0].memoryManager.hugepages: the hugepages exceed NUMA node 0's memory"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto spec = ParseClusterSpec(c.yaml, "c.yaml");
    ASSERT_FALSE(spec.ok());
    EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(spec.status().message()), HasSubstr(c.expected));
  }
}

TEST(ClusterSpecTest, AMemoryManagerGivesEveryNumaNodeItsShareOfMemoryAndTheHugepages) {
  auto spec = ParseClusterSpec(R"(nodeGroups:
  - name: a
    topology: {synthetic: "package:2 numa:2 core:4 pu:2"}
    memory: 64Gi
    memoryManager:
      policy: Static
      hugepages: {1Gi: 2, 2Mi: 512}
      reservedMemory:
        - {numaNode: 1, limits: {memory: 512Mi, hugepages-2Mi: 4Mi}}
  - name: b
    topology: {synthetic: "package:1 numa:2 core:2 pu:1"}
    memoryManager: {}
  - name: c
    topology: {synthetic: "package:1 numa:2 core:2 pu:1"}
)",
                               "c.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const NodeGroupSpec& a = spec->groups[0];
  ASSERT_TRUE(a.memory_manager.has_value());
  EXPECT_TRUE(a.memory_manager->static_policy);
  EXPECT_EQ(a.memory_manager->reserved_memory,
            (ReservedMemory{{1, {{"memory", uint64_t{512} << 20}, {"hugepages-2Mi", uint64_t{4} << 20}}}}));
  ASSERT_EQ(a.topology->NumaNodes().size(), 4u);
  for (const NumaNode& n : a.topology->NumaNodes()) {
    EXPECT_EQ(n.memory_bytes, uint64_t{16} << 30) << "NUMA node " << n.id;
    EXPECT_EQ(n.hugepages, (std::map<uint64_t, uint64_t>{{uint64_t{2} << 20, 512},
                                                         {uint64_t{1} << 30, 2}}))
        << "NUMA node " << n.id;
  }
  // `memoryManager: {}` is the None policy: memory modelled, nothing reserved.
  ASSERT_TRUE(spec->groups[1].memory_manager.has_value());
  EXPECT_FALSE(spec->groups[1].memory_manager->static_policy);
  EXPECT_FALSE(spec->groups[2].memory_manager.has_value()) << "no key: memory not modelled";
}

TEST(NodeListTest, NodesOfOneSizeAndMemoryFormOneGroup) {
  NodeGroupSpec defaults;
  defaults.topology_policy = TopologyPolicy::kRestricted;
  auto spec = ParseNodeListCsv(
      "sn,cpu_milli,memory_mib,gpu,model\n"
      "n0,32000,262144,0,\n"
      "n1,96000,786432,8,V100M32\n"
      "n2,32000,262144,0,\n"
      "n3,224000,1048576,0,\n",
      "nodes.csv", defaults);
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->groups.size(), 3u);
  EXPECT_EQ(spec->groups[0].count, 2);
  EXPECT_EQ(spec->groups[0].topology->NumCpus(), 32);
  EXPECT_EQ(spec->groups[0].memory_bytes, int64_t{262144} << 20);
  EXPECT_EQ(spec->groups[0].topology_policy, TopologyPolicy::kRestricted);
  EXPECT_EQ(spec->groups[1].topology->NumCpus(), 96);
  // A size that matches a preset gets the preset.
  EXPECT_EQ(spec->groups[2].shape, "preset xeon-8480-2s");
}

TEST(NodeListTest, EverySizeOfTheRealNodeListHasAShape) {
  for (int cpus : {8, 16, 32, 48, 64, 82, 96, 104, 128}) {
    SCOPED_TRACE(cpus);
    auto g = ShapeForCpuCount(cpus);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(g->topology->NumCpus(), cpus);
  }
}

TEST(NodeListTest, BadRowsAreNamedByLineAndColumn) {
  auto spec = ParseNodeListCsv("sn,cpu_milli,memory_mib,gpu,model\nn0,abc,1,0,\n", "nodes.csv", {});
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("nodes.csv:2: column cpu_milli"));
  spec = ParseNodeListCsv("sn,memory_mib\nn0,1\n", "nodes.csv", {});
  ASSERT_FALSE(spec.ok());
  EXPECT_THAT(std::string(spec.status().message()), HasSubstr("missing column \"cpu_milli\""));
}

}  // namespace
}  // namespace huygens::sim
