// Discovery speed: the 384-CPU SGI UV 2000 XML and one sysfs tarball (including unpacking).
// Run: build-*/topology/discovery/discovery_bench
#include <benchmark/benchmark.h>

#include <string>

#include "topology/discovery/discovery.h"

namespace huygens {
namespace {

const std::string kDir = std::string(HUYGENS_FIXTURES) + "/topologies/";

void BM_DiscoverXml384Cpus(benchmark::State& state) {
  for (auto _ : state) {
    absl::StatusOr<CpuTopology> t = DiscoverFromXml(kDir + "192em64t-24n8c2t.hwloc2.xml");
    if (!t.ok() || t->NumCpus() != 384) state.SkipWithError("discovery failed");
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_DiscoverXml384Cpus)->Unit(benchmark::kMillisecond);

void BM_DiscoverTarball80Cpus(benchmark::State& state) {
  for (auto _ : state) {
    absl::StatusOr<CpuTopology> t = DiscoverFromFsroot(kDir + "memorysidecaches.tar.bz2");
    if (!t.ok() || t->NumCpus() != 80) state.SkipWithError("discovery failed");
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_DiscoverTarball80Cpus)->Unit(benchmark::kMillisecond);

void BM_DiscoverSynthetic1536Cpus(benchmark::State& state) {
  for (auto _ : state) {
    absl::StatusOr<CpuTopology> t = DiscoverSynthetic("package:2 numa:4 l3cache:12 core:8 pu:2");
    if (!t.ok() || t->NumCpus() != 1536) state.SkipWithError("discovery failed");
    benchmark::DoNotOptimize(t);
  }
}
BENCHMARK(BM_DiscoverSynthetic1536Cpus)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace huygens
