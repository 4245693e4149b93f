// Benchmarks: Huygens' allocator on large nodes at 50% random occupancy, and kubelet hints +
// merge on 8 NUMA nodes. Goal: under 2 us for 16 CPUs on 384 CPUs.
#include <algorithm>
#include <random>
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
