#include "agent/kubelet_config.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace huygens::agent {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kMi = 1ull << 20, kGi = 1ull << 30;

struct GoodCase {
  const char* name;
  std::string text;
  KubeletMemorySettings want;
};
void PrintTo(const GoodCase& c, std::ostream* os) { *os << c.name; }

class KubeletConfigReads : public ::testing::TestWithParam<GoodCase> {};

TEST_P(KubeletConfigReads, TheMemoryManagerSettings) {
  absl::StatusOr<KubeletConfig> c = ParseKubeletConfig(GetParam().text, "/k.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->memory, GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    ParseKubeletConfig, KubeletConfigReads,
    ::testing::Values(
        GoodCase{"AnEmptyFileHasKubeletsDefaults", "", {}},
        GoodCase{"AFileWithoutTheKeysHasKubeletsDefaults",
                 "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                 "cpuManagerPolicy: static\nevictionHard: {memory.available: 100Mi}\n",
                 {}},
        GoodCase{"TheStaticPolicyWithReservationsOnTwoNodes",
                 R"(kind: KubeletConfiguration
memoryManagerPolicy: Static
reservedMemory:
- numaNode: 0
  limits:
    memory: 1Gi
    hugepages-2Mi: 64Mi
- numaNode: 1
  limits: {memory: "536870912", hugepages-1Gi: 1Gi}
)",
                 {KubeletMemoryPolicy::kStatic,
                  {{0, {{"memory", kGi}, {"hugepages-2Mi", 64 * kMi}}},
                   {1, {{"memory", 512 * kMi}, {"hugepages-1Gi", kGi}}}}}},
        GoodCase{"TwoEntriesForOneNodeWithDifferentResourcesAdd",
                 "reservedMemory:\n- {numaNode: 0, limits: {memory: 1G}}\n"
                 "- {numaNode: 0, limits: {hugepages-2Mi: 2Mi}}\n",
                 {KubeletMemoryPolicy::kNone,
                  {{0, {{"memory", 1000000000}, {"hugepages-2Mi", 2 * kMi}}}}}},
        GoodCase{"TheJsonFormOfTheFile",
                 R"({"kind":"KubeletConfiguration","memoryManagerPolicy":"Static",
                     "reservedMemory":[{"numaNode":1,"limits":{"memory":"2Gi"}}]})",
                 {KubeletMemoryPolicy::kStatic, {{1, {{"memory", 2 * kGi}}}}}},
        GoodCase{"TheNonePolicySpelledOut", "memoryManagerPolicy: None\nreservedMemory: []\n",
                 {}}),
    [](const ::testing::TestParamInfo<GoodCase>& p) { return std::string(p.param.name); });

TEST(ParseKubeletConfig, ReadsReservedSystemCpusBesideTheMemorySettings) {
  absl::StatusOr<KubeletConfig> c =
      ParseKubeletConfig("reservedSystemCPUs: \"0,32\"\nmemoryManagerPolicy: Static\n", "/k");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->reserved_system_cpus, (CpuSet{0, 32}));
  EXPECT_EQ(c->memory.policy, KubeletMemoryPolicy::kStatic);
  c = ParseKubeletConfig("kind: KubeletConfiguration\n", "/k");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->reserved_system_cpus, std::nullopt);
}

struct BadCase {
  const char* name;
  std::string text;
  std::string error;
};
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class KubeletConfigErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(KubeletConfigErrors, NameTheFileAndTheField) {
  absl::StatusOr<KubeletConfig> c = ParseKubeletConfig(GetParam().text, "/k.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr(GetParam().error));
}

INSTANTIATE_TEST_SUITE_P(
    ParseKubeletConfig, KubeletConfigErrors,
    ::testing::Values(
        BadCase{"NotYaml", "reservedMemory: [", "kubelet config /k.yaml: not valid YAML"},
        BadCase{"NotAMapping", "- a\n", "kubelet config /k.yaml: file: expected a mapping"},
        BadCase{"ABadReservedCpuList", "reservedSystemCPUs: \"a-b\"\n",
                "kubelet config /k.yaml: reservedSystemCPUs: "},
        BadCase{"APolicyInTheWrongCase", "memoryManagerPolicy: static\n",
                "memoryManagerPolicy: \"static\" is not None or Static"},
        BadCase{"TheWindowsOnlyPolicy", "memoryManagerPolicy: BestEffort\n",
                "memoryManagerPolicy: \"BestEffort\" is not None or Static"},
        BadCase{"APolicyThatIsAList", "memoryManagerPolicy: [Static]\n",
                "memoryManagerPolicy: expected a string"},
        BadCase{"ReservedMemoryNotAList", "reservedMemory: {numaNode: 0}\n",
                "reservedMemory: expected a list"},
        BadCase{"AnEntryNotAMapping", "reservedMemory: [0]\n",
                "reservedMemory[0]: expected a mapping with numaNode and limits"},
        BadCase{"AnEntryWithoutNumaNode", "reservedMemory: [{limits: {memory: 1Gi}}]\n",
                "reservedMemory[0].numaNode: missing"},
        BadCase{"ANegativeNumaNode", "reservedMemory: [{numaNode: -1, limits: {memory: 1Gi}}]\n",
                "reservedMemory[0].numaNode: \"-1\" is not a NUMA node id"},
        BadCase{"ANumaNodeThatIsText",
                "reservedMemory: [{numaNode: zero, limits: {memory: 1Gi}}]\n",
                "reservedMemory[0].numaNode: \"zero\" is not a NUMA node id"},
        BadCase{"ANumaNodeTooLarge",
                "reservedMemory: [{numaNode: 99999999999, limits: {memory: 1Gi}}]\n",
                "reservedMemory[0].numaNode: \"99999999999\" is not a NUMA node id"},
        BadCase{"AnEntryWithoutLimits", "reservedMemory: [{numaNode: 0}]\n",
                "reservedMemory[0].limits: missing"},
        BadCase{"LimitsNotAMapping", "reservedMemory: [{numaNode: 0, limits: [1Gi]}]\n",
                "reservedMemory[0].limits: expected a mapping"},
        BadCase{"ACpuLimit", "reservedMemory: [{numaNode: 0, limits: {cpu: 1}}]\n",
                "reservedMemory[0].limits[\"cpu\"]: only memory and hugepages-<size> can be "
                "reserved"},
        BadCase{"AHugepagesPrefixWithoutASize",
                "reservedMemory: [{numaNode: 0, limits: {hugepages-: 1Gi}}]\n",
                "reservedMemory[0].limits[\"hugepages-\"]: only memory and hugepages-<size>"},
        BadCase{"ABadQuantity",
                "reservedMemory:\n- numaNode: 0\n  limits: {memory: 1Gi}\n"
                "- numaNode: 1\n  limits: {hugepages-2Mi: 2x}\n",
                "kubelet config /k.yaml: reservedMemory[1].limits[\"hugepages-2Mi\"]: \"2x\" is "
                "not a memory quantity"},
        BadCase{"ANegativeQuantity",
                "reservedMemory: [{numaNode: 0, limits: {memory: -1Gi}}]\n",
                "reservedMemory[0].limits[\"memory\"]: \"-1Gi\" is not a memory quantity"},
        BadCase{"AQuantityThatIsAMapping",
                "reservedMemory: [{numaNode: 0, limits: {memory: {a: 1}}}]\n",
                "reservedMemory[0].limits[\"memory\"]: expected a string"},
        BadCase{"AZeroReservation", "reservedMemory: [{numaNode: 0, limits: {memory: 0}}]\n",
                "reservedMemory[0].limits[\"memory\"]: reserved memory may not be zero"},
        BadCase{"OneNodeAndResourceTwice",
                "reservedMemory:\n- {numaNode: 1, limits: {memory: 1Gi}}\n"
                "- {numaNode: 1, limits: {memory: 2Gi}}\n",
                "reservedMemory[1].limits[\"memory\"]: NUMA node 1 reserves memory twice"}),
    [](const ::testing::TestParamInfo<BadCase>& p) { return std::string(p.param.name); });

}  // namespace
}  // namespace huygens::agent
