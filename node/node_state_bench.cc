// NodeState speed: allocate + release on a 384-CPU node at 50% occupancy, and rebuilding a
// node from 200 pod allocations.
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "node/node_state.h"
#include "topology/testing/machines.h"

namespace huygens {
namespace {

std::shared_ptr<const CpuTopology> Machine384() {
  static auto topo = std::make_shared<const CpuTopology>(testing::LargeMachine(24));
  return topo;
}

PodSpec Pod(const std::string& uid, int cpus) {
  PodSpec p;
  p.uid = uid;
  p.containers.push_back(ContainerSpec{.name = "app",
                                       .cpu_request_milli = cpus * 1000,
                                       .cpu_limit_milli = cpus * 1000,
                                       .memory_request_bytes = 1 << 30,
                                       .memory_limit_bytes = 1 << 30});
  return p;
}

NodeState HalfFull(std::vector<std::pair<PodSpec, PodAllocation>>* pods = nullptr) {
  NodeConfig config;
  config.name = "big";
  config.system_cpus = CpuSet{0, 192};
  auto s = NodeState::Create(Machine384(), config);
  // 4-CPU pods until half the user pool is held.
  for (int i = 0; s->ExclusiveCpus().Size() < s->UserPool().Size() / 2; ++i) {
    PodSpec pod = Pod("fill-" + std::to_string(i), i % 3 == 0 ? 2 : 4);
    auto a = s->AllocatePod(pod);
    if (!a.ok()) break;
    if (pods != nullptr) pods->emplace_back(pod, *a);
  }
  return *std::move(s);
}

void BM_AllocateReleaseAtHalfOccupancy(benchmark::State& state) {
  NodeState s = HalfFull();
  const PodSpec pod = Pod("probe", static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto a = s.AllocatePod(pod);
    if (!a.ok()) state.SkipWithError("allocation failed");
    benchmark::DoNotOptimize(a);
    (void)s.ReleasePod("probe");
  }
}
BENCHMARK(BM_AllocateReleaseAtHalfOccupancy)->Arg(4)->Arg(16)->Arg(32);

void BM_Rebuild200Pods(benchmark::State& state) {
  NodeConfig config;
  config.name = "big";
  config.system_cpus = CpuSet{0, 192};
  auto s = NodeState::Create(Machine384(), config);
  std::vector<std::pair<PodSpec, PodAllocation>> pods;
  for (int i = 0; i < 200; ++i) {
    PodSpec pod = Pod("p" + std::to_string(i), i % 2 == 0 ? 2 : 0);
    if (i % 2 == 1) pod.containers[0].cpu_request_milli = 100;  // shared pods
    if (i % 2 == 1) pod.containers[0].cpu_limit_milli = 0;
    auto a = s->AllocatePod(pod);
    if (a.ok()) pods.emplace_back(pod, *a);
  }
  for (auto _ : state) {
    NodeState::RebuildReport r = s->Rebuild(pods);
    if (r.rebuilt != static_cast<int>(pods.size())) state.SkipWithError("rebuild rejected pods");
    benchmark::DoNotOptimize(r);
  }
  state.counters["pods"] = static_cast<double>(pods.size());
}
BENCHMARK(BM_Rebuild200Pods);

}  // namespace
}  // namespace huygens
