// ScheduleOne on a 5,000-node cluster of mixed shapes (32, 128 and 384 CPUs; 4 or 8 NUMA
// nodes), kept near 70% CPU occupancy: each iteration schedules one pod (80% exclusive, 1-16
// CPUs; 20% shared) and, once the cluster is warm, deletes the oldest running pod.
// The wide_pods cases run the nodes under topology policy best-effort and make 1% of the pods
// 64-CPU exclusive pods, wider than any NUMA node (48 CPUs at most), which then span NUMA
// nodes: once one runs, the cluster never has room for its largest exclusive pods
// (docs/scheduler.md, "room for the largest pods"), so NumaScore scans every node's NUMA
// figures once per scheduled pod instead of stopping at the first nodes with room.
// Reported: time per iteration and pods/s for the Huygens profile and the NUMA-blind default
// profile. Run: build-*/sched/sched_scheduler_bench --benchmark_min_time=2
#include <deque>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "fmt/format.h"
#include "sched/scheduler.h"
#include "sched/test_util.h"
#include "topology/testing/machines.h"

namespace huygens::sched {
namespace {

struct Cluster {
  ClusterCache cache;
  std::unique_ptr<Scheduler> scheduler;
  std::deque<std::string> running;
  std::mt19937 rng{42};
  int64_t next = 0;
  int64_t capacity_cpus = 0;
  int64_t used_cpus = 0;
  bool wide_pods = false;  // 1% of the pods are 64-CPU exclusive pods
};

std::unique_ptr<Cluster> BuildCluster(int num_nodes, Profile profile, bool wide_pods) {
  using namespace huygens::testing;
  const std::vector<std::shared_ptr<const CpuTopology>> shapes = {
      std::make_shared<const CpuTopology>(LargeMachine(24)),
      std::make_shared<const CpuTopology>(EpycLikeSplitL3()),
      std::make_shared<const CpuTopology>(DualSocketMultiNumaPerSocketHT()),
  };
  auto c = std::make_unique<Cluster>();
  c->wide_pods = wide_pods;
  // One NodeState per shape, copied by the cache for each node.
  std::vector<Node> templates;
  for (const auto& shape : shapes) {
    NodeConfig config;
    config.system_cpus = CpuSet{0, 1};
    config.default_bind_policy = BindPolicy::kPacked;
    if (wide_pods) config.topology_policy = TopologyPolicy::kBestEffort;
    templates.push_back(testing::MachineNode("template", shape, config));
  }
  for (int i = 0; i < num_nodes; ++i) {
    Node node = templates[static_cast<size_t>(i % 3)];
    node.name = fmt::format("node-{}", i);
    c->capacity_cpus += node.allocatable.cpu_milli / 1000;
    if (!c->cache.AddNode(std::move(node)).ok()) return nullptr;
  }
  absl::StatusOr<std::unique_ptr<Scheduler>> s = Scheduler::Create(&c->cache, std::move(profile));
  if (!s.ok()) return nullptr;
  c->scheduler = *std::move(s);
  return c;
}

PodPtr NextPod(Cluster& c) {
  const std::string uid = fmt::format("p{}", c.next++);
  static constexpr int kSizes[] = {1, 1, 2, 2, 2, 4, 4, 4, 8, 8, 16};
  if (std::bernoulli_distribution(0.2)(c.rng)) {
    return testing::Share(testing::SharedPod(uid, 500));
  }
  if (c.wide_pods && std::bernoulli_distribution(0.01)(c.rng)) {
    return testing::Share(testing::GuaranteedPod(uid, 64));
  }
  const int cpus = kSizes[std::uniform_int_distribution<size_t>(0, std::size(kSizes) - 1)(c.rng)];
  return testing::Share(testing::GuaranteedPod(uid, cpus));
}

void Step(Cluster& c, benchmark::State& state, int64_t& failed) {
  PodPtr pod = NextPod(c);
  const int64_t milli = ComputePodRequests(*pod).cpu_milli;
  ScheduleResult r = c.scheduler->ScheduleOne(pod);
  if (r.scheduled()) {
    c.running.push_back(pod->Uid());
    c.used_cpus += milli;
  } else {
    ++failed;
  }
  // Keep occupancy near 70%.
  while (c.used_cpus > c.capacity_cpus * 700 && !c.running.empty()) {
    const ClusterCache::PodEntry* e = c.cache.FindPod(c.running.front());
    c.used_cpus -= ComputePodRequests(*e->pod).cpu_milli;
    if (!c.cache.RemovePod(c.running.front()).ok()) state.SkipWithError("RemovePod failed");
    c.running.pop_front();
  }
}

void BM_ScheduleOne(benchmark::State& state, Profile profile, bool wide_pods) {
  std::unique_ptr<Cluster> c =
      BuildCluster(static_cast<int>(state.range(0)), std::move(profile), wide_pods);
  if (c == nullptr) {
    state.SkipWithError("cluster setup failed");
    return;
  }
  int64_t failed = 0;
  // Warm up to the steady state before timing.
  while (c->used_cpus < c->capacity_cpus * 690) Step(*c, state, failed);
  failed = 0;
  for (auto _ : state) Step(*c, state, failed);
  state.counters["pods/s"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate);
  state.counters["unschedulable"] = static_cast<double>(failed);
}

BENCHMARK_CAPTURE(BM_ScheduleOne, huygens, HuygensProfile(), false)
    ->Arg(5000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ScheduleOne, default, DefaultProfile(), false)
    ->Arg(5000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ScheduleOne, huygens_wide_pods, HuygensProfile(), true)
    ->Arg(5000)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ScheduleOne, default_wide_pods, DefaultProfile(), true)
    ->Arg(5000)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace huygens::sched
