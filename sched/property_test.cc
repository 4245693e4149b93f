// Randomised consistency property of the whole scheduling core: schedule and delete many pods
// on a few nodes of different machines; after every event no two pods hold one exclusive CPU,
// every node's NodeState validates clean, every placement satisfies its topology policy, and
// the cache's per-node sums equal a recount over its pods.
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sched/scheduler.h"
#include "sched/test_util.h"
#include "topology/testing/machines.h"

namespace huygens::sched {
namespace {

using testing::GuaranteedPod;
using testing::MachineNode;
using testing::Share;

void CheckConsistent(const ClusterCache& cache, const std::string& when) {
  SCOPED_TRACE(when);
  for (const NodeInfo* node : cache.Nodes()) {
    ASSERT_NE(node->cpu_state, nullptr);
    EXPECT_THAT(node->cpu_state->Validate(), ::testing::IsEmpty()) << node->node.name;
    // No two pods hold one exclusive CPU, recounted from the cache's own records.
    std::map<int, std::string> holder;
    int64_t cpu_milli = 0;
    for (const std::string& uid : node->pod_uids) {
      const ClusterCache::PodEntry* e = cache.FindPod(uid);
      ASSERT_NE(e, nullptr);
      EXPECT_EQ(e->node, node->node.name);
      cpu_milli += ComputePodRequests(*e->pod).cpu_milli;
      if (!e->allocation.has_value()) continue;
      CpuSet pod_cpus;
      for (const ContainerAllocation& c : e->allocation->containers) {
        if (c.exclusive) pod_cpus = pod_cpus.Union(c.cpuset);
      }
      for (int cpu : pod_cpus) {
        auto [it, fresh] = holder.emplace(cpu, uid);
        EXPECT_TRUE(fresh) << "cpu " << cpu << " held by " << it->second << " and " << uid;
      }
      const TopologyPolicy policy = e->pod->spec.topology_policy.value_or(
          node->cpu_state->Config().topology_policy);
      if (policy == TopologyPolicy::kSingleNumaNode && !pod_cpus.Empty()) {
        // Scope pod aligns the whole pod, scope container each container (kubelet).
        if (node->cpu_state->Config().topology_scope == TopologyScope::kPod) {
          EXPECT_EQ(node->cpu_state->Topology().NumaNodesOf(pod_cpus).size(), 1u) << uid;
        } else {
          for (const ContainerAllocation& c : e->allocation->containers) {
            if (!c.exclusive) continue;
            EXPECT_EQ(node->cpu_state->Topology().NumaNodesOf(c.cpuset).size(), 1u) << uid;
          }
        }
      }
      if (e->pod->spec.bind_policy == BindPolicy::kFullCores) {
        for (int core : node->cpu_state->Topology().CoresOf(pod_cpus)) {
          EXPECT_TRUE(node->cpu_state->Topology().CpusInCore(core).IsSubsetOf(pod_cpus)) << uid;
        }
      }
    }
    EXPECT_EQ(node->requested.cpu_milli, cpu_milli) << node->node.name;
  }
}

TEST(SchedulingProperty, NoTwoPodsEverShareAnExclusiveCpuAndEveryPlacementKeepsItsPolicy) {
  using namespace huygens::testing;
  const std::vector<std::shared_ptr<const CpuTopology>> shapes = {
      std::make_shared<const CpuTopology>(DualSocketHT()),
      std::make_shared<const CpuTopology>(DualSocketMultiNumaPerSocketHT()),
      std::make_shared<const CpuTopology>(EpycLikeSplitL3()),
  };
  constexpr TopologyPolicy kPolicies[] = {TopologyPolicy::kSingleNumaNode,
                                          TopologyPolicy::kRestricted,
                                          TopologyPolicy::kBestEffort};
  constexpr BindPolicy kBinds[] = {BindPolicy::kPacked, BindPolicy::kFullCores,
                                   BindPolicy::kSpreadCores};
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    std::mt19937 rng(seed);
    ClusterCache cache;
    for (int i = 0; i < 6; ++i) {
      NodeConfig config;
      config.topology_policy = kPolicies[i % 3];
      config.topology_scope = i % 2 == 0 ? TopologyScope::kContainer : TopologyScope::kPod;
      config.numa_strategy = i % 2 == 0 ? NumaStrategy::kMostAllocated : NumaStrategy::kLeastAllocated;
      config.system_cpus = CpuSet{0};
      ASSERT_TRUE(cache.AddNode(MachineNode(fmt::format("n{}", i), shapes[static_cast<size_t>(i) % shapes.size()], config)).ok());
    }
    absl::StatusOr<std::unique_ptr<Scheduler>> scheduler = Scheduler::Create(&cache, HuygensProfile());
    ASSERT_TRUE(scheduler.ok());
    std::vector<std::string> running;
    int scheduled = 0, rejected = 0;
    for (int event = 0; event < 600; ++event) {
      if (!running.empty() && std::bernoulli_distribution(0.4)(rng)) {
        const size_t victim = std::uniform_int_distribution<size_t>(0, running.size() - 1)(rng);
        ASSERT_TRUE(cache.RemovePod(running[victim]).ok());
        running[victim] = running.back();
        running.pop_back();
      } else {
        const std::string uid = fmt::format("s{}-p{}", seed, event);
        Pod pod;
        if (std::bernoulli_distribution(0.2)(rng)) {
          pod = testing::SharedPod(uid, std::uniform_int_distribution<int64_t>(100, 3000)(rng));
        } else {
          pod = GuaranteedPod(uid, std::uniform_int_distribution<int>(1, 12)(rng));
          if (std::bernoulli_distribution(0.3)(rng)) {
            pod.spec.bind_policy = kBinds[std::uniform_int_distribution<int>(0, 2)(rng)];
          }
          if (std::bernoulli_distribution(0.2)(rng)) {
            ContainerSpec side = pod.spec.containers[0];
            side.name = "side";
            side.cpu_request_milli = side.cpu_limit_milli = 2000;
            pod.spec.containers.push_back(side);
          }
          if (std::bernoulli_distribution(0.2)(rng)) pod.spec.affinity_group = "g";
        }
        ScheduleResult r = (*scheduler)->ScheduleOne(Share(pod));
        if (r.scheduled()) {
          running.push_back(uid);
          ++scheduled;
        } else {
          ++rejected;
          EXPECT_EQ(cache.FindPod(uid), nullptr);
        }
      }
      CheckConsistent(cache, fmt::format("seed {} event {}", seed, event));
      if (::testing::Test::HasFailure()) return;
    }
    EXPECT_GT(scheduled, 100);
    EXPECT_GT(rejected, 0);  // the cluster was driven full
  }
}

}  // namespace
}  // namespace huygens::sched
