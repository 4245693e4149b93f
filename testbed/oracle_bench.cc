// Side-by-side benchmark, Huygens' half: kubelet's packed take-by-topology as Huygens runs it
// (alloc/take.h on a prebuilt TopologyIndex), on the inputs the kubelet oracle times with
// `-time` (testbed/oracle). scripts/oracle-bench.sh runs both and prints one table with the
// ratio per row (docs/allocate.md).
//
// Rows: 384 and 768 CPUs (topology/testing/machines.h LargeMachine: 2 sockets x 4 NUMA nodes x
// 24 or 48 cores x 2 threads, 8 cores per L3 group), a fixed occupancy (every third core busy
// and one thread of every fifth), 1/4/16/64 CPUs, without and with
// prefer-align-cpus-by-uncorecache. Nanoseconds per call exclude building the index, parsing and
// output on both sides.
//
// With HUYGENS_ORACLE_BENCH_CASES=<folder>, the program writes instead the same rows as
// `huygens allocate` take requests (<folder>/cases.jsonl, id = the benchmark's name) and the
// machines as topology JSON (<folder>/machine-<cpus>.json), and exits.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "alloc/take.h"
#include "benchmark/benchmark.h"
#include "fmt/format.h"
#include "topology/json.h"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

constexpr int kCoresPerNuma[] = {24, 48};
constexpr int kRequests[] = {1, 4, 16, 64};

// The fixed occupancy of every row: every third core busy, one thread of every fifth.
CpuSet Available(const CpuTopology& topo) {
  CpuSet::Builder b;
  for (const CpuInfo& c : topo.Cpus()) {
    if (c.core % 3 == 0) continue;
    if (c.core % 5 == 0 && c.id == topo.CpusInCore(c.core).Min()) continue;
    b.Add(c.id);
  }
  return b.Build();
}

std::string RowName(int cpus, int n, bool uncore) {
  return fmt::format("take/{}cpus/{}/{}", cpus, n, uncore ? "uncore" : "plain");
}

void BM_HuygensTake(benchmark::State& state, int cores_per_numa, int n, bool uncore) {
  const CpuTopology topo = testing::LargeMachine(cores_per_numa);
  const TopologyIndex index(topo);
  const CpuSet available = Available(topo);
  const TakeOptions options{.prefer_align_by_uncore_cache = uncore};
  for (auto _ : state) {
    benchmark::DoNotOptimize(TakeByTopology(index, available, n, options));
  }
}

void RegisterAll() {
  for (int cores : kCoresPerNuma) {
    for (int n : kRequests) {
      for (bool uncore : {false, true}) {
        benchmark::RegisterBenchmark(
            RowName(cores * 16, n, uncore).c_str(),
            [cores, n, uncore](benchmark::State& state) { BM_HuygensTake(state, cores, n, uncore); });
      }
    }
  }
}

int EmitCases(const std::string& dir) {
  std::ofstream cases(dir + "/cases.jsonl");
  for (int cores : kCoresPerNuma) {
    const CpuTopology topo = testing::LargeMachine(cores);
    const std::string path = fmt::format("{}/machine-{}.json", dir, topo.NumCpus());
    std::ofstream(path) << ToJsonString(topo);
    for (int n : kRequests) {
      for (bool uncore : {false, true}) {
        nlohmann::json req = {{"id", RowName(topo.NumCpus(), n, uncore)},
                              {"op", "take"},
                              {"topology", {{"file", path}}},
                              {"available", Available(topo).ToString()},
                              {"numCpus", n}};
        if (uncore) req["options"] = {{"prefer-align-cpus-by-uncorecache", true}};
        cases << req.dump() << '\n';
      }
    }
  }
  return cases.good() ? 0 : 1;
}

}  // namespace
}  // namespace huygens

int main(int argc, char** argv) {
  if (const char* dir = std::getenv("HUYGENS_ORACLE_BENCH_CASES"); dir != nullptr && *dir) {
    return huygens::EmitCases(dir);
  }
  huygens::RegisterAll();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
