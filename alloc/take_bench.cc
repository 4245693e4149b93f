// Benchmarks for alloc/take.h: kubelet's take-by-topology on 384- and 768-CPU machines
// (2 sockets x 4 NUMA nodes x 24 or 48 cores x 2 threads, 8 cores per L3 group) at 50% random
// occupancy, for 1, 4, 16 and 64 CPUs.
//
//   ninja -C build alloc_take_bench && build/alloc/alloc_take_bench
//       --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Arguments: {cores per NUMA node, CPUs requested}. "Index" variants take on a prebuilt
// TopologyIndex (what a caller that keeps one per node pays); the others build it per call.
#include <algorithm>
#include <random>
#include <vector>

#include "alloc/take.h"
#include "benchmark/benchmark.h"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

CpuSet HalfBusy(const CpuTopology& topo, unsigned seed) {
  std::mt19937 rng(seed);
  CpuSet::Builder b;
  for (int cpu : topo.OnlineCpus()) {
    if (rng() % 2) b.Add(cpu);
  }
  return b.Build();
}

// With --benchmark_repetitions, also report the fastest repetition ("_min"): on a shared,
// loaded machine it is the figure least disturbed by other work.
double Min(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

void Args(benchmark::internal::Benchmark* b) {
  for (int cores : {24, 48}) {
    for (int n : {1, 4, 16, 64}) b->Args({cores, n});
  }
  b->ComputeStatistics("min", Min);
}

void BM_TakePacked(benchmark::State& state) {
  const CpuTopology topo = testing::LargeMachine(static_cast<int>(state.range(0)));
  const CpuSet available = HalfBusy(topo, 1);
  const int n = static_cast<int>(state.range(1));
  for (auto _ : state) {
    benchmark::DoNotOptimize(TakeByTopology(topo, available, n));
  }
  state.SetLabel(std::to_string(topo.NumCpus()) + " CPUs");
}
BENCHMARK(BM_TakePacked)->Apply(Args);

void BM_TakePackedIndex(benchmark::State& state) {
  const CpuTopology topo = testing::LargeMachine(static_cast<int>(state.range(0)));
  const TopologyIndex index(topo);
  const CpuSet available = HalfBusy(topo, 1);
  const int n = static_cast<int>(state.range(1));
  for (auto _ : state) {
    benchmark::DoNotOptimize(TakeByTopology(index, available, n));
  }
  state.SetLabel(std::to_string(topo.NumCpus()) + " CPUs");
}
BENCHMARK(BM_TakePackedIndex)->Apply(Args);

void BM_TakeSpreadIndex(benchmark::State& state) {
  const CpuTopology topo = testing::LargeMachine(static_cast<int>(state.range(0)));
  const TopologyIndex index(topo);
  const CpuSet available = HalfBusy(topo, 1);
  const int n = static_cast<int>(state.range(1));
  const TakeOptions options{.cpu_sorting_strategy = CpuSortingStrategy::kSpread};
  for (auto _ : state) {
    benchmark::DoNotOptimize(TakeByTopology(index, available, n, options));
  }
}
BENCHMARK(BM_TakeSpreadIndex)->Apply(Args);

void BM_TakeUncoreIndex(benchmark::State& state) {
  const CpuTopology topo = testing::LargeMachine(static_cast<int>(state.range(0)));
  const TopologyIndex index(topo);
  const CpuSet available = HalfBusy(topo, 1);
  const int n = static_cast<int>(state.range(1));
  const TakeOptions options{.prefer_align_by_uncore_cache = true};
  for (auto _ : state) {
    benchmark::DoNotOptimize(TakeByTopology(index, available, n, options));
  }
}
BENCHMARK(BM_TakeUncoreIndex)->Apply(Args);

void BM_TakeDistributedIndex(benchmark::State& state) {
  const CpuTopology topo = testing::LargeMachine(static_cast<int>(state.range(0)));
  const TopologyIndex index(topo);
  const CpuSet available = HalfBusy(topo, 1);
  const int n = static_cast<int>(state.range(1));
  for (auto _ : state) {
    benchmark::DoNotOptimize(TakeByTopologyNumaDistributed(index, available, n, 1));
  }
}
BENCHMARK(BM_TakeDistributedIndex)->Apply(Args);

void BM_BuildIndex(benchmark::State& state) {
  const CpuTopology topo = testing::LargeMachine(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(TopologyIndex(topo));
  }
}
BENCHMARK(BM_BuildIndex)->Arg(24)->Arg(48);

}  // namespace
}  // namespace huygens
