// Tests for alloc/static_policy.h, reasoned from kubelet's static policy (policy_static.go,
// policy_options.go, 1.34) and the take order tested in take_test.cc. Machines and numbering:
// topology/testing/machines.h.
#include "alloc/static_policy.h"

#include <cctype>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

CpuSet Cpus(const char* list) { return *CpuSet::Parse(list); }

ContainerSpec Container(std::string name, int64_t cpu_milli, bool init = false,
                        bool restartable = false) {
  return ContainerSpec{.name = std::move(name),
                       .cpu_request_milli = cpu_milli,
                       .cpu_limit_milli = cpu_milli,
                       .memory_request_bytes = 1 << 30,
                       .memory_limit_bytes = 1 << 30,
                       .init = init,
                       .restartable = restartable};
}

PodSpec GuaranteedPod(std::vector<ContainerSpec> containers,
                      std::vector<ContainerSpec> init = {}) {
  return PodSpec{.uid = "pod-1",
                 .namespace_name = "default",
                 .name = "p",
                 .init_containers = std::move(init),
                 .containers = std::move(containers)};
}

StaticPolicy MakePolicy(const CpuTopology& topo, std::optional<CpuSet> reserved, int num,
                        StaticPolicyOptions options = {}) {
  absl::StatusOr<StaticPolicy> p = StaticPolicy::Create(topo, reserved, num, options);
  EXPECT_TRUE(p.ok()) << p.status();
  return *std::move(p);
}

// ---- Options ---------------------------------------------------------------------------------

TEST(ParseStaticPolicyOptionsTest, ParsesEveryKnownOptionWithGoBooleans) {
  absl::StatusOr<StaticPolicyOptions> got = ParseStaticPolicyOptions({
      {"full-pcpus-only", "true"},
      {"distribute-cpus-across-numa", "1"},
      {"align-by-socket", "T"},
      {"strict-cpu-reservation", "True"},
      {"distribute-cpus-across-cores", "false"},
      {"prefer-align-cpus-by-uncorecache", "F"},
  });
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, (StaticPolicyOptions{.full_pcpus_only = true,
                                       .distribute_cpus_across_numa = true,
                                       .align_by_socket = true,
                                       .strict_cpu_reservation = true}));
}

struct BadOptionsCase {
  std::string name;
  std::map<std::string, std::string> options;
  std::string message;
};

class ParseStaticPolicyOptionsErrorTest : public ::testing::TestWithParam<BadOptionsCase> {};

TEST_P(ParseStaticPolicyOptionsErrorTest, GivesKubeletsError) {
  absl::StatusOr<StaticPolicyOptions> got = ParseStaticPolicyOptions(GetParam().options);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().message(), GetParam().message);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ParseStaticPolicyOptionsErrorTest,
    ::testing::Values(
        BadOptionsCase{"rejects an unknown option", {{"pack-harder", "true"}},
                       "unknown CPU Manager Policy option: \"pack-harder\""},
        BadOptionsCase{"rejects a value that is not a Go boolean", {{"full-pcpus-only", "yes"}},
                       "bad value for option \"full-pcpus-only\": strconv.ParseBool: parsing "
                       "\"yes\": invalid syntax"},
        BadOptionsCase{"rejects full pcpus only with spreading over cores",
                       {{"full-pcpus-only", "true"}, {"distribute-cpus-across-cores", "true"}},
                       "static policy options full-pcpus-only and distribute-cpus-across-cores "
                       "can not be used at the same time"},
        BadOptionsCase{"rejects spreading over NUMA nodes and cores together",
                       {{"distribute-cpus-across-numa", "true"},
                        {"distribute-cpus-across-cores", "true"}},
                       "static policy options distribute-cpus-across-numa and "
                       "distribute-cpus-across-cores can not be used at the same time"},
        BadOptionsCase{"rejects uncore alignment with spreading over cores",
                       {{"prefer-align-cpus-by-uncorecache", "true"},
                        {"distribute-cpus-across-cores", "true"}},
                       "static policy options prefer-align-cpus-by-uncorecache and "
                       "distribute-cpus-across-cores can not be used at the same time"},
        BadOptionsCase{"rejects uncore alignment with spreading over NUMA nodes",
                       {{"prefer-align-cpus-by-uncorecache", "true"},
                        {"distribute-cpus-across-numa", "true"}},
                       "static policy options prefer-align-cpus-by-uncorecache and "
                       "distribute-cpus-across-numa can not be used at the same time"}),
    [](const ::testing::TestParamInfo<BadOptionsCase>& p) {
      std::string n;
      for (char c : p.param.name) n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return n;
    });

// ---- Create / reserved CPUs ------------------------------------------------------------------

TEST(StaticPolicyCreateTest, ReservesTheLowestWholeCoreFromACount) {
  // kubelet's takeByTopology over all CPUs: core 0 = CPUs 0 and 12.
  EXPECT_EQ(MakePolicy(testing::DualSocketHT(), std::nullopt, 2).Reserved(), Cpus("0,12"));
}

TEST(StaticPolicyCreateTest, ReservesWithTheConfiguredSpreadOrder) {
  // distribute-cpus-across-cores applies to the reservation too: one thread per core.
  EXPECT_EQ(MakePolicy(testing::SingleSocketHT(), std::nullopt, 2,
                       {.distribute_cpus_across_cores = true})
                .Reserved(),
            Cpus("0-1"));
}

TEST(StaticPolicyCreateTest, UsesAnExplicitListAndItsSiblings) {
  const StaticPolicy p = MakePolicy(testing::DualSocketHT(), Cpus("0"), 1);
  EXPECT_EQ(p.Reserved(), Cpus("0"));
  EXPECT_EQ(p.ReservedPhysical(), Cpus("0,12"));
}

TEST(StaticPolicyCreateTest, RejectsAListOfTheWrongSize) {
  absl::StatusOr<StaticPolicy> p =
      StaticPolicy::Create(testing::DualSocketHT(), Cpus("0-2"), 2, {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "[cpumanager] unable to reserve the required amount of CPUs (size of 0-2 did not "
            "equal 2)");
}

TEST(StaticPolicyCreateTest, RejectsAZeroReservation) {
  EXPECT_FALSE(StaticPolicy::Create(testing::DualSocketHT(), std::nullopt, 0, {}).ok());
}

TEST(StaticPolicyCreateTest, RejectsOfflineReservedCpus) {
  EXPECT_FALSE(StaticPolicy::Create(testing::DualSocketHTWithOffline(), Cpus("5"), 1, {}).ok());
}

TEST(StaticPolicyCreateTest, RejectsAlignBySocketWhenSocketsOutnumberNumaNodes) {
  EXPECT_FALSE(StaticPolicy::Create(testing::DualSocketOneNumaHT(), std::nullopt, 1,
                                    {.align_by_socket = true})
                   .ok());
}

TEST(StaticPolicyStateTest, DefaultSetHoldsEveryOnlineCpu) {
  const StaticPolicy p = MakePolicy(testing::DualSocketHTWithOffline(), std::nullopt, 1);
  EXPECT_EQ(p.InitialState().default_cpu_set, Cpus("0-4,6-16,19-23"));
}

TEST(StaticPolicyStateTest, StrictReservationRemovesReservedCpusFromTheDefaultSet) {
  const StaticPolicy p = MakePolicy(testing::DualSocketHT(), std::nullopt, 2,
                                    {.strict_cpu_reservation = true});
  EXPECT_EQ(p.InitialState().default_cpu_set, Cpus("1-11,13-23"));
  EXPECT_EQ(p.AvailableCpus(p.InitialState()), Cpus("1-11,13-23"));
}

// ---- Allocate ----------------------------------------------------------------------------------

TEST(StaticPolicyAllocateTest, GivesAGuaranteedContainerWholeCoresOfTheFullerSocket) {
  // Reserved 0,12: socket 0 has 10 free CPUs, socket 1 12, so socket 0 is packed first.
  const StaticPolicy p = MakePolicy(testing::DualSocketHT(), std::nullopt, 2);
  CpuManagerState state = p.InitialState();
  const PodSpec pod = GuaranteedPod({Container("c", 4000)});
  absl::StatusOr<CpuSet> got = p.Allocate(state, pod, "c", std::nullopt);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, Cpus("1-2,13-14"));
  EXPECT_EQ(state.default_cpu_set, Cpus("0,3-12,15-23"));
  EXPECT_EQ(state.assignments.at("pod-1").at("c"), Cpus("1-2,13-14"));
}

// kubelet v1.35.4 on a hybrid machine (as the kubelet oracle answers): 6 cores of 2 threads
// (core c: CPUs c, c + 14) and 8 of 1 (CPUs 6-13), so kubelet's average core size is 1. Another
// pod holds CPU 14; core 0 then has one free CPU, counts as a free core and is taken whole, so
// kubelet hands the container CPU 14 as well, though another pod holds it.
TEST(StaticPolicyAllocateTest, TakesAHybridCoreWholeAsKubeletDoes) {
  const CpuTopology topo =
      testing::BuildMachine({.cores_per_numa = 14, .offline = CpuSet::Range(20, 27)});
  const StaticPolicy p = MakePolicy(topo, Cpus("6"), 1);
  CpuManagerState state = p.InitialState();
  state.assignments["other"]["c"] = Cpus("14");
  state.default_cpu_set = Cpus("0-13,15-19");
  const PodSpec pod = GuaranteedPod({Container("c", 2000)});
  absl::StatusOr<CpuSet> got = p.Allocate(state, pod, "c", std::nullopt);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, Cpus("0,14"));
  EXPECT_EQ(state.default_cpu_set, Cpus("1-13,15-19"));
}

TEST(StaticPolicyAllocateTest, ReturnsTheSameCpusForAnAssignedContainer) {
  const StaticPolicy p = MakePolicy(testing::DualSocketHT(), std::nullopt, 2);
  CpuManagerState state = p.InitialState();
  const PodSpec pod = GuaranteedPod({Container("c", 4000)});
  const CpuSet first = *p.Allocate(state, pod, "c", std::nullopt);
  const CpuManagerState before = state;
  EXPECT_EQ(*p.Allocate(state, pod, "c", std::nullopt), first);
  EXPECT_EQ(state, before);
}

// kubelet's unit case from kubernetes PR 129079 (kubelet restarted with full-pcpus-only): one
// socket of 6 cores x 2 threads (siblings n / n+6), reserved 0, both containers already
// assigned, so the default set 0,5-6,11 holds only 2 physical CPUs outside reserved core 0's
// siblings. The assigned container keeps its CPUs instead of an SMT alignment error.
TEST(StaticPolicyAllocateTest, FullPcpusOnlyKeepsTheCpusOfAnAssignedContainer) {
  const StaticPolicy p =
      MakePolicy(testing::BuildMachine({.cores_per_numa = 6}), Cpus("0"), 1,
                 {.full_pcpus_only = true});
  CpuManagerState state{
      .default_cpu_set = Cpus("0,5-6,11"),
      .assignments = {{"pod-1",
                       {{"appContainer-0", Cpus("2-3,8-9")},
                        {"appContainer-1", Cpus("1,4,7,10")}}}}};
  const CpuManagerState before = state;
  const PodSpec pod =
      GuaranteedPod({Container("appContainer-0", 4000), Container("appContainer-1", 4000)});
  absl::StatusOr<CpuSet> got = p.Allocate(state, pod, "appContainer-0", std::nullopt);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, Cpus("2-3,8-9"));
  EXPECT_EQ(state, before);
}

struct SharedCase {
  std::string name;
  PodSpec pod;
};

class StaticPolicySharedTest : public ::testing::TestWithParam<SharedCase> {};

TEST_P(StaticPolicySharedTest, LeavesTheContainerInTheSharedPool) {
  const StaticPolicy p = MakePolicy(testing::DualSocketHT(), std::nullopt, 2);
  CpuManagerState state = p.InitialState();
  const CpuManagerState before = state;
  absl::StatusOr<CpuSet> got = p.Allocate(state, GetParam().pod, "c", std::nullopt);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, before.default_cpu_set);
  EXPECT_EQ(state, before);
}

PodSpec BurstablePod() {
  PodSpec pod = GuaranteedPod({Container("c", 2000)});
  pod.containers[0].cpu_limit_milli = 4000;
  return pod;
}

PodSpec PodLevelResourcesPod() {
  PodSpec pod = GuaranteedPod({Container("c", 2000)});
  pod.pod_cpu_request_milli = 2000;
  pod.pod_cpu_limit_milli = 2000;
  return pod;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, StaticPolicySharedTest,
    ::testing::Values(SharedCase{"a burstable pod", BurstablePod()},
                      SharedCase{"a fractional request", GuaranteedPod({Container("c", 1500)})},
                      SharedCase{"a pod with pod level resources", PodLevelResourcesPod()}),
    [](const ::testing::TestParamInfo<SharedCase>& p) {
      std::string n;
      for (char c : p.param.name) n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return n;
    });

TEST(StaticPolicyAllocateTest, FailsWhenTheContainerIsNotInThePod) {
  const StaticPolicy p = MakePolicy(testing::DualSocketHT(), std::nullopt, 2);
  CpuManagerState state = p.InitialState();
  EXPECT_EQ(p.Allocate(state, GuaranteedPod({Container("c", 2000)}), "x", std::nullopt)
                .status()
                .code(),
            absl::StatusCode::kNotFound);
}

TEST(StaticPolicyAllocateTest, FailsWithoutEnoughCpusAndLeavesTheStateAlone) {
  const StaticPolicy p = MakePolicy(testing::SingleSocketHT(), std::nullopt, 2);
  CpuManagerState state = p.InitialState();
  const CpuManagerState before = state;
  absl::StatusOr<CpuSet> got =
      p.Allocate(state, GuaranteedPod({Container("c", 7000)}), "c", std::nullopt);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(state, before);
}

TEST(StaticPolicyAllocateTest, FullPcpusOnlyRejectsAnOddRequest) {
  const StaticPolicy p = MakePolicy(testing::DualSocketHT(), std::nullopt, 2,
                                    {.full_pcpus_only = true});
  CpuManagerState state = p.InitialState();
  absl::StatusOr<CpuSet> got =
      p.Allocate(state, GuaranteedPod({Container("c", 3000)}), "c", std::nullopt);
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(IsSmtAlignmentError(got.status()));
  EXPECT_EQ(got.status().message(),
            "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2");
}

TEST(StaticPolicyAllocateTest, FullPcpusOnlyCountsReservedSiblingsAsUnavailable) {
  // Reserved 0 only: its sibling 4 is not a whole free core, so 8 - 2 = 6 physical CPUs.
  const StaticPolicy p = MakePolicy(testing::SingleSocketHT(), Cpus("0"), 1,
                                    {.full_pcpus_only = true});
  CpuManagerState state = p.InitialState();
  absl::StatusOr<CpuSet> got =
      p.Allocate(state, GuaranteedPod({Container("c", 8000)}), "c", std::nullopt);
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(IsSmtAlignmentError(got.status()));
  EXPECT_EQ(got.status().message(),
            "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 6, "
            "requested CPUs = 8, CPUs per core = 2");
}

TEST(StaticPolicyAllocateTest, NotEnoughCpusIsNotAnSmtError) {
  const StaticPolicy p = MakePolicy(testing::SingleSocketHT(), std::nullopt, 2);
  CpuManagerState state = p.InitialState();
  absl::StatusOr<CpuSet> got =
      p.Allocate(state, GuaranteedPod({Container("c", 8000)}), "c", std::nullopt);
  ASSERT_FALSE(got.ok());
  EXPECT_FALSE(IsSmtAlignmentError(got.status()));
}

struct AffinityCase {
  std::string name;
  std::function<CpuTopology()> machine;
  StaticPolicyOptions options;
  std::vector<int> numa_nodes;
  int64_t cpu_milli;
  const char* expected;
};

class StaticPolicyAffinityTest : public ::testing::TestWithParam<AffinityCase> {};

TEST_P(StaticPolicyAffinityTest, TakesAlignedCpusFirst) {
  const AffinityCase& c = GetParam();
  const StaticPolicy p = MakePolicy(c.machine(), std::nullopt, 2, c.options);
  CpuManagerState state = p.InitialState();
  absl::StatusOr<CpuSet> got =
      p.Allocate(state, GuaranteedPod({Container("c", c.cpu_milli)}), "c",
                 TopologyHint{.numa_nodes = c.numa_nodes, .preferred = true});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, Cpus(c.expected));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, StaticPolicyAffinityTest,
    ::testing::Values(
        // Reserved 0,12 (DualSocketHT). NUMA 1 = CPUs 6-11,18-23.
        AffinityCase{"takes cores of the hinted NUMA node", testing::DualSocketHT, {}, {1}, 4000,
                     "6-7,18-19"},
        // The hinted node gives all 12, then core 1 of NUMA 0 (its first whole free core).
        AffinityCase{"spills beyond the hinted NUMA node when it is too small",
                     testing::DualSocketHT, {}, {1}, 14000, "1,6-11,13,18-23"},
        // DualSocketMultiNumaPerSocketHT, reserved 0,16. Hint NUMA 0 (free 1-3,17-19): all 6,
        // then 4 from the rest: socket 0 (8 free) before socket 1, NUMA 1, cores 4 and 5.
        AffinityCase{"fills the hinted NUMA node before the rest",
                     testing::DualSocketMultiNumaPerSocketHT, {}, {0}, 10000, "1-5,17-21"},
        // align-by-socket widens the hint to socket 0 (NUMA 0 and 1): NUMA 1 is free and
        // whole (8), then core 1 of NUMA 0.
        AffinityCase{"widens the hint to whole sockets with align by socket",
                     testing::DualSocketMultiNumaPerSocketHT, {.align_by_socket = true}, {0},
                     10000, "1,4-7,17,20-23"},
        // distribute-cpus-across-numa (group 1), reserved 0,16: the pair NUMA 1 + NUMA 2
        // leaves the most even free counts (6,2,2,8: deviation 2.598 < 3.571 with NUMA 0).
        // The hint names all four nodes, yet the CPUs land on two: kubelet v1.35.4 distributes
        // over the fewest NUMA nodes inside the hint (kubelet#139430, fixed upstream after
        // v1.35.4; Huygens mirrors v1.35.4, docs/allocate.md).
        AffinityCase{"balances NUMA nodes with distribute cpus across numa",
                     testing::DualSocketMultiNumaPerSocketHT,
                     {.distribute_cpus_across_numa = true}, {0, 1, 2, 3}, 12000,
                     "4-6,8-10,20-22,24-26"}),
    [](const ::testing::TestParamInfo<AffinityCase>& p) {
      std::string n;
      for (char c : p.param.name) n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return n;
    });

// ---- Init containers ------------------------------------------------------------------------

TEST(StaticPolicyInitContainersTest, AppContainerReusesARegularInitContainersCpus) {
  const StaticPolicy p = MakePolicy(testing::DualSocketHT(), std::nullopt, 2);
  CpuManagerState state = p.InitialState();
  const PodSpec pod =
      GuaranteedPod({Container("app", 2000)}, {Container("init", 2000, /*init=*/true)});
  const CpuSet init = *p.Allocate(state, pod, "init", std::nullopt);
  EXPECT_EQ(init, Cpus("1,13"));
  EXPECT_EQ(p.ReusableCpus(state, pod), init);
  EXPECT_EQ(*p.Allocate(state, pod, "app", std::nullopt), init);
  EXPECT_EQ(p.ReusableCpus(state, pod), CpuSet());
  EXPECT_EQ(state.default_cpu_set, Cpus("0,2-12,14-23"));
  // Removing the init container keeps CPUs the app container still holds out of the pool.
  p.RemoveContainer(state, "pod-1", "init");
  EXPECT_EQ(state.default_cpu_set, Cpus("0,2-12,14-23"));
  p.RemoveContainer(state, "pod-1", "app");
  EXPECT_EQ(state, p.InitialState());
}

TEST(StaticPolicyInitContainersTest, RestartableInitContainerKeepsItsCpus) {
  const StaticPolicy p = MakePolicy(testing::DualSocketHT(), std::nullopt, 2);
  CpuManagerState state = p.InitialState();
  const PodSpec pod = GuaranteedPod(
      {Container("app", 2000)}, {Container("sidecar", 2000, /*init=*/true, /*restartable=*/true)});
  EXPECT_EQ(*p.Allocate(state, pod, "sidecar", std::nullopt), Cpus("1,13"));
  EXPECT_EQ(p.ReusableCpus(state, pod), CpuSet());
  EXPECT_EQ(*p.Allocate(state, pod, "app", std::nullopt), Cpus("2,14"));
}

TEST(StaticPolicyRemoveTest, IgnoresUnknownContainers) {
  const StaticPolicy p = MakePolicy(testing::DualSocketHT(), std::nullopt, 2);
  CpuManagerState state = p.InitialState();
  p.RemoveContainer(state, "nobody", "c");
  EXPECT_EQ(state, p.InitialState());
}

// ---- Properties -----------------------------------------------------------------------------

// Random pods come and go on random machines: the default set and the assignments always
// partition the online CPUs (minus reserved under strict reservation), and with full-pcpus-only
// and a whole-core reservation no container ever gets part of a core.
TEST(StaticPolicyPropertiesTest, StateStaysAPartitionAndCoresStayWhole) {
  std::mt19937 rng(2024);
  for (int round = 0; round < 60; ++round) {
    testing::MachineSpec spec;
    spec.sockets = 1 + static_cast<int>(rng() % 2);
    spec.numa_per_socket = 1 + static_cast<int>(rng() % 2);
    spec.cores_per_numa = 2 + static_cast<int>(rng() % 4);
    spec.threads_per_core = 2;
    const CpuTopology topo = testing::BuildMachine(spec);
    const bool full = rng() % 2 == 0;
    const StaticPolicyOptions options{.full_pcpus_only = full,
                                      .distribute_cpus_across_numa = rng() % 3 == 0,
                                      .strict_cpu_reservation = rng() % 2 == 0};
    const StaticPolicy p = MakePolicy(topo, std::nullopt, 2, options);
    CpuManagerState state = p.InitialState();
    const CpuSet universe = p.InitialState().default_cpu_set;
    std::vector<std::string> live;
    for (int step = 0; step < 40; ++step) {
      if (!live.empty() && rng() % 3 == 0) {
        const size_t i = rng() % live.size();
        p.RemoveContainer(state, live[i], "c");
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        PodSpec pod = GuaranteedPod({Container("c", 1000 * (1 + static_cast<int>(rng() % 6)))});
        pod.uid = "pod-" + std::to_string(step);
        absl::StatusOr<CpuSet> got = p.Allocate(state, pod, "c", std::nullopt);
        if (got.ok()) {
          live.push_back(pod.uid);
          if (full) {
            for (int cpu : *got) EXPECT_TRUE(topo.SiblingsOf(cpu).IsSubsetOf(*got));
          }
        }
      }
      CpuSet::Builder all(state.default_cpu_set);
      int total = state.default_cpu_set.Size();
      for (const auto& [uid, containers] : state.assignments) {
        for (const auto& [name, cpus] : containers) {
          all.Add(cpus);
          total += cpus.Size();
        }
      }
      EXPECT_EQ(all.Build(), universe);
      EXPECT_EQ(total, universe.Size()) << "overlapping sets";
    }
  }
}

}  // namespace
}  // namespace huygens
