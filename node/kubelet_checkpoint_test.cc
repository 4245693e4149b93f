#include "node/kubelet_checkpoint.h"

#include <fstream>
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "topology/testing/machines.h"

namespace huygens {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(HUYGENS_FIXTURES) + "/kubelet/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << name;
  return ss.str();
}

// Every real file carries the checksum kubelet wrote; reproducing it proves the algorithm.
TEST(KubeletCpuCheckpoint, ChecksumMatchesKubeletsOnEveryRealFile) {
  for (const char* name : {"cpu_manager_state.blog.16cpu.json", "cpu_manager_state.blog.28cpu.json",
                           "cpu_manager_state.blog.none-policy.json",
                           "cpu_manager_state.eks-outposts.192cpu.json",
                           "cpu_manager_state.k8s-issue-118657.64cpu.json",
                           "cpu_manager_state.volcano-numa-docs.32cpu-2numa.json"}) {
    auto cp = ParseKubeletCpuCheckpoint(Fixture(name));
    ASSERT_TRUE(cp.ok()) << name << ": " << cp.status();
    EXPECT_NE(cp->checksum, 0u) << name;
    EXPECT_EQ(cp->computed_checksum, cp->checksum) << name;
    EXPECT_TRUE(cp->checksum_ok) << name;
  }
}

TEST(KubeletCpuCheckpoint, ReadsPodsContainersAndTheSharedPool) {
  auto cp = ParseKubeletCpuCheckpoint(Fixture("cpu_manager_state.blog.16cpu.json"));
  ASSERT_TRUE(cp.ok());
  EXPECT_EQ(cp->format, 2);
  EXPECT_EQ(cp->policy_name, "static");
  EXPECT_EQ(cp->default_cpu_set, CpuSet::Parse("0,4-8,12-15").value());
  EXPECT_EQ(cp->entries.at("088fe178-cec9-4eb9-ba3c-cf45cba46371").at("qos-demo-ctr"),
            (CpuSet{1, 9}));
  auto none = ParseKubeletCpuCheckpoint(Fixture("cpu_manager_state.blog.none-policy.json"));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->entries.empty());
  EXPECT_TRUE(none->default_cpu_set.Empty());
}

TEST(KubeletCpuCheckpoint, AnEditedFileFailsTheChecksum) {
  std::string text = Fixture("cpu_manager_state.blog.28cpu.json");
  text.replace(text.find("\"1-3\""), 5, "\"1-4\"");
  auto cp = ParseKubeletCpuCheckpoint(text);
  ASSERT_TRUE(cp.ok());
  EXPECT_FALSE(cp->checksum_ok);
}

TEST(KubeletCpuCheckpoint, ReadsTheV1LayoutAndAcceptsChecksumZero) {
  // v1 (kubelet < 1.18): entries keyed by container ID; checksum 0 is what the old file
  // backend wrote and kubelet accepts it.
  auto cp = ParseKubeletCpuCheckpoint(
      R"({"policyName":"static","defaultCpuSet":"0,3-7","entries":{"abc123":"1-2"},"checksum":0})");
  ASSERT_TRUE(cp.ok()) << cp.status();
  EXPECT_EQ(cp->format, 1);
  EXPECT_EQ(cp->entries.at("").at("abc123"), (CpuSet{1, 2}));
  EXPECT_TRUE(cp->checksum_ok);
}

TEST(KubeletCpuCheckpoint, MalformedFilesNameTheField) {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"", "not valid JSON"},
      {"[]", "not a JSON object"},
      {R"({"defaultCpuSet":""})", "policyName"},
      {R"({"policyName":"static"})", "defaultCpuSet: missing"},
      {R"({"policyName":"static","defaultCpuSet":"3-1"})", "defaultCpuSet"},
      {R"({"policyName":"static","defaultCpuSet":"","entries":{"p":{"c":"x"}}})",
       "entries[\"p\"][\"c\"]"},
      {R"({"policyName":"static","defaultCpuSet":"","entries":{"p":{"c":"1"},"q":"2"}})",
       "mixes the v1 and v2"},
      {R"({"policyName":"static","defaultCpuSet":"","checksum":-1})", "checksum"},
  };
  for (const Case& c : cases) {
    auto cp = ParseKubeletCpuCheckpoint(c.text);
    ASSERT_FALSE(cp.ok()) << c.text;
    EXPECT_THAT(std::string(cp.status().message()), HasSubstr(c.error)) << c.text;
  }
}

TEST(KubeletMemoryCheckpoint, ChecksumMatchesKubeletsOnEveryFileWithAGenuineOne) {
  for (const char* name : {"memory_manager_state.blog.16cpu.none-policy.json",
                           "memory_manager_state.k8s-unittest.static.json"}) {
    auto cp = ParseKubeletMemoryCheckpoint(Fixture(name));
    ASSERT_TRUE(cp.ok()) << name << ": " << cp.status();
    EXPECT_EQ(cp->computed_checksum, cp->checksum) << name;
    EXPECT_TRUE(cp->checksum_ok);
  }
  // The talos unit test writes a dummy checksum of 1.
  auto talos = ParseKubeletMemoryCheckpoint(
      Fixture("memory_manager_state.talos-unittest.static-64GiB.json"));
  ASSERT_TRUE(talos.ok()) << talos.status();
  EXPECT_FALSE(talos->checksum_ok);
  EXPECT_EQ(talos->machine_state.at(0).memory_map.at("memory").total, uint64_t{68719476736});
  EXPECT_EQ(talos->machine_state.at(0).cells, std::vector<int>{0});
}

TEST(KubeletMemoryCheckpoint, ReadsTheStaticPolicysBlocks) {
  auto cp = ParseKubeletMemoryCheckpoint(Fixture("memory_manager_state.k8s-unittest.static.json"));
  ASSERT_TRUE(cp.ok());
  const KubeletMemoryBlock& b = cp->entries.at("pod").at("container1").at(0);
  EXPECT_EQ(b.numa_affinity, std::vector<int>{0});
  EXPECT_EQ(b.type, "memory");
  EXPECT_EQ(b.size, 512u);
  EXPECT_EQ(cp->machine_state.at(0).memory_map.at("memory").free, 1024u);
}

// The Volcano example: 32 CPUs, NUMA node 0 = 0-15, node 1 = 16-31, CPU 0 reserved.
std::shared_ptr<const CpuTopology> Volcano32() {
  return std::make_shared<const CpuTopology>(
      testing::BuildMachine({.sockets = 2, .cores_per_numa = 16, .threads_per_core = 1}));
}

// Volcano32 with `offline` CPUs offline (sysfs gives them no topology).
std::shared_ptr<const CpuTopology> Volcano32WithOffline(CpuSet offline) {
  return std::make_shared<const CpuTopology>(testing::BuildMachine(
      {.sockets = 2, .cores_per_numa = 16, .threads_per_core = 1, .offline = offline}));
}

TEST(KubeletImport, ACleanFileImportsEveryContainerAsKubeletOwned) {
  auto cp = ParseKubeletCpuCheckpoint(Fixture("cpu_manager_state.volcano-numa-docs.32cpu-2numa.json"));
  ASSERT_TRUE(cp.ok());
  auto node = NodeState::Create(Volcano32(), NodeConfig{.name = "n", .system_cpus = CpuSet{0}});
  ASSERT_TRUE(node.ok());
  EXPECT_THAT(ImportKubeletCpus(*node, *cp), IsEmpty());
  EXPECT_EQ(node->ExclusiveCpus(), CpuSet::Parse("1-9,16-24").value());
  EXPECT_EQ(node->OwnerOf("fb15e10a-b6a5-4aaa-8fcd-76c1aa64e6fd"), Owner::kKubelet);
  EXPECT_EQ(node->Pods().at("777870b5-c64f-42f5-9296-688b9dc212ba").containers[0].mems, CpuSet{1});
  EXPECT_THAT(node->Validate(), IsEmpty());
}

TEST(KubeletImport, ReportsReservedAbsentAndOverlappingCpus) {
  struct Case {
    const char* name;
    std::string text;
    std::shared_ptr<const CpuTopology> topo;
    CpuSet reserved;
    const char* expect;
  };
  const std::string volcano = Fixture("cpu_manager_state.volcano-numa-docs.32cpu-2numa.json");
  const std::vector<Case> cases = {
      {"a reserved cpu handed to a container", volcano, Volcano32(), CpuSet{0, 1},
       "cpus 1 are in the system pool"},
      {"cpus the machine does not have", volcano,
       std::make_shared<const CpuTopology>(
           testing::BuildMachine({.sockets = 2, .cores_per_numa = 8, .threads_per_core = 1})),
       CpuSet{0}, "cpus 16-24 do not exist"},
      {"two containers on one cpu",
       R"({"policyName":"static","defaultCpuSet":"0,4-31","entries":{"a":{"x":"1-2"},"b":{"y":"2-3"}},"checksum":0})",
       Volcano32(), CpuSet{0}, "cpus 2 are held by pod(s) a"},
      {"a cpu both shared and assigned",
       R"({"policyName":"static","defaultCpuSet":"0-31","entries":{"a":{"x":"1-2"}},"checksum":0})",
       Volcano32(), CpuSet{0}, "cpus 1-2 are also in defaultCpuSet"},
      {"an online cpu in neither",
       R"({"policyName":"static","defaultCpuSet":"0,3-30","entries":{"a":{"x":"1-2"}},"checksum":0})",
       Volcano32(), CpuSet{0}, "online cpus 31 are neither"},
      // kubelet's validateState compares the file with the online CPUs also without entries.
      {"an online cpu in neither without entries",
       R"({"policyName":"static","defaultCpuSet":"0-30","checksum":0})", Volcano32(), CpuSet{0},
       "online cpus 31 are neither in defaultCpuSet nor assigned"},
      {"an offline cpu in the default set", volcano, Volcano32WithOffline(CpuSet{31}), CpuSet{0},
       "defaultCpuSet: cpus 31 are offline"},
      {"an offline cpu in an entry", volcano, Volcano32WithOffline(CpuSet{24}), CpuSet{0},
       "cpus 24 are offline"},
      {"a cpu the machine does not have in the default set",
       R"({"policyName":"static","defaultCpuSet":"0-32","checksum":0})", Volcano32(), CpuSet{0},
       "defaultCpuSet: cpus 32 do not exist on this machine"},
  };
  for (const Case& c : cases) {
    auto cp = ParseKubeletCpuCheckpoint(c.text);
    ASSERT_TRUE(cp.ok()) << c.name;
    auto node = NodeState::Create(c.topo, NodeConfig{.name = "n", .system_cpus = c.reserved});
    ASSERT_TRUE(node.ok()) << c.name;
    EXPECT_THAT(ImportKubeletCpus(*node, *cp), Contains(HasSubstr(c.expect))) << c.name;
    EXPECT_THAT(node->Validate(), IsEmpty()) << c.name;
  }
}

// What kubelet itself accepts is no violation: a fresh static state (kubelet fills the default
// set at start), the none policy's empty file, and reserved CPUs left out of the default set
// (strict-cpu-reservation).
TEST(KubeletImport, FilesKubeletAcceptsHaveNoViolations) {
  for (const char* text : {
           R"({"policyName":"static","defaultCpuSet":"","checksum":0})",
           R"({"policyName":"none","defaultCpuSet":"","checksum":0})",
           R"({"policyName":"static","defaultCpuSet":"3-31","entries":{"a":{"x":"1-2"}},"checksum":0})",
       }) {
    auto cp = ParseKubeletCpuCheckpoint(text);
    ASSERT_TRUE(cp.ok()) << text;
    auto node = NodeState::Create(Volcano32(), NodeConfig{.name = "n", .system_cpus = CpuSet{0}});
    ASSERT_TRUE(node.ok());
    EXPECT_THAT(ImportKubeletCpus(*node, *cp), IsEmpty()) << text;
  }
}

}  // namespace
}  // namespace huygens
