// Planner speed: PlanMoves on a 384-CPU node (8 NUMA nodes) at half occupancy, its pods spread
// over the NUMA nodes and grouped in pairs whose members sit on different NUMA nodes; the plan
// horizon (max moves) is the argument. The scheduler plans every node once per interval, so
// this is the per-node cost of a rebalancer round.
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "rebalance/planner.h"
#include "topology/testing/machines.h"

namespace huygens::rebalance {
namespace {

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

void BM_PlanHalfFullNodeWithSplitPairs(benchmark::State& state) {
  auto topo = std::make_shared<const CpuTopology>(huygens::testing::LargeMachine(24));
  NodeConfig config;
  config.name = "big";
  NodeState node = *NodeState::Create(topo, config);
  std::vector<AffinityGroup> groups;
  const int numa = topo->NumNumaNodes();
  for (int i = 0; node.ExclusiveCpus().Size() < node.UserPool().Size() / 2; ++i) {
    const std::string uid = "p" + std::to_string(i);
    // Pair members near NUMA nodes that are far apart, so every pair needs a move.
    const int near = (i % 2 == 0) ? (i / 2) % numa : ((i / 2) + numa / 2) % numa;
    if (!node.AllocatePod(Pod(uid, 4), {topo->NumaNodes()[static_cast<size_t>(near)].id}).ok()) {
      break;
    }
    if (i % 2 == 1) {
      groups.push_back({"g" + std::to_string(i / 2), GroupPolicy::kSameNuma,
                        {"p" + std::to_string(i - 1), uid}});
    }
  }
  const PlannerOptions options{.max_moves = static_cast<int>(state.range(0))};
  int moves = 0;
  for (auto _ : state) {
    absl::StatusOr<Plan> plan = PlanMoves(node, groups, {}, options);
    moves = static_cast<int>(plan->moves.size());
    benchmark::DoNotOptimize(plan);
  }
  state.counters["pods"] = static_cast<double>(node.Pods().size());
  state.counters["groups"] = static_cast<double>(groups.size());
  state.counters["moves"] = moves;
}
BENCHMARK(BM_PlanHalfFullNodeWithSplitPairs)->Arg(1)->Arg(8)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace huygens::rebalance
