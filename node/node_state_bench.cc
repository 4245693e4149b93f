// NodeState speed: allocate + release on a 384-CPU node at 50% occupancy, alone and with
// kubelet's device manager and memory manager (Static) predicted, and rebuilding a node from
// 200 pod allocations.
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

// The same machine with 64 GiB per NUMA node and 2 GPUs on each of its 8 NUMA nodes; the node
// models devices (range(0) & 1) and kubelet's memory manager Static (range(0) & 2). Filled to
// half its user pool with 2- and 4-CPU pods of 8 GiB, every fourth of the first 40 asking one GPU;
// each iteration allocates and releases a 4-CPU, 4 GiB pod that asks one GPU (when devices are
// modelled). Arg 0 is the CPU-only path on this machine, to compare against.
void BM_AllocateReleaseWithDevicesAndMemory(benchmark::State& state) {
  static auto machine = std::make_shared<const CpuTopology>(testing::BuildMachine(
      {.sockets = 2, .numa_per_socket = 4, .cores_per_numa = 24, .cores_per_l3 = 8,
       .memory_per_numa_bytes = uint64_t{64} << 30}));
  const bool devices = (state.range(0) & 1) != 0;
  const bool memory = (state.range(0) & 2) != 0;
  NodeConfig config;
  config.name = "big";
  config.system_cpus = CpuSet{0, 192};
  if (devices) {
    for (int numa = 0; numa < 8; ++numa) config.devices["example.com/gpu"][numa] = 2;
  }
  if (memory) {
    config.memory_manager = MemoryManagerConfig{
        .static_policy = true, .reserved_memory = {{0, {{"memory", uint64_t{1} << 30}}}}};
  }
  absl::StatusOr<NodeState> s = NodeState::Create(machine, config);
  if (!s.ok()) {
    state.SkipWithError(std::string(s.status().message()).c_str());
    return;
  }
  auto with_gpu = [&](PodSpec pod) {
    if (devices) pod.containers[0].extended_requests["example.com/gpu"] = 1;
    return pod;
  };
  for (int i = 0; s->ExclusiveCpus().Size() < s->UserPool().Size() / 2 && i < 1000; ++i) {
    PodSpec pod = Pod("fill-" + std::to_string(i), i % 3 == 0 ? 2 : 4);
    // 8 GiB each: kubelet (Static) fills one NUMA node's memory after another, lowest first.
    pod.containers[0].memory_request_bytes = pod.containers[0].memory_limit_bytes = int64_t{8} << 30;
    if (i % 4 == 0 && i < 40) pod = with_gpu(pod);  // 10 of the 16 GPUs
    (void)s->AllocatePod(pod);
  }
  PodSpec probe = with_gpu(Pod("probe", 4));
  probe.containers[0].memory_request_bytes = probe.containers[0].memory_limit_bytes = int64_t{4} << 30;
  for (auto _ : state) {
    auto a = s->AllocatePod(probe);
    if (!a.ok()) state.SkipWithError(std::string(a.status().message()).c_str());
    benchmark::DoNotOptimize(a);
    (void)s->ReleasePod("probe");
  }
}
BENCHMARK(BM_AllocateReleaseWithDevicesAndMemory)->DenseRange(0, 3)->ArgName("devices+2*memory");

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
