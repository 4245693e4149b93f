#include "agent/kubelet_memory.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "topology/json.h"
#include "topology/testing/machines.h"

namespace huygens::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;

constexpr uint64_t kMi = 1ull << 20, kGi = 1ull << 30;

std::string KubeletFixture(const std::string& name) {
  return std::string(HUYGENS_FIXTURES) + "/kubelet/" + name;
}

// One NUMA node of 2048 bytes, as the kubelet unit-test checkpoint describes its machine.
std::shared_ptr<const CpuTopology> TinyMachine(uint64_t memory_bytes) {
  absl::StatusOr<CpuTopology> t = TopologyFromJson(json{
      {"cpus", {{{"id", 0}, {"core", 0}, {"socket", 0}, {"numa", 0}}}},
      {"numaNodes", {{{"id", 0}, {"memoryBytes", memory_bytes}}}}}.dump());
  EXPECT_TRUE(t.ok()) << t.status();
  return std::make_shared<const CpuTopology>(std::move(*t));
}

// A memory_manager_state of the Static policy for `machine_state`, with kubelet's checksum.
std::string StaticCheckpoint(const json& machine_state) {
  json cp = {{"policyName", "Static"}, {"machineState", machine_state}, {"checksum", 0}};
  absl::StatusOr<KubeletMemoryCheckpoint> parsed = ParseKubeletMemoryCheckpoint(cp.dump());
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  cp["checksum"] = parsed.ok() ? parsed->computed_checksum : 0;
  return cp.dump();
}

// One memoryMap row as kubelet writes it: allocatable = total - systemReserved (- the node's
// hugepages, for memory), free = allocatable - reserved.
json Table(uint64_t total, uint64_t system_reserved, uint64_t reserved, uint64_t hugepages = 0) {
  const uint64_t allocatable = total - system_reserved - hugepages;
  return {{"total", total}, {"systemReserved", system_reserved}, {"allocatable", allocatable},
          {"reserved", reserved}, {"free", allocatable - reserved}};
}

class KubeletMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("kubelet-memory-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  std::string Write(const std::string& text) {
    const std::string path = (dir_ / "memory_manager_state").string();
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(KubeletMemoryTest, TheKubeletUnitTestCheckpointMakesAvailableItsFree) {
  // machineState 0 memory: total 2048, systemReserved 512, allocatable 1536, free 1024.
  KubeletMemoryReader reader({.topology = TinyMachine(2048),
                              .policy = KubeletMemoryPolicy::kStatic,
                              .reserved = {{0, {{"memory", 512}}}},
                              .checkpoint_path =
                                  KubeletFixture("memory_manager_state.k8s-unittest.static.json")});
  const KubeletMemoryUse use = reader.Read();
  EXPECT_TRUE(use.from_checkpoint);
  EXPECT_EQ(use.reason, "");
  EXPECT_EQ(use.used, (NumaMemory{{0, {{"memory", 512}}}}));
  auto figures = NrtMemory(*TinyMachine(2048), {{0, {{"memory", 512}}}}, use.used);
  ASSERT_TRUE(figures.ok()) << figures.status();
  EXPECT_EQ(figures->at(0).at("memory"), (NrtMemoryFigures{2048, 1536, 1024}));
}

struct UnusedCase {
  const char* name;
  KubeletMemoryPolicy policy;
  std::string fixture;  // "" = the path does not exist
  std::string reason;
};
void PrintTo(const UnusedCase& c, std::ostream* os) { *os << c.name; }

class KubeletMemoryUnused : public ::testing::TestWithParam<UnusedCase> {};

TEST_P(KubeletMemoryUnused, TakesNothingAndSaysWhy) {
  const UnusedCase& c = GetParam();
  const std::string path =
      c.fixture.empty() ? "/nonexistent/memory_manager_state" : KubeletFixture(c.fixture);
  KubeletMemoryReader reader({.topology = TinyMachine(64 * kGi),
                              .policy = c.policy,
                              .checkpoint_path = path});
  const KubeletMemoryUse use = reader.Read();
  EXPECT_FALSE(use.from_checkpoint);
  EXPECT_EQ(use.used, NumaMemory());
  EXPECT_THAT(use.reason, HasSubstr(c.reason));
  EXPECT_THAT(use.reason, HasSubstr("available = allocatable"));
}

INSTANTIATE_TEST_SUITE_P(
    KubeletMemoryReader, KubeletMemoryUnused,
    ::testing::Values(
        UnusedCase{"TheNonePolicyReadsNoFile", KubeletMemoryPolicy::kNone,
                   "memory_manager_state.k8s-unittest.static.json",
                   "kubelet's memoryManagerPolicy is None"},
        UnusedCase{"AMissingFile", KubeletMemoryPolicy::kStatic, "",
                   "/nonexistent/memory_manager_state"},
        // Talos' unit-test file carries the dummy checksum 1.
        UnusedCase{"ABadChecksum", KubeletMemoryPolicy::kStatic,
                   "memory_manager_state.talos-unittest.static-64GiB.json",
                   "checksum mismatch (stored 1, computed"},
        // A real node's file of the None policy, while kubelet's config says Static.
        UnusedCase{"AFileOfAnotherPolicy", KubeletMemoryPolicy::kStatic,
                   "memory_manager_state.blog.16cpu.none-policy.json",
                   "written by policy \"None\", but kubelet's config says Static"},
        UnusedCase{"AFileThatIsNoCheckpoint", KubeletMemoryPolicy::kStatic,
                   "cpu_manager_state.blog.16cpu.json", "cpu_manager_state.blog.16cpu.json: "}),
    [](const ::testing::TestParamInfo<UnusedCase>& p) { return std::string(p.param.name); });

TEST_F(KubeletMemoryTest, TwoNodesWithHugepagesAreReadPerResourceAndUnknownEntriesLeftOut) {
  // TwoSocketsSmt: node 0 16 GiB, 512 x 2 MiB, 2 x 1 GiB; node 1 16 GiB, 512 x 2 MiB.
  auto t = std::make_shared<const CpuTopology>(huygens::testing::TwoSocketsSmt());
  const NumaMemory reserved = {{0, {{"memory", kGi}, {"hugepages-1Gi", kGi}}}};
  const std::string path = Write(StaticCheckpoint({
      {"0", {{"numberOfAssignments", 2},
             {"memoryMap",
              {{"memory", Table(16 * kGi, kGi, 4 * kGi, 3 * kGi)},
               {"hugepages-1Gi", Table(2 * kGi, kGi, kGi)},
               {"hugepages-2Mi", Table(kGi, 0, 0)}}},
             {"cells", {0}}}},
      {"1", {{"numberOfAssignments", 1},
             {"memoryMap",
              {{"memory", Table(16 * kGi, 0, 0, kGi)},
               {"hugepages-2Mi", Table(kGi, 0, 512 * kMi)},
               {"hugepages-1Gi", Table(0, 0, 0)}}},
             {"cells", {1}}}},
      {"5", {{"numberOfAssignments", 0},
             {"memoryMap", {{"memory", Table(kGi, 0, 0)}}},
             {"cells", {5}}}}}));
  KubeletMemoryReader reader({.topology = t,
                              .policy = KubeletMemoryPolicy::kStatic,
                              .reserved = reserved,
                              .checkpoint_path = path});
  const KubeletMemoryUse use = reader.Read();
  ASSERT_TRUE(use.from_checkpoint) << use.reason;
  // Node 0's memory allocatable is 16 - 1 - 3 (hugepages) = 12 GiB, as kubelet's; free 8 GiB.
  EXPECT_EQ(use.used, (NumaMemory{{0, {{"memory", 4 * kGi}, {"hugepages-1Gi", kGi}}},
                                  {1, {{"hugepages-2Mi", 512 * kMi}}}}));
  EXPECT_THAT(use.reason, HasSubstr("machineState[\"1\"].memoryMap[\"hugepages-1Gi\"]: NUMA node "
                                    "1 has no hugepages-1Gi (it has memory, hugepages-2Mi); "
                                    "left out"));
  EXPECT_THAT(use.reason, HasSubstr("machineState[\"5\"].memoryMap[\"memory\"]: NUMA node 5 "
                                    "does not exist; left out"));
  auto figures = NrtMemory(*t, reserved, use.used);
  ASSERT_TRUE(figures.ok()) << figures.status();
  EXPECT_EQ(figures->at(0).at("memory").available, 8 * kGi);
  EXPECT_EQ(figures->at(0).at("hugepages-1Gi").available, 0u);
  EXPECT_EQ(figures->at(0).at("hugepages-2Mi").available, kGi);
  EXPECT_EQ(figures->at(1).at("memory").available, 16 * kGi - kGi);  // 1 GiB of hugepages
  EXPECT_EQ(figures->at(1).at("hugepages-2Mi").available, 512 * kMi);
}

TEST_F(KubeletMemoryTest, FreeAboveOurAllocatableClampsUsedAtZero) {
  // kubelet saw 4096 bytes where sysfs says 2048: available stays at our allocatable.
  const std::string path = Write(StaticCheckpoint(
      {{"0", {{"numberOfAssignments", 0},
              {"memoryMap", {{"memory", Table(4096, 0, 0)}}},
              {"cells", {0}}}}}));
  KubeletMemoryReader reader(
      {.topology = TinyMachine(2048),
       .policy = KubeletMemoryPolicy::kStatic,
       .checkpoint_path = path});
  const KubeletMemoryUse use = reader.Read();
  EXPECT_TRUE(use.from_checkpoint);
  EXPECT_EQ(use.used, NumaMemory());
}

TEST_F(KubeletMemoryTest, AFileThatTurnsBadAndGoodAgainIsFollowedEachRead) {
  const std::string good = StaticCheckpoint(
      {{"0", {{"numberOfAssignments", 1},
              {"memoryMap", {{"memory", Table(2048, 0, 1000)}}},
              {"cells", {0}}}}});
  const std::string path = Write(good);
  KubeletMemoryReader reader(
      {.topology = TinyMachine(2048),
       .policy = KubeletMemoryPolicy::kStatic,
       .checkpoint_path = path});
  EXPECT_EQ(reader.Read().used, (NumaMemory{{0, {{"memory", 1000}}}}));
  Write("{\"policyName\":");  // kubelet caught mid-write
  KubeletMemoryUse bad = reader.Read();
  EXPECT_FALSE(bad.from_checkpoint);
  EXPECT_EQ(bad.used, NumaMemory());
  EXPECT_THAT(bad.reason, HasSubstr(path));
  EXPECT_EQ(reader.Read().reason, bad.reason);  // the same reason (logged once)
  Write(good);
  EXPECT_EQ(reader.Read().used, (NumaMemory{{0, {{"memory", 1000}}}}));
}

TEST(FitReservedMemory, LeavesOutWhatTheMachineLacksAndSaysSo) {
  const CpuTopology t = huygens::testing::TwoSocketsSmt();
  std::vector<std::string> left_out;
  const NumaMemory fit = FitReservedMemory(
      {{0, {{"memory", kGi}, {"hugepages-1Gi", kGi}}},
       {1, {{"hugepages-1Gi", kGi}, {"hugepages-2Mi", 2 * kMi}}},
       {4, {{"memory", kGi}}}},
      t, left_out);
  EXPECT_EQ(fit, (NumaMemory{{0, {{"memory", kGi}, {"hugepages-1Gi", kGi}}},
                             {1, {{"hugepages-2Mi", 2 * kMi}}}}));
  EXPECT_THAT(left_out,
              ElementsAre("reservedMemory: NUMA node 1 has no hugepages-1Gi (it has memory, "
                          "hugepages-2Mi); hugepages-1Gi reservation of 1073741824 bytes ignored",
                          "reservedMemory: NUMA node 4 does not exist; memory reservation of "
                          "1073741824 bytes ignored"));
}

}  // namespace
}  // namespace huygens::agent
