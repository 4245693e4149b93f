#include "topology/nrt.h"

#include <functional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/json.h"
#include "topology/testing/machines.h"
#include "yaml-cpp/yaml.h"

namespace huygens {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;

// YAML (as kubectl prints objects) to JSON: plain scalars that read as integers become
// integers, quoted scalars stay strings.
json YamlToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : node) out[kv.first.as<std::string>()] = YamlToJson(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& item : node) out.push_back(YamlToJson(item));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string text = node.Scalar();
      if (node.Tag() == "?") {
        int64_t value = 0;
        if (YAML::convert<int64_t>::decode(node, value)) return value;
      }
      return text;
    }
    default:
      return nullptr;
  }
}

json Fixture(const std::string& name) {
  return YamlToJson(YAML::LoadFile(std::string(HUYGENS_FIXTURES) + "/nrt/" + name));
}

const json* FindByName(const json& list, std::string_view name) {
  for (const json& item : list) {
    if (item.at("name") == name) return &item;
  }
  return nullptr;
}

// ---- BuildNrt ---------------------------------------------------------------------------------

TEST(BuildNrt, DescribesTwoSocketsWithPoolsMemoryAndHugepages) {
  const CpuTopology t = testing::TwoSocketsSmt();
  NrtInput in;
  in.node_name = "worker-1";
  in.topology = &t;
  in.system_cpus = {0, 8};
  in.exclusive_cpus = {1, 9, 4};
  in.policy = "single-numa-node";
  in.scope = "pod";
  in.memory_reserved = {{0, {{"memory", 1ull << 30}}}};
  in.memory_used = {{0, {{"memory", 2ull << 30}}}};
  in.zone_attributes = {{1, {{"capacityFactor", "0.8"}}}};
  absl::StatusOr<json> nrt = BuildNrt(in);
  ASSERT_TRUE(nrt.ok()) << nrt.status();

  EXPECT_EQ((*nrt)["apiVersion"], "topology.node.k8s.io/v1alpha2");
  EXPECT_EQ((*nrt)["kind"], "NodeResourceTopology");
  EXPECT_EQ((*nrt)["metadata"]["name"], "worker-1");
  EXPECT_EQ((*nrt)["topologyPolicies"], json::array({"SingleNUMANodePodLevel"}));
  EXPECT_EQ((*nrt)["attributes"], json::parse(R"([
      {"name":"topologyManagerPolicy","value":"single-numa-node"},
      {"name":"topologyManagerScope","value":"pod"}])"));

  // Node 0: CPUs 0-3,8-11; system 0,8 leaves 6 allocatable; 1 and 9 held leave 4 available.
  // Hugepages: 512 x 2 MiB = 1 GiB and 2 x 1 GiB = 2 GiB. Memory: 16 GiB, minus 1 GiB reserved
  // and the 3 GiB of hugepages = 12 GiB allocatable, minus 2 GiB used = 10 GiB available.
  const json expected_node0 = json::parse(R"({
      "name":"node-0","type":"Node",
      "costs":[{"name":"node-0","value":10},{"name":"node-1","value":21}],
      "resources":[
        {"name":"cpu","capacity":"8","allocatable":"6","available":"4"},
        {"name":"memory","capacity":"17179869184","allocatable":"12884901888",
         "available":"10737418240"},
        {"name":"hugepages-2Mi","capacity":"1073741824","allocatable":"1073741824",
         "available":"1073741824"},
        {"name":"hugepages-1Gi","capacity":"2147483648","allocatable":"2147483648",
         "available":"2147483648"}]})");
  const json* node0 = FindByName((*nrt)["zones"], "node-0");
  ASSERT_NE(node0, nullptr);
  EXPECT_EQ(*node0, expected_node0);

  // Node 1: 8 allocatable, CPU 4 held; its zone attributes are written.
  const json* node1 = FindByName((*nrt)["zones"], "node-1");
  ASSERT_NE(node1, nullptr);
  EXPECT_EQ((*node1)["resources"][0],
            json::parse(R"({"name":"cpu","capacity":"8","allocatable":"8","available":"7"})"));
  EXPECT_EQ((*node1)["attributes"], json::parse(R"([{"name":"capacityFactor","value":"0.8"}])"));
  EXPECT_EQ((*node1)["costs"], json::parse(R"([{"name":"node-0","value":21},
                                               {"name":"node-1","value":10}])"));

  const json& annotations = (*nrt)["metadata"]["annotations"];
  EXPECT_EQ(json::parse(annotations["huygens.io/pools"].get<std::string>()),
            json::parse(R"({"version":1,"system":"0,8","user":"1-7,9-15","exclusive":"1,4,9",
                            "mode":"allocatable"})"));
  EXPECT_EQ(annotations["huygens.io/cpu-topology"], ToJsonString(t));
}

TEST(BuildNrt, IsolatedModeOffersOnlyTheIsolatedCpus) {
  const CpuTopology t = testing::OfflineCpusAdjacentSiblings();  // CPU 2 isolated
  NrtInput in{.node_name = "edge", .topology = &t, .mode = "isolated"};
  absl::StatusOr<json> nrt = BuildNrt(in);
  ASSERT_TRUE(nrt.ok()) << nrt.status();
  // Capacity counts the 4 online CPUs (offline 4-5 are not counted).
  EXPECT_EQ((*nrt)["zones"][0]["resources"][0],
            json::parse(R"({"name":"cpu","capacity":"4","allocatable":"1","available":"1"})"));
  EXPECT_EQ(json::parse((*nrt)["metadata"]["annotations"]["huygens.io/pools"].get<std::string>())
                ["user"],
            "2");
  in.exclusive_cpus = {1};
  absl::StatusOr<json> bad = BuildNrt(in);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("exclusive_cpus: CPUs \"1\" are not in the user pool \"2\""));
}

TEST(BuildNrt, DevicesFollowTheMemoryResourcesOfTheirZone) {
  const CpuTopology t = testing::TwoSocketsSmt();
  NrtInput in{.node_name = "n", .topology = &t};
  in.devices[1]["nvidia.com/gpu"] = {.allocatable = 2, .available = 1};
  in.devices[1]["example.com/vf"] = {.allocatable = 8, .available = 8};
  absl::StatusOr<json> nrt = BuildNrt(in);
  ASSERT_TRUE(nrt.ok()) << nrt.status();
  const json* zone0 = FindByName((*nrt)["zones"], "node-0");
  const json* zone1 = FindByName((*nrt)["zones"], "node-1");
  ASSERT_NE(zone0, nullptr);
  ASSERT_NE(zone1, nullptr);
  EXPECT_EQ(FindByName((*zone0)["resources"], "nvidia.com/gpu"), nullptr);
  const json& resources = (*zone1)["resources"];
  ASSERT_GE(resources.size(), 2u);
  EXPECT_EQ(resources[resources.size() - 2],
            json::parse(R"({"name":"example.com/vf","capacity":"8","allocatable":"8","available":"8"})"));
  EXPECT_EQ(resources.back(),
            json::parse(R"({"name":"nvidia.com/gpu","capacity":"2","allocatable":"2","available":"1"})"));
}

TEST(BuildNrt, MemoryOnlyNodesAreZonesWithoutCpus) {
  const CpuTopology t = testing::SparseNumaWithMemoryOnlyNode();
  absl::StatusOr<json> nrt = BuildNrt({.node_name = "cxl", .topology = &t});
  ASSERT_TRUE(nrt.ok()) << nrt.status();
  ASSERT_EQ((*nrt)["zones"].size(), 5u);
  const json* cxl = FindByName((*nrt)["zones"], "node-250");
  ASSERT_NE(cxl, nullptr);
  EXPECT_EQ((*cxl)["resources"][0]["capacity"], "0");
  EXPECT_EQ((*cxl)["resources"][1]["capacity"], std::to_string(64ull << 30));
  EXPECT_EQ((*cxl)["costs"].size(), 5u);
  EXPECT_EQ((*cxl)["costs"][0], json::parse(R"({"name":"node-0","value":30})"));
  EXPECT_EQ((*nrt)["topologyPolicies"], json::array({"None"}));
}

TEST(BuildNrt, CostsUseTheKernelDefaultsWithoutADistanceTable) {
  absl::StatusOr<CpuTopology> t = TopologyFromJson(
      R"({"cpus":[{"id":0,"core":0,"socket":0,"numa":0},{"id":1,"core":1,"socket":1,"numa":1}]})");
  ASSERT_TRUE(t.ok()) << t.status();
  absl::StatusOr<json> nrt = BuildNrt({.node_name = "n", .topology = &*t});
  ASSERT_TRUE(nrt.ok()) << nrt.status();
  EXPECT_EQ((*nrt)["zones"][1]["costs"], json::parse(R"([{"name":"node-0","value":20},
                                                         {"name":"node-1","value":10}])"));
}

TEST(BuildNrt, ReservationsLargerThanTheNodeClampAtZero) {
  const CpuTopology t = testing::OneSocketNoSmt();
  absl::StatusOr<json> nrt = BuildNrt({.node_name = "n",
                                       .topology = &t,
                                       .memory_reserved = {{0, {{"memory", 100ull << 30}}}},
                                       .memory_used = {{0, {{"memory", 1}}}}});
  ASSERT_TRUE(nrt.ok()) << nrt.status();
  EXPECT_EQ((*nrt)["zones"][0]["resources"][1]["allocatable"], "0");
  EXPECT_EQ((*nrt)["zones"][0]["resources"][1]["available"], "0");
}

// ---- Memory figures ---------------------------------------------------------------------------

constexpr uint64_t kMi = 1ull << 20, kGi = 1ull << 30;

struct MemoryCase {
  const char* name;
  NumaMemory reserved, used;
  int numa;
  std::string resource;
  NrtMemoryFigures want;
};
void PrintTo(const MemoryCase& c, std::ostream* os) { *os << c.name; }

class NrtMemoryFiguresTest : public ::testing::TestWithParam<MemoryCase> {};

// TwoSocketsSmt: node 0 has 16 GiB, 512 x 2 MiB and 2 x 1 GiB hugepages; node 1 16 GiB and
// 512 x 2 MiB.
TEST_P(NrtMemoryFiguresTest, FollowKubeletsMemoryManager) {
  const CpuTopology t = testing::TwoSocketsSmt();
  const MemoryCase& c = GetParam();
  absl::StatusOr<std::map<int, std::map<std::string, NrtMemoryFigures>>> got =
      NrtMemory(t, c.reserved, c.used);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->at(c.numa).at(c.resource), c.want);
  // BuildNrt writes the same figures into the zone.
  absl::StatusOr<json> nrt = BuildNrt(
      {.node_name = "n", .topology = &t, .memory_reserved = c.reserved, .memory_used = c.used});
  ASSERT_TRUE(nrt.ok()) << nrt.status();
  const json* zone = FindByName((*nrt)["zones"], "node-" + std::to_string(c.numa));
  ASSERT_NE(zone, nullptr);
  const json* resource = FindByName((*zone)["resources"], c.resource);
  ASSERT_NE(resource, nullptr);
  EXPECT_EQ(*resource, json({{"name", c.resource},
                             {"capacity", std::to_string(c.want.capacity)},
                             {"allocatable", std::to_string(c.want.allocatable)},
                             {"available", std::to_string(c.want.available)}}));
}

INSTANTIATE_TEST_SUITE_P(
    NrtMemory, NrtMemoryFiguresTest,
    ::testing::Values(
        MemoryCase{"MemoryLeavesOutTheNodesHugepages", {}, {}, 0, "memory",
                   {16 * kGi, 13 * kGi, 13 * kGi}},
        MemoryCase{"MemoryOfANodeWithOnly2MiPagesLeavesOutThoseOnly", {}, {}, 1, "memory",
                   {16 * kGi, 15 * kGi, 15 * kGi}},
        MemoryCase{"TwoMebibytePagesWithoutReservationsAreAllAvailable", {}, {}, 0,
                   "hugepages-2Mi", {kGi, kGi, kGi}},
        MemoryCase{"ReservedHugepagesLeaveAllocatable",
                   {{0, {{"hugepages-1Gi", kGi}}}}, {}, 0, "hugepages-1Gi",
                   {2 * kGi, kGi, kGi}},
        MemoryCase{"UsedHugepagesLeaveAvailable", {}, {{0, {{"hugepages-2Mi", 100 * kMi}}}}, 0,
                   "hugepages-2Mi", {kGi, kGi, kGi - 100 * kMi}},
        MemoryCase{"AHugepageReservationDoesNotTouchMemory",
                   {{0, {{"hugepages-2Mi", 512 * kMi}}}}, {}, 0, "memory",
                   {16 * kGi, 13 * kGi, 13 * kGi}},
        MemoryCase{"ReservedAndUsedMemoryBothCount", {{1, {{"memory", kGi}}}},
                   {{1, {{"memory", 4 * kGi}}}}, 1, "memory", {16 * kGi, 14 * kGi, 10 * kGi}},
        MemoryCase{"AnotherNodesReservationDoesNotCount", {{1, {{"memory", kGi}}}}, {}, 0,
                   "memory", {16 * kGi, 13 * kGi, 13 * kGi}},
        MemoryCase{"UsedBeyondAllocatableClampsAvailableAtZero",
                   {{0, {{"hugepages-1Gi", kGi}}}}, {{0, {{"hugepages-1Gi", 5 * kGi}}}}, 0,
                   "hugepages-1Gi", {2 * kGi, kGi, 0}},
        MemoryCase{"ReservedBeyondCapacityClampsAllocatableAtZero",
                   {{0, {{"hugepages-2Mi", 2 * kGi}}}}, {}, 0, "hugepages-2Mi", {kGi, 0, 0}}),
    [](const ::testing::TestParamInfo<MemoryCase>& p) { return std::string(p.param.name); });

TEST(NrtMemory, HugepagesOfMoreThanTheNodesMemoryLeaveNoMemoryAllocatable) {
  absl::StatusOr<CpuTopology> big = TopologyFromJson(
      R"({"cpus":[{"id":0,"core":0,"socket":0,"numa":0}],
          "numaNodes":[{"id":0,"memoryBytes":1073741824,"hugepages":{"1073741824":2}}]})");
  ASSERT_TRUE(big.ok()) << big.status();
  absl::StatusOr<std::map<int, std::map<std::string, NrtMemoryFigures>>> got =
      NrtMemory(*big, {}, {});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->at(0).at("memory"), (NrtMemoryFigures{kGi, 0, 0}));
  EXPECT_EQ(got->at(0).at("hugepages-1Gi"), (NrtMemoryFigures{2 * kGi, 2 * kGi, 2 * kGi}));
}

TEST(NrtMemory, NamesEachPageSizeAsKubeletDoes) {
  absl::StatusOr<CpuTopology> t = TopologyFromJson(
      R"({"cpus":[{"id":0,"core":0,"socket":0,"numa":0}],
          "numaNodes":[{"id":0,"memoryBytes":1,"hugepages":{"65536":0,"2097152":0,
              "33554432":0,"1073741824":0,"17179869184":0,"1099511627776":0,"1536":0}}]})");
  ASSERT_TRUE(t.ok()) << t.status();
  absl::StatusOr<std::map<int, std::map<std::string, NrtMemoryFigures>>> got =
      NrtMemory(*t, {}, {});
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<std::string> names;
  for (const auto& [name, figures] : got->at(0)) names.push_back(name);
  EXPECT_THAT(names, ElementsAre("hugepages-1536", "hugepages-16Gi", "hugepages-1Gi",
                                 "hugepages-1Ti", "hugepages-2Mi", "hugepages-32Mi",
                                 "hugepages-64Ki", "memory"));
}

TEST(UnknownNumaMemory, NamesWhatTheNodeLacksAndWhatItHas) {
  const CpuTopology t = testing::TwoSocketsSmt();
  EXPECT_EQ(UnknownNumaMemory(t, 0, "memory"), std::nullopt);
  EXPECT_EQ(UnknownNumaMemory(t, 0, "hugepages-1Gi"), std::nullopt);
  EXPECT_EQ(UnknownNumaMemory(t, 1, "hugepages-1Gi"),
            "NUMA node 1 has no hugepages-1Gi (it has memory, hugepages-2Mi)");
  EXPECT_EQ(UnknownNumaMemory(t, 7, "memory"), "NUMA node 7 does not exist");
}

struct InputErrorCase {
  const char* name;
  std::function<void(NrtInput&)> edit;
  std::string error;
};
void PrintTo(const InputErrorCase& c, std::ostream* os) { *os << c.name; }

class BuildNrtErrors : public ::testing::TestWithParam<InputErrorCase> {};

TEST_P(BuildNrtErrors, NameTheInputField) {
  static const CpuTopology t = testing::TwoSocketsSmt();
  NrtInput in{.node_name = "n", .topology = &t};
  GetParam().edit(in);
  absl::StatusOr<json> nrt = BuildNrt(in);
  ASSERT_FALSE(nrt.ok());
  EXPECT_THAT(std::string(nrt.status().message()), HasSubstr(GetParam().error));
}

INSTANTIATE_TEST_SUITE_P(
    BuildNrt, BuildNrtErrors,
    ::testing::Values(
        InputErrorCase{"EmptyNodeName", [](NrtInput& in) { in.node_name.clear(); },
                       "node_name: empty"},
        InputErrorCase{"NoTopology", [](NrtInput& in) { in.topology = nullptr; },
                       "topology: missing"},
        InputErrorCase{"UnknownMode", [](NrtInput& in) { in.mode = "shared"; },
                       "mode: unknown node mode \"shared\""},
        InputErrorCase{"UnknownPolicy", [](NrtInput& in) { in.policy = "single-numa"; },
                       "policy: unknown topology manager policy \"single-numa\""},
        InputErrorCase{"UnknownScope", [](NrtInput& in) { in.scope = "node"; },
                       "scope: unknown topology manager scope \"node\""},
        InputErrorCase{"SystemCpusOffTheMachine", [](NrtInput& in) { in.system_cpus = {0, 99}; },
                       "system_cpus: CPUs \"99\" are not on the machine"},
        InputErrorCase{"ExclusiveCpuInTheSystemPool",
                       [](NrtInput& in) {
                         in.system_cpus = {0};
                         in.exclusive_cpus = {0, 1};
                       },
                       "exclusive_cpus: CPUs \"0\" are not in the user pool"},
        InputErrorCase{"ReservationOnAnUnknownNumaNode",
                       [](NrtInput& in) { in.memory_reserved = {{2, {{"memory", 1}}}}; },
                       "memory_reserved[2][\"memory\"]: NUMA node 2 does not exist"},
        InputErrorCase{"ReservationOfAPageSizeTheNodeLacks",
                       [](NrtInput& in) { in.memory_reserved = {{1, {{"hugepages-1Gi", 1}}}}; },
                       "memory_reserved[1][\"hugepages-1Gi\"]: NUMA node 1 has no "
                       "hugepages-1Gi (it has memory, hugepages-2Mi)"},
        InputErrorCase{"UseOfAnUnknownResource",
                       [](NrtInput& in) { in.memory_used = {{0, {{"hugepages-4Mi", 1}}}}; },
                       "memory_used[0][\"hugepages-4Mi\"]: NUMA node 0 has no hugepages-4Mi"},
        InputErrorCase{"UseOnAnUnknownNumaNode",
                       [](NrtInput& in) { in.memory_used = {{-1, {{"memory", 1}}}}; },
                       "memory_used[-1][\"memory\"]: NUMA node -1 does not exist"},
        InputErrorCase{"DevicesOnAnUnknownNumaNode",
                       [](NrtInput& in) { in.devices = {{5, {{"example.com/gpu", {1, 1}}}}}; },
                       "devices[5][\"example.com/gpu\"]: NUMA node 5 does not exist"},
        InputErrorCase{"ADeviceNameWithoutDomain",
                       [](NrtInput& in) { in.devices = {{0, {{"gpu", {1, 1}}}}}; },
                       "devices[0][\"gpu\"]: a device-plugin resource name has a domain"},
        InputErrorCase{"MoreDevicesAvailableThanAllocatable",
                       [](NrtInput& in) { in.devices = {{0, {{"example.com/gpu", {1, 2}}}}}; },
                       "devices[0][\"example.com/gpu\"]: available 2 exceeds allocatable 1"}),
    [](const ::testing::TestParamInfo<InputErrorCase>& p) { return std::string(p.param.name); });

TEST(NrtTopologyPolicy, MatchesNfdNames) {
  struct Case {
    const char* policy;
    const char* scope;
    const char* want;
  };
  for (const Case& c : {Case{"none", "container", "None"}, Case{"none", "pod", "None"},
                        Case{"best-effort", "container", "BestEffortContainerLevel"},
                        Case{"best-effort", "pod", "BestEffortPodLevel"},
                        Case{"restricted", "container", "RestrictedContainerLevel"},
                        Case{"restricted", "pod", "RestrictedPodLevel"},
                        Case{"single-numa-node", "container", "SingleNUMANodeContainerLevel"},
                        Case{"single-numa-node", "pod", "SingleNUMANodePodLevel"}}) {
    absl::StatusOr<std::string> got = NrtTopologyPolicy(c.policy, c.scope);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, c.want) << c.policy << " " << c.scope;
  }
}

// ---- Round trip -------------------------------------------------------------------------------

class NrtRoundTrip : public ::testing::TestWithParam<testing::NamedMachine> {};

TEST_P(NrtRoundTrip, RebuildsTheExactTopologyAndPools) {
  const CpuTopology t = GetParam().make();
  const CpuSet system = t.OnlineCpus().Empty() ? CpuSet() : CpuSet({t.OnlineCpus().Min()});
  const CpuSet user = t.OnlineCpus().Difference(system);
  const CpuSet exclusive = user.Empty() ? CpuSet() : CpuSet({user.Max()});
  absl::StatusOr<json> built = BuildNrt({.node_name = "rt",
                                         .topology = &t,
                                         .system_cpus = system,
                                         .exclusive_cpus = exclusive,
                                         .policy = "restricted"});
  ASSERT_TRUE(built.ok()) << built.status();
  // Through text, as the API server would carry it.
  absl::StatusOr<NrtObject> nrt = ReadNrt(json::parse(built->dump()));
  ASSERT_TRUE(nrt.ok()) << nrt.status();
  EXPECT_EQ(nrt->name, "rt");
  EXPECT_EQ(nrt->zones.size(), t.NumaNodes().size());
  EXPECT_THAT(nrt->topology_policies, ElementsAre("RestrictedContainerLevel"));
  ASSERT_NE(nrt->Attribute("topologyManagerPolicy"), nullptr);
  EXPECT_EQ(*nrt->Attribute("topologyManagerPolicy"), "restricted");
  absl::StatusOr<CpuTopology> back = TopologyFromNrt(*nrt);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, t);
  absl::StatusOr<NrtPools> pools = PoolsFromNrt(*nrt);
  ASSERT_TRUE(pools.ok()) << pools.status();
  EXPECT_EQ(*pools, (NrtPools{.system = system, .user = user, .exclusive = exclusive,
                              .mode = "allocatable"}));
}

INSTANTIATE_TEST_SUITE_P(Machines, NrtRoundTrip, ::testing::ValuesIn(testing::AllNamed()),
                         [](const ::testing::TestParamInfo<testing::NamedMachine>& p) {
                           return std::string(p.param.name);
                         });

// ---- Fixtures ---------------------------------------------------------------------------------

TEST(ReadNrtFixture, RealNfdObjectFromAwsGovcloud) {
  absl::StatusOr<NrtObject> nrt =
      ReadNrt(Fixture("nrt-v1alpha2.nfd-topology-updater.aws-govcloud-2numa.yaml"));
  ASSERT_TRUE(nrt.ok()) << nrt.status();
  EXPECT_EQ(nrt->api_version, kNrtApiVersion);
  EXPECT_EQ(nrt->name, "ip-192-167-190-41.us-gov-west-1.compute.internal");
  EXPECT_THAT(nrt->topology_policies, ElementsAre("SingleNUMANodeContainerLevel"));
  ASSERT_NE(nrt->Attribute("topologyManagerScope"), nullptr);
  EXPECT_EQ(*nrt->Attribute("topologyManagerScope"), "container");
  ASSERT_EQ(nrt->zones.size(), 2u);
  const NrtZone& z0 = nrt->zones[0];
  EXPECT_EQ(z0.NumaId(), 0);
  EXPECT_EQ(nrt->zones[1].NumaId(), 1);
  EXPECT_THAT(z0.costs, ElementsAre(NrtCost{"node-0", 10}, NrtCost{"node-1", 21}));
  ASSERT_NE(z0.Resource("memory"), nullptr);
  EXPECT_EQ(*z0.Resource("memory"),
            (NrtResource{"memory", "267242119168", "265094635520", "265094635520"}));
  ASSERT_NE(z0.Resource("example.com/deviceA"), nullptr);
  EXPECT_EQ(z0.Resource("example.com/deviceA")->available, "7");
  EXPECT_EQ(z0.Resource("cpu"), nullptr);  // that node ran no CPU manager
  // An NFD object carries no Huygens annotation: the error names the object and annotation.
  absl::StatusOr<CpuTopology> t = TopologyFromNrt(*nrt);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr("NodeResourceTopology \"ip-192-167-190-41.us-gov-west-1.compute."
                        "internal\": metadata.annotations[\"huygens.io/cpu-topology\"]: missing"));
}

TEST(ReadNrtFixture, PartialObjectIsAnErrorAtTheTruncatedResource) {
  absl::StatusOr<NrtObject> nrt = ReadNrt(Fixture("nrt-v1alpha2.nfd-issue-1312.partial.yaml"));
  ASSERT_FALSE(nrt.ok());
  EXPECT_THAT(std::string(nrt.status().message()),
              HasSubstr("NodeResourceTopology \"ip-1.1.1.1-west-1.compute.internal\": "
                        "zones[1].resources[0].capacity: missing"));
}

TEST(ReadNrtFixture, V1Alpha1ObjectsAreReadWithoutAvailable) {
  absl::StatusOr<NrtObject> a =
      ReadNrt(Fixture("nrt-v1alpha1.scheduler-plugins.worker-node-A.yaml"));
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->api_version, kNrtApiVersionV1Alpha1);
  EXPECT_EQ(a->name, "worker-node-a");
  ASSERT_EQ(a->zones.size(), 2u);
  ASSERT_NE(a->zones[1].Resource("cpu"), nullptr);
  EXPECT_EQ(*a->zones[1].Resource("cpu"), (NrtResource{"cpu", "4", "3", std::nullopt}));
  for (const char* name : {"nrt-v1alpha1.crd-instance-example.yaml",
                           "nrt-v1alpha1.scheduler-plugins.worker-node-B.yaml"}) {
    absl::StatusOr<NrtObject> nrt = ReadNrt(Fixture(name));
    EXPECT_TRUE(nrt.ok()) << name << ": " << nrt.status();
  }
}

// ---- Malformed objects ------------------------------------------------------------------------

struct ReadErrorCase {
  const char* name;
  std::string object;
  std::string error;
};
void PrintTo(const ReadErrorCase& c, std::ostream* os) { *os << c.name; }

class ReadNrtErrors : public ::testing::TestWithParam<ReadErrorCase> {};

TEST_P(ReadNrtErrors, NameTheObjectAndTheField) {
  absl::StatusOr<NrtObject> nrt = ReadNrt(json::parse(GetParam().object));
  ASSERT_FALSE(nrt.ok());
  EXPECT_EQ(nrt.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(nrt.status().message()), HasSubstr(GetParam().error));
}

// A valid object header for node "n1" followed by `rest`.
std::string Obj(const std::string& rest) {
  return R"({"apiVersion":"topology.node.k8s.io/v1alpha2","kind":"NodeResourceTopology",)"
         R"("metadata":{"name":"n1"})" +
         (rest.empty() ? "" : "," + rest) + "}";
}

INSTANTIATE_TEST_SUITE_P(
    ReadNrt, ReadNrtErrors,
    ::testing::Values(
        ReadErrorCase{"NotAnObject", "[]",
                      "NodeResourceTopology: object: expected an object, got array"},
        ReadErrorCase{"NoApiVersion", R"({"kind":"NodeResourceTopology"})",
                      "NodeResourceTopology: apiVersion: missing"},
        ReadErrorCase{"OtherApiVersion",
                      R"({"apiVersion":"topology.node.k8s.io/v1beta1","kind":"x"})",
                      "apiVersion: unsupported apiVersion \"topology.node.k8s.io/v1beta1\""},
        ReadErrorCase{"OtherKind",
                      R"({"apiVersion":"topology.node.k8s.io/v1alpha2","kind":"Node"})",
                      "kind: expected NodeResourceTopology, got \"Node\""},
        ReadErrorCase{"NoMetadata",
                      R"({"apiVersion":"topology.node.k8s.io/v1alpha2",)"
                      R"("kind":"NodeResourceTopology"})",
                      "metadata: missing"},
        ReadErrorCase{"NameNotAString",
                      R"({"apiVersion":"topology.node.k8s.io/v1alpha2",)"
                      R"("kind":"NodeResourceTopology","metadata":{"name":5}})",
                      "metadata.name: expected a string, got integer"},
        ReadErrorCase{"NoZones", Obj(""), "NodeResourceTopology \"n1\": zones: missing"},
        ReadErrorCase{"ZonesNotAList", Obj(R"("zones":{})"),
                      "NodeResourceTopology \"n1\": zones: expected an array, got object"},
        ReadErrorCase{"ZoneWithoutType", Obj(R"("zones":[{"name":"node-0"}])"),
                      "NodeResourceTopology \"n1\": zones[0].type: missing"},
        ReadErrorCase{"CostValueAsText",
                      Obj(R"("zones":[{"name":"node-0","type":"Node",)"
                          R"("costs":[{"name":"node-0","value":"10"}]}])"),
                      "NodeResourceTopology \"n1\": zones[0].costs[0].value: expected an "
                      "integer, got string"},
        ReadErrorCase{"QuantityAsFloat",
                      Obj(R"("zones":[{"name":"node-0","type":"Node","resources":[)"
                          R"({"name":"cpu","capacity":1.5,"allocatable":"1","available":"1"}]}])"),
                      "zones[0].resources[0].capacity: expected a quantity string or an integer"},
        ReadErrorCase{"V1Alpha2ResourceWithoutAvailable",
                      Obj(R"("zones":[{"name":"node-0","type":"Node","resources":[)"
                          R"({"name":"cpu","capacity":"1","allocatable":"1"}]}])"),
                      "zones[0].resources[0].available: missing"},
        ReadErrorCase{"AttributeWithoutValue", Obj(R"("zones":[],"attributes":[{"name":"x"}])"),
                      "NodeResourceTopology \"n1\": attributes[0].value: missing"},
        ReadErrorCase{"PoliciesNotStrings", Obj(R"("zones":[],"topologyPolicies":[1])"),
                      "topologyPolicies[0]: expected a string, got integer"},
        ReadErrorCase{"AnnotationNotAString",
                      R"({"apiVersion":"topology.node.k8s.io/v1alpha2",)"
                      R"("kind":"NodeResourceTopology","metadata":{"name":"n1",)"
                      R"("annotations":{"a":{}}},"zones":[]})",
                      "metadata.annotations[\"a\"]: expected a string, got object"}),
    [](const ::testing::TestParamInfo<ReadErrorCase>& p) { return std::string(p.param.name); });

NrtObject WithAnnotations(std::map<std::string, std::string> annotations) {
  NrtObject nrt;
  nrt.name = "n1";
  nrt.annotations = std::move(annotations);
  return nrt;
}

TEST(TopologyFromNrt, ABrokenAnnotationNamesTheObjectAndTheJsonField) {
  absl::StatusOr<CpuTopology> t =
      TopologyFromNrt(WithAnnotations({{kCpuTopologyAnnotation, R"({"cpus":[{"id":"0"}]})"}}));
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr("NodeResourceTopology \"n1\": metadata.annotations[\"huygens.io/"
                        "cpu-topology\"]: cpus[0].id: expected an integer, got string"));
}

TEST(TopologyFromNrt, AZoneThatIsNotANumaNodeOfTheTopologyIsAnError) {
  NrtObject nrt = WithAnnotations(
      {{kCpuTopologyAnnotation, ToJsonString(testing::OneSocketNoSmt())}});
  nrt.zones.push_back(NrtZone{.name = "node-3", .type = "Node"});
  absl::StatusOr<CpuTopology> t = TopologyFromNrt(nrt);
  ASSERT_FALSE(t.ok());
  EXPECT_THAT(std::string(t.status().message()),
              HasSubstr("zones[0].name: zone \"node-3\" is not a NUMA node"));
}

TEST(PoolsFromNrt, MalformedPoolsNameTheField) {
  struct Case {
    std::string pools;
    std::string error;
  };
  for (const Case& c : {
           Case{"{", "[json.exception.parse_error"},
           Case{R"({"system":"0","user":"1","exclusive":"","mode":"allocatable"})",
                "huygens.io/pools\"].version: missing"},
           Case{R"({"version":2})", "version: unsupported version 2"},
           Case{R"({"version":1,"system":"0","user":"x","exclusive":"","mode":"allocatable"})",
                "huygens.io/pools\"].user: cpu-list \"x\": bad cpu id"},
           Case{R"({"version":1,"system":"0","user":"1","exclusive":"","mode":"shared"})",
                "mode: unknown mode \"shared\""},
           Case{R"({"version":1,"system":"0","user":"1","mode":"isolated"})",
                "exclusive: missing"},
       }) {
    absl::StatusOr<NrtPools> pools = PoolsFromNrt(WithAnnotations({{kPoolsAnnotation, c.pools}}));
    ASSERT_FALSE(pools.ok()) << c.pools;
    EXPECT_THAT(std::string(pools.status().message()), HasSubstr("NodeResourceTopology \"n1\": "));
    EXPECT_THAT(std::string(pools.status().message()), HasSubstr(c.error));
  }
  EXPECT_THAT(std::string(PoolsFromNrt(WithAnnotations({})).status().message()),
              HasSubstr("metadata.annotations[\"huygens.io/pools\"]: missing"));
}

TEST(NrtZone, NumaIdOnlyForNodeZonesNamedNodeN) {
  EXPECT_EQ((NrtZone{.name = "node-12", .type = "Node"}).NumaId(), 12);
  EXPECT_EQ((NrtZone{.name = "node-12", .type = "Socket"}).NumaId(), std::nullopt);
  EXPECT_EQ((NrtZone{.name = "node-", .type = "Node"}).NumaId(), std::nullopt);
  EXPECT_EQ((NrtZone{.name = "node-01", .type = "Node"}).NumaId(), std::nullopt);
  EXPECT_EQ((NrtZone{.name = "numa-1", .type = "Node"}).NumaId(), std::nullopt);
}

}  // namespace
}  // namespace huygens
