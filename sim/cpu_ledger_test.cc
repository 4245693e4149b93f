#include "sim/cpu_ledger.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "topology/discovery/discovery.h"

namespace huygens::sim {
namespace {

using ::testing::HasSubstr;

// One socket, 2 NUMA nodes of 4 cores with SMT2: cpus 0-3 + 8-11 on NUMA 0, 4-7 + 12-15 on
// NUMA 1; siblings n and n+8.
std::shared_ptr<const LedgerShape> SmallMachine() {
  auto topo = DiscoverSynthetic("package:1 numa:2 core:4 pu:2", CpuNumbering::kLinux);
  EXPECT_TRUE(topo.ok()) << topo.status();
  return std::make_shared<const LedgerShape>(std::make_shared<const CpuTopology>(*topo));
}

TEST(CpuLedgerTest, AnEmptyNodeHasNoFragmentationAndNothingHeld) {
  CpuLedger ledger(SmallMachine(), CpuSet::Range(0, 15));
  EXPECT_EQ(ledger.UserCpus(), 16);
  EXPECT_EQ(ledger.HeldCpus(), 0);
  EXPECT_EQ(ledger.SharedSiblingCores(), 0);
  EXPECT_EQ(ledger.FragmentedFreeCpus(), 0);
}

TEST(CpuLedgerTest, TwoPodsOnSiblingThreadsShareACore) {
  CpuLedger ledger(SmallMachine(), CpuSet::Range(0, 15));
  ASSERT_TRUE(ledger.Take(1, {0, 8, 1}).ok());
  EXPECT_EQ(ledger.SharedSiblingCores(), 0);  // one pod on core 1's first thread only
  ASSERT_TRUE(ledger.Take(2, {9}).ok());
  EXPECT_EQ(ledger.SharedSiblingCores(), 1);  // core 1: pods 1 and 2
  EXPECT_EQ(ledger.HeldCpus(), 4);
  ledger.Release(2, {9});
  EXPECT_EQ(ledger.SharedSiblingCores(), 0);
  EXPECT_EQ(ledger.Owner(9), -1);
  EXPECT_EQ(ledger.Owner(8), 1);
}

TEST(CpuLedgerTest, ACpuHeldByAnotherPodOrOutsideTheUserPoolIsRefused) {
  CpuLedger ledger(SmallMachine(), CpuSet::Range(1, 15));
  ASSERT_TRUE(ledger.Take(1, {2, 3}).ok());
  auto st = ledger.Take(2, {3, 4});
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(st.message()), HasSubstr("CPU 3, held by pod 1"));
  EXPECT_EQ(ledger.Owner(4), -1);  // nothing changed
  st = ledger.Take(2, {0});
  EXPECT_THAT(std::string(st.message()), HasSubstr("outside the user pool"));
  // The same pod may take a CPU it holds again (kubelet's init-container reuse).
  EXPECT_TRUE(ledger.Take(1, {2, 5}).ok());
  EXPECT_EQ(ledger.HeldCpus(), 3);
}

TEST(CpuLedgerTest, FreeCpusOnANumaNodeWithFewerThanFourFreeAreFragmented) {
  CpuLedger ledger(SmallMachine(), CpuSet::Range(0, 15));
  // NUMA 0 holds 0-3 and 8-11: take 5 of them, 3 stay free -> fragmented.
  ASSERT_TRUE(ledger.Take(1, {0, 1, 2, 8, 9}).ok());
  EXPECT_EQ(ledger.FragmentedFreeCpus(), 3);
  ASSERT_TRUE(ledger.Take(2, {3}).ok());
  EXPECT_EQ(ledger.FragmentedFreeCpus(), 2);
  ASSERT_TRUE(ledger.Take(2, {10, 11}).ok());
  EXPECT_EQ(ledger.FragmentedFreeCpus(), 0);  // nothing free left there
  ledger.Release(1, {0, 1, 2, 8, 9});
  EXPECT_EQ(ledger.FragmentedFreeCpus(), 0);  // 5 free again
}

TEST(CpuLedgerTest, NumaLoadSpreadIsTheMostHeldOnOneNumaNodeMinusTheFewest) {
  CpuLedger ledger(SmallMachine(), CpuSet::Range(0, 15));
  EXPECT_EQ(ledger.UserNumaNodes(), 2);
  EXPECT_EQ(ledger.NumaLoadSpread(), 0);
  ASSERT_TRUE(ledger.Take(1, {0, 1, 2, 8, 9}).ok());  // 5 on NUMA 0
  EXPECT_EQ(ledger.NumaLoadSpread(), 5);
  ASSERT_TRUE(ledger.Take(2, {4, 5}).ok());  // 2 on NUMA 1
  EXPECT_EQ(ledger.NumaLoadSpread(), 3);
  ledger.Release(1, {0, 1, 2, 8, 9});
  EXPECT_EQ(ledger.NumaLoadSpread(), 2);
}

TEST(CpuLedgerTest, ANumaNodeWithoutUserCpusTakesNoPartInTheSpread) {
  // NUMA 1 (4-7, 12-15) is all system CPUs: one NUMA node with user CPUs, no spread.
  CpuLedger ledger(SmallMachine(), CpuSet{0, 1, 2, 3, 8, 9, 10, 11});
  EXPECT_EQ(ledger.UserNumaNodes(), 1);
  ASSERT_TRUE(ledger.Take(1, {0, 1}).ok());
  EXPECT_EQ(ledger.NumaLoadSpread(), 0);
}

}  // namespace
}  // namespace huygens::sim
