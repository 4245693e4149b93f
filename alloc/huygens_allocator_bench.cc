// Benchmarks: Huygens' allocator on large nodes at 50% random occupancy, and kubelet hints +
// merge on 8 NUMA nodes. Goal: under 2 us for 16 CPUs on 384 CPUs.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "alloc/hints.h"
#include "alloc/huygens_allocator.h"
#include "alloc/merge.h"
#include "benchmark/benchmark.h"
#include "fmt/format.h"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

CpuSet HalfFree(const CpuTopology& topo, unsigned seed) {
  std::mt19937 rng(seed);
  CpuSet::Builder free;
  for (int cpu : topo.OnlineCpus()) {
    if (rng() % 2) free.Add(cpu);
  }
  return free.Build();
}

// With --benchmark_repetitions, also report the fastest repetition ("_min"): on a shared,
// loaded machine it is the figure least disturbed by other work.
double Min(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

// Args: cores per NUMA node (24 -> 384 CPUs, 48 -> 768), CPUs requested, bind policy.
void BM_AllocateExclusive(benchmark::State& state) {
  const CpuTopology topo = testing::LargeMachine(static_cast<int>(state.range(0)));
  const ExclusiveAllocator allocator(topo);
  const CpuSet available = HalfFree(topo, 1);
  ExclusiveRequest r;
  r.num_cpus = static_cast<int>(state.range(1));
  r.bind_policy = static_cast<BindPolicy>(state.range(2));
  r.topology_policy = TopologyPolicy::kBestEffort;
  bool ok = true;
  for (auto _ : state) {
    absl::StatusOr<ExclusiveAllocation> got = allocator.Allocate(available, r);
    ok = got.ok();
    benchmark::DoNotOptimize(got);
  }
  // full-cores refuses 1 CPU on an SMT machine: that refusal is what is measured then.
  state.SetLabel(fmt::format("{} cpus, {}{}", topo.NumCpus(), ToString(r.bind_policy),
                             ok ? "" : ", refused"));
}
BENCHMARK(BM_AllocateExclusive)
    ->ArgsProduct({{24, 48}, {1, 4, 16, 64}, {0, 1, 2}})
    ->ArgNames({"cores_per_numa", "cpus", "bind"})
    ->ComputeStatistics("min", Min);

// A pod's later container under packed (ExclusiveRequest::pod_cpus): the pod's first
// container took 15 CPUs (so it half holds a core), and the second asks for range(1) CPUs over
// the same free CPUs, with those 15 as pod_cpus when range(2) is 1 (the allocator then looks
// for the pod's own half cores) and without when 0: the difference is the cost of that rule.
void BM_AllocateExclusiveLaterContainer(benchmark::State& state) {
  const CpuTopology topo = testing::LargeMachine(static_cast<int>(state.range(0)));
  const ExclusiveAllocator allocator(topo);
  const CpuSet free = HalfFree(topo, 1);
  ExclusiveRequest first;
  first.num_cpus = 15;
  first.topology_policy = TopologyPolicy::kBestEffort;
  absl::StatusOr<ExclusiveAllocation> taken = allocator.Allocate(free, first);
  if (!taken.ok()) {
    state.SkipWithError(std::string(taken.status().message()).c_str());
    return;
  }
  const CpuSet available = free.Difference(taken->cpus);
  ExclusiveRequest r = first;
  r.num_cpus = static_cast<int>(state.range(1));
  if (state.range(2) != 0) r.pod_cpus = taken->cpus;
  for (auto _ : state) benchmark::DoNotOptimize(allocator.Allocate(available, r));
  state.SetLabel(fmt::format("{} cpus, first container {}", topo.NumCpus(), taken->cpus.ToString()));
}
BENCHMARK(BM_AllocateExclusiveLaterContainer)
    ->ArgsProduct({{24, 48}, {1, 4, 16}, {0, 1}})
    ->ArgNames({"cores_per_numa", "cpus", "pod_cpus"})
    ->ComputeStatistics("min", Min);

// The path a node takes (NodeState passes its user pool as allocatable_cpus): packed, with a
// system pool of range(1) CPUs (the first ones, kubelet's order from a count) outside the user
// pool, whose cores the allocator visits for unshared half cores, against range(1) = 0 (no
// allocatable_cpus): the difference is the cost of that rule.
void BM_AllocateExclusiveWithSystemPool(benchmark::State& state) {
  const CpuTopology topo = testing::LargeMachine(static_cast<int>(state.range(0)));
  const ExclusiveAllocator allocator(topo);
  const CpuSet system = CpuSet::Range(0, static_cast<int>(state.range(1)) - 1);
  const CpuSet available = HalfFree(topo, 1).Difference(system);
  ExclusiveRequest r;
  r.num_cpus = 4;
  r.topology_policy = TopologyPolicy::kBestEffort;
  if (state.range(1) > 0) r.allocatable_cpus = topo.OnlineCpus().Difference(system);
  for (auto _ : state) benchmark::DoNotOptimize(allocator.Allocate(available, r));
  state.SetLabel(fmt::format("{} cpus", topo.NumCpus()));
}
BENCHMARK(BM_AllocateExclusiveWithSystemPool)
    ->ArgsProduct({{24, 48}, {0, 1, 8}})
    ->ArgNames({"cores_per_numa", "system_cpus"})
    ->ComputeStatistics("min", Min);

// The free function, which indexes the topology on every call.
void BM_AllocateExclusiveUnindexed(benchmark::State& state) {
  const CpuTopology topo = testing::LargeMachine(24);
  const CpuSet available = HalfFree(topo, 1);
  ExclusiveRequest r;
  r.num_cpus = 16;
  r.topology_policy = TopologyPolicy::kBestEffort;
  for (auto _ : state) benchmark::DoNotOptimize(AllocateExclusive(topo, available, r));
}
BENCHMARK(BM_AllocateExclusiveUnindexed)->ComputeStatistics("min", Min);

// CPU hints (8 NUMA nodes) and the merge of cpu + memory hints under restricted.
void BM_HintsAndMerge(benchmark::State& state) {
  const CpuTopology topo = testing::LargeMachine(24);
  const CpuSet available = HalfFree(topo, 2);
  const std::vector<int> numa = topo.NumaNodeIds();
  std::map<int, std::map<int, int>> distances;
  for (int a : numa) {
    for (int b : numa) distances[a][b] = topo.Distance(a, b);
  }
  const TopologyManagerOptions options{.prefer_closest_numa_nodes = true};
  const int num_cpus = static_cast<int>(state.range(0));
  for (auto _ : state) {
    std::vector<std::map<std::string, ProviderHints>> providers;
    providers.reserve(2);
    providers.push_back(CpuProviderHints(topo, available, {}, num_cpus));
    providers.push_back(
        {{"memory", std::vector<TopologyHint>{{{0}, true}, {{1}, true}, {{0, 1}, false}}}});
    benchmark::DoNotOptimize(
        MergeHints(TopologyPolicy::kRestricted, options, numa, distances, providers));
  }
}
BENCHMARK(BM_HintsAndMerge)->Arg(1)->Arg(4)->Arg(16)->Arg(64)->ComputeStatistics("min", Min);

}  // namespace
}  // namespace huygens
