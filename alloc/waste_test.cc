#include "alloc/waste.h"

#include <vector>

#include "gtest/gtest.h"

namespace huygens {
namespace {

constexpr BindPolicy kPacked = BindPolicy::kPacked;
constexpr BindPolicy kFull = BindPolicy::kFullCores;
constexpr BindPolicy kSpread = BindPolicy::kSpreadCores;

TEST(StrandedCpus, OnlyOneToThreeFreeCpusAreStranded) {
  EXPECT_EQ(StrandedCpus(0), 0);
  EXPECT_EQ(StrandedCpus(1), 1);
  EXPECT_EQ(StrandedCpus(kFragmentUnit - 1), kFragmentUnit - 1);
  EXPECT_EQ(StrandedCpus(kFragmentUnit), 0);
  EXPECT_EQ(StrandedCpus(17), 0);
}

TEST(ShareWaste, PackedSharesACoreOnlyBeyondTheWholeFreeCores) {
  // 8 free CPUs, 3 whole free cores (6 threads) and 2 threads of half-held cores.
  EXPECT_EQ(ShareWaste(kPacked, 2, 8, 3, 6).shared_cores, 0);
  EXPECT_EQ(ShareWaste(kPacked, 2, 8, 3, 7).shared_cores, 1);
  EXPECT_EQ(ShareWaste(kPacked, 2, 8, 3, 8).shared_cores, 2);
}

TEST(ShareWaste, PackedCountsThePodsOwnHalfCoresLikeWholeCoreThreads) {
  // The same NUMA node, but one of the two half-held cores is held by the pod itself: its free
  // thread shares the core with no other pod.
  EXPECT_EQ(ShareWaste(kPacked, 2, 8, 3, 7, /*unshared_threads=*/1).shared_cores, 0);
  EXPECT_EQ(ShareWaste(kPacked, 2, 8, 3, 8, /*unshared_threads=*/1).shared_cores, 1);
  // Never below zero.
  EXPECT_EQ(ShareWaste(kPacked, 2, 8, 3, 2, /*unshared_threads=*/2).shared_cores, 0);
}

// UnsharedCapacity is where ShareWaste starts counting shared cores.
TEST(UnsharedCapacity, IsTheLargestShareThatSplitsNoCoreWithAnotherPod) {
  // Packed, 2 threads per core, 9 free: 3 whole free cores, 1 own half core, 2 half-held.
  const int most = UnsharedCapacity(BindPolicy::kPacked, 2, 9, 3, 1);
  EXPECT_EQ(most, 7);
  EXPECT_EQ(ShareWaste(BindPolicy::kPacked, 2, 9, 3, most, 1).shared_cores, 0);
  EXPECT_EQ(ShareWaste(BindPolicy::kPacked, 2, 9, 3, most + 1, 1).shared_cores, 1);
  EXPECT_EQ(UnsharedCapacity(BindPolicy::kPacked, 2, 5, 4), 5);  // never above the offer
  EXPECT_EQ(UnsharedCapacity(BindPolicy::kPacked, 1, 9, 3), 9);  // no SMT
  EXPECT_EQ(UnsharedCapacity(BindPolicy::kFullCores, 2, 6, 3), 6);
  EXPECT_EQ(UnsharedCapacity(BindPolicy::kSpreadCores, 2, 3, 3), 3);
}

TEST(UnsharedThreadsOfCore, ArePartlyFreeCoresNoOtherPodHoldsPartOf) {
  EXPECT_EQ(UnsharedThreadsOfCore(2, 1, 0), 1);  // beside the pod's own thread or the system pool
  EXPECT_EQ(UnsharedThreadsOfCore(2, 1, 1), 0);  // beside another pod's thread
  EXPECT_EQ(UnsharedThreadsOfCore(2, 2, 0), 0);  // a whole free core counts as whole, not here
  EXPECT_EQ(UnsharedThreadsOfCore(2, 0, 0), 0);  // nothing free
  EXPECT_EQ(UnsharedThreadsOfCore(4, 3, 0), 3);
  EXPECT_EQ(UnsharedThreadsOfCore(4, 2, 1), 0);
  EXPECT_EQ(UnsharedThreadsOfCore(1, 1, 0), 0);  // no SMT: never partly free
}

TEST(SplitShares, WholeCoresOfEveryNodeFirstThenTheRestInOrder) {
  const std::vector<int> offers = {9, 8, 6};
  const std::vector<int> whole = {6, 8, 2};
  std::vector<int> shares(3);
  SplitShares(offers, whole, 14, shares);
  EXPECT_EQ(shares, (std::vector<int>{6, 8, 0}));
  SplitShares(offers, whole, 18, shares);  // 16 whole-core CPUs, then 2 more from node 0
  EXPECT_EQ(shares, (std::vector<int>{8, 8, 2}));
  SplitShares(offers, whole, 30, shares);  // more than the offers: all of them, 7 unassigned
  EXPECT_EQ(shares, (std::vector<int>{9, 8, 6}));
  SplitShares(offers, offers, 14, shares);  // whole == offers: first come, first served
  EXPECT_EQ(shares, (std::vector<int>{9, 5, 0}));
  SplitShares(offers, whole, 0, shares);
  EXPECT_EQ(shares, (std::vector<int>{0, 0, 0}));
}

TEST(ShareWaste, OwnThreadsCountOnlyUnderPacked) {
  // Spread-cores takes one thread per core whatever the pod holds; full-cores never shares.
  EXPECT_EQ(ShareWaste(kSpread, 2, 8, 3, 4, /*unshared_threads=*/1).shared_cores, 1);
  EXPECT_EQ(ShareWaste(kFull, 2, 8, 3, 6, /*unshared_threads=*/1).shared_cores, 0);
}

TEST(ShareWaste, NoSmtSharesNothing) {
  EXPECT_EQ(ShareWaste(kPacked, 1, 8, 8, 8).shared_cores, 0);
  EXPECT_EQ(ShareWaste(kSpread, 1, 8, 0, 8).shared_cores, 0);
}

TEST(ShareWaste, StrandedAndCleanFitFollowWhatTheShareLeaves) {
  // Exact fill: clean, nothing stranded.
  EXPECT_EQ(ShareWaste(kPacked, 2, 6, 3, 6), (Waste{0, 0, true}));
  // Leaves 2: stranded, not clean.
  EXPECT_EQ(ShareWaste(kPacked, 2, 8, 4, 6), (Waste{0, 2, false}));
  // Leaves 4 < share 6: clean (no room for a second 6-CPU share, nothing stranded).
  EXPECT_EQ(ShareWaste(kPacked, 2, 10, 5, 6), (Waste{0, 0, true}));
  // Leaves 8 >= share 6: not clean (the hole could have held a second share), nothing stranded.
  EXPECT_EQ(ShareWaste(kPacked, 2, 14, 7, 6), (Waste{0, 0, false}));
}

TEST(Rank, SharedCoresFirstThenCleanFitWhenPackingElseStranded) {
  const Waste shares{1, 0, true};
  const Waste strands{0, 3, false};
  const Waste clean{0, 0, true};
  const Waste roomy{0, 0, false};
  EXPECT_LT(Rank(strands, true), Rank(shares, true));
  EXPECT_LT(Rank(clean, true), Rank(strands, true));
  EXPECT_EQ(Rank(roomy, true), Rank(strands, true)) << "packing: best fit decides among unclean fits";
  EXPECT_LT(Rank(strands, false), Rank(shares, false));
  EXPECT_LT(Rank(roomy, false), Rank(strands, false)) << "spreading: fewer stranded CPUs first";
}

TEST(Waste, SumsCountsAndIsCleanOnlyWhenEveryShareIs) {
  Waste sum{1, 2, true};
  sum += Waste{2, 1, false};
  EXPECT_EQ(sum, (Waste{3, 3, false}));
}

}  // namespace
}  // namespace huygens
