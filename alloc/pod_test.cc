// Tests for alloc/pod.h: QoS as kubelet's GetPodQOS computes it, Huygens' default CPU policy
// (DESIGN.md) and kubelet's guaranteedCPUs rule.
#include "alloc/pod.h"

#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace huygens {
namespace {

ContainerSpec C(int64_t cpu_req, int64_t cpu_lim, int64_t mem_req, int64_t mem_lim) {
  return ContainerSpec{.name = "c",
                       .cpu_request_milli = cpu_req,
                       .cpu_limit_milli = cpu_lim,
                       .memory_request_bytes = mem_req,
                       .memory_limit_bytes = mem_lim};
}

struct QosCase {
  std::string name;
  PodSpec pod;
  QosClass qos;
  CpuPolicy policy;
  int exclusive_cpus_of_first_container;
};

class PodQosTest : public ::testing::TestWithParam<QosCase> {};

TEST_P(PodQosTest, ClassifiesLikeKubelet) {
  const QosCase& c = GetParam();
  EXPECT_EQ(QosOf(c.pod), c.qos);
  EXPECT_EQ(EffectiveCpuPolicy(c.pod), c.policy);
  EXPECT_EQ(ExclusiveCpus(c.pod, c.pod.containers[0]), c.exclusive_cpus_of_first_container);
}

constexpr int64_t kGi = int64_t{1} << 30;

INSTANTIATE_TEST_SUITE_P(
    Cases, PodQosTest,
    ::testing::Values(
        QosCase{"a pod without requests or limits is best effort",
                PodSpec{.containers = {C(0, 0, 0, 0)}}, QosClass::kBestEffort,
                CpuPolicy::kShared, 0},
        QosCase{"equal requests and limits make a guaranteed exclusive pod",
                PodSpec{.containers = {C(2000, 2000, kGi, kGi)}}, QosClass::kGuaranteed,
                CpuPolicy::kExclusive, 2},
        // API defaulting: a missing request takes the limit.
        QosCase{"limits alone make a guaranteed pod",
                PodSpec{.containers = {C(0, 3000, 0, kGi)}}, QosClass::kGuaranteed,
                CpuPolicy::kExclusive, 3},
        QosCase{"a fractional guaranteed request stays shared",
                PodSpec{.containers = {C(1500, 1500, kGi, kGi)}}, QosClass::kGuaranteed,
                CpuPolicy::kShared, 0},
        QosCase{"a missing memory limit makes the pod burstable",
                PodSpec{.containers = {C(2000, 2000, kGi, 0)}}, QosClass::kBurstable,
                CpuPolicy::kShared, 0},
        QosCase{"a burstable init container makes the whole pod burstable",
                PodSpec{.init_containers = {C(1000, 2000, kGi, kGi)},
                        .containers = {C(2000, 2000, kGi, kGi)}},
                QosClass::kBurstable, CpuPolicy::kShared, 0},
        QosCase{"a fractional init container keeps a guaranteed pod shared by default",
                PodSpec{.init_containers = {C(500, 500, kGi, kGi)},
                        .containers = {C(2000, 2000, kGi, kGi)}},
                QosClass::kGuaranteed, CpuPolicy::kShared, 2},
        QosCase{"the annotation overrides the default policy",
                PodSpec{.containers = {C(2000, 2000, kGi, kGi)},
                        .cpu_policy = CpuPolicy::kNone},
                QosClass::kGuaranteed, CpuPolicy::kNone, 2}),
    [](const ::testing::TestParamInfo<QosCase>& p) {
      std::string n;
      for (char c : p.param.name) n += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      return n;
    });

TEST(PodNamesTest, RoundTripsKubernetesAndHuygensNames) {
  for (TopologyPolicy p : {TopologyPolicy::kNone, TopologyPolicy::kBestEffort,
                           TopologyPolicy::kRestricted, TopologyPolicy::kSingleNumaNode}) {
    EXPECT_EQ(ParseTopologyPolicy(ToString(p)), p);
  }
  for (BindPolicy p : {BindPolicy::kPacked, BindPolicy::kFullCores, BindPolicy::kSpreadCores}) {
    EXPECT_EQ(ParseBindPolicy(ToString(p)), p);
  }
  for (CpuPolicy p : {CpuPolicy::kExclusive, CpuPolicy::kShared, CpuPolicy::kNone}) {
    EXPECT_EQ(ParseCpuPolicy(ToString(p)), p);
  }
  for (TopologyScope s : {TopologyScope::kContainer, TopologyScope::kPod}) {
    EXPECT_EQ(ParseTopologyScope(ToString(s)), s);
  }
  for (AffinityGroupPolicy p :
       {AffinityGroupPolicy::kSameNuma, AffinityGroupPolicy::kNearest, AffinityGroupPolicy::kSpread}) {
    EXPECT_EQ(ParseAffinityGroupPolicy(ToString(p)), p);
  }
  EXPECT_STREQ(ToString(TopologyPolicy::kSingleNumaNode), "single-numa-node");
  EXPECT_STREQ(ToString(BindPolicy::kSpreadCores), "spread-cores");
  EXPECT_STREQ(ToString(QosClass::kBestEffort), "BestEffort");
  EXPECT_EQ(ParseTopologyPolicy("single-numa"), std::nullopt);
  EXPECT_STREQ(ToString(AffinityGroupPolicy::kSameNuma), "same-numa");
  EXPECT_EQ(ParseAffinityGroupPolicy("Same-Numa"), std::nullopt);
}

}  // namespace
}  // namespace huygens
