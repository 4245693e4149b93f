// Benchmarks for CpuSet at the sizes Huygens meets: 384 CPUs (a large two-socket server) and
// 8192 (the maximum). Every benchmark reports `allocs/op`, the heap allocations per operation,
// counted by the global operator new replaced below: set algebra must allocate at most once per
// result (never per element), and not at all while the result fits inline (below 512 CPUs).
//
// Run: ninja -C <build> cpuset_bench && <build>/cpuset/cpuset_bench
#include <atomic>
#include <cstdlib>
#include <new>
#include <string>

#include "benchmark/benchmark.h"
#include "cpuset/cpuset.h"

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

// The replaced operators pair malloc with free; GCC cannot see that through inlining and
// reports a false -Wmismatched-new-delete.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return ::operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace huygens {
namespace {

// Every `step`-th CPU of [offset, ncpus): a realistic scattered set that spans the whole range.
CpuSet Strided(int ncpus, int step, int offset) {
  CpuSet::Builder b;
  for (int cpu = offset; cpu < ncpus; cpu += step) b.Add(cpu);
  return b.Build();
}

// Pairs of adjacent CPUs with gaps ({0,1,4,5,8,9,...} below ncpus): a fragmented cpu-list.
CpuSet SiblingPairs(int ncpus) {
  return CpuSet::Parse("0-" + std::to_string(ncpus - 1) + ":2/4").value();
}

// Counts allocations over the timed loop and reports them per iteration.
class AllocationCounter {
 public:
  explicit AllocationCounter(benchmark::State& state)
      : state_(state), start_(g_allocations.load()) {}
  ~AllocationCounter() {
    const long n = g_allocations.load() - start_;
    state_.counters["allocs/op"] = benchmark::Counter(
        static_cast<double>(n), benchmark::Counter::kAvgIterations);
  }

 private:
  benchmark::State& state_;
  long start_;
};

int Cpus(const benchmark::State& state) { return static_cast<int>(state.range(0)); }

void BM_Union(benchmark::State& state) {
  const CpuSet a = Strided(Cpus(state), 2, 0), b = Strided(Cpus(state), 3, 0);
  AllocationCounter count(state);
  for (auto _ : state) benchmark::DoNotOptimize(a.Union(b));
}

void BM_Intersection(benchmark::State& state) {
  const CpuSet a = Strided(Cpus(state), 2, 0), b = Strided(Cpus(state), 3, 0);
  AllocationCounter count(state);
  for (auto _ : state) benchmark::DoNotOptimize(a.Intersection(b));
}

void BM_Difference(benchmark::State& state) {
  const CpuSet a = Strided(Cpus(state), 2, 0), b = Strided(Cpus(state), 3, 0);
  AllocationCounter count(state);
  for (auto _ : state) benchmark::DoNotOptimize(a.Difference(b));
}

void BM_IsSubsetOf(benchmark::State& state) {
  const CpuSet a = Strided(Cpus(state), 2, 0), b = Strided(Cpus(state), 1, 0);
  AllocationCounter count(state);
  for (auto _ : state) benchmark::DoNotOptimize(a.IsSubsetOf(b));
}

void BM_Size(benchmark::State& state) {
  const CpuSet a = Strided(Cpus(state), 2, 1);
  AllocationCounter count(state);
  for (auto _ : state) benchmark::DoNotOptimize(a.Size());
}

void BM_Iterate(benchmark::State& state) {
  const CpuSet a = Strided(Cpus(state), 2, 1);
  AllocationCounter count(state);
  for (auto _ : state) {
    int sum = 0;
    for (int cpu : a) sum += cpu;
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * a.Size());
}

void BM_Parse(benchmark::State& state) {
  // A fragmented list: pairs of siblings with gaps ("0-1,4-5,...").
  const std::string text = SiblingPairs(Cpus(state)).ToString();
  AllocationCounter count(state);
  for (auto _ : state) benchmark::DoNotOptimize(CpuSet::Parse(text));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(text.size()));
}

void BM_ToString(benchmark::State& state) {
  const CpuSet a = SiblingPairs(Cpus(state));
  AllocationCounter count(state);
  for (auto _ : state) benchmark::DoNotOptimize(a.ToString());
}

void BM_ParseMask(benchmark::State& state) {
  const std::string mask = Strided(Cpus(state), 2, 1).ToMask();
  AllocationCounter count(state);
  for (auto _ : state) benchmark::DoNotOptimize(CpuSet::ParseMask(mask));
}

// The allocation proof: a chain of algebra over 1024-CPU sets. Each result costs at most one
// allocation (the 16-word result outgrows the 8 inline words), whatever the number of members;
// `allocs/op` stays at 3 for 3 results however many CPUs the sets hold.
void BM_AlgebraChainAllocations(benchmark::State& state) {
  const CpuSet a = Strided(Cpus(state), 1, 0), b = Strided(Cpus(state), 3, 1),
               c = Strided(Cpus(state), 5, 2);
  AllocationCounter count(state);
  for (auto _ : state) {
    CpuSet r = a.Difference(b).Union(c).Intersection(a);
    benchmark::DoNotOptimize(r);
  }
}

}  // namespace
}  // namespace huygens

BENCHMARK(huygens::BM_Union)->Arg(384)->Arg(8192);
BENCHMARK(huygens::BM_Intersection)->Arg(384)->Arg(8192);
BENCHMARK(huygens::BM_Difference)->Arg(384)->Arg(8192);
BENCHMARK(huygens::BM_IsSubsetOf)->Arg(384)->Arg(8192);
BENCHMARK(huygens::BM_Size)->Arg(384)->Arg(8192);
BENCHMARK(huygens::BM_Iterate)->Arg(384)->Arg(8192);
BENCHMARK(huygens::BM_Parse)->Arg(384)->Arg(8192);
BENCHMARK(huygens::BM_ToString)->Arg(384)->Arg(8192);
BENCHMARK(huygens::BM_ParseMask)->Arg(384)->Arg(8192);
BENCHMARK(huygens::BM_AlgebraChainAllocations)->Arg(384)->Arg(512)->Arg(1024)->Arg(8192);
