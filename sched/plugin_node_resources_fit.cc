// NodeResourcesFit: kube-scheduler's plugin of that name (pkg/scheduler/framework/plugins/
// noderesources, fitsRequest and the LeastAllocated / MostAllocated scorers).
// Filter: the pod count, then cpu, memory, huygens.io/isolated-cpu and every other extended
// resource the pod requests (ComputePodRequests: pod-level requests and overhead included),
// each against allocatable minus what the node's pods request.
// Exclusive pods count against the user pool through the node's allocatable (allocatable
// mode: `cpu` is the user pool; isolated mode: huygens.io/isolated-cpu is).
// Score: cpu and memory, weight 1 each, (allocatable - requested) or requested, as a share of
// allocatable, times kMaxNodeScore, averaged; requested counts the node's pods and the pod with
// kube-scheduler's non-zero defaults for containers without a request (100m, 200 MiB;
// PodRequests::non_zero_cpu_milli).
#include "fmt/format.h"
#include "sched/plugins.h"

namespace huygens::sched {
namespace {

class NodeResourcesFit final : public FilterPlugin, public ScorePlugin {
 public:
  explicit NodeResourcesFit(ResourceScoring scoring) : scoring_(scoring) {}
  std::string_view Name() const override { return "NodeResourcesFit"; }

  Status Filter(CycleState& state, const NodeInfo& node) override {
    Status status;
    auto fail = [&](std::string reason) {
      if (status.ok()) {
        status = Status::Unschedulable(std::move(reason));
      } else {
        status.AddReason(std::move(reason));
      }
    };
    const NodeSummary& n = node.summary;
    if (n.pods + 1 > n.max_pods) fail("Too many pods");
    const PodRequests& want = state.facts().requests;
    if (want.cpu_milli > 0 && want.cpu_milli > n.cpu_allocatable_milli - n.cpu_requested_milli) {
      fail("Insufficient cpu");
    }
    if (want.memory_bytes > 0 &&
        want.memory_bytes > n.memory_allocatable_bytes - n.memory_requested_bytes) {
      fail("Insufficient memory");
    }
    if (want.isolated_cpus > 0 &&
        want.isolated_cpus > n.isolated_allocatable - n.isolated_requested) {
      fail(fmt::format("Insufficient {}", kIsolatedCpuResource));
    }
    for (const auto& [name, amount] : state.pod().extended_requests) {
      if (amount <= 0) continue;
      auto used = node.requested_extended.find(name);
      const int64_t in_use = used == node.requested_extended.end() ? 0 : used->second;
      if (amount > Allocatable(node.node.allocatable, name) - in_use) fail(fmt::format("Insufficient {}", name));
    }
    return status;
  }

  int64_t Score(CycleState& state, const NodeInfo& node) override {
    const PodRequests& want = state.facts().requests;
    const NodeSummary& n = node.summary;
    const int64_t cpu =
        ResourceScore(node.requested.non_zero_cpu_milli + want.non_zero_cpu_milli, n.cpu_allocatable_milli);
    const int64_t memory = ResourceScore(node.requested.non_zero_memory_bytes + want.non_zero_memory_bytes,
                                         n.memory_allocatable_bytes);
    return (cpu + memory) / 2;
  }

 private:
  static int64_t Allocatable(const NodeAllocatable& alloc, const std::string& name) {
    auto it = alloc.extended.find(name);
    return it == alloc.extended.end() ? 0 : it->second;
  }

  int64_t ResourceScore(int64_t requested, int64_t allocatable) const {
    if (allocatable <= 0 || requested > allocatable) return 0;
    // In floating point: bytes x 100 could overflow int64 on very large nodes.
    const double share = static_cast<double>(requested) / static_cast<double>(allocatable);
    const double used = scoring_ == ResourceScoring::kMostAllocated ? share : 1.0 - share;
    return static_cast<int64_t>(used * static_cast<double>(kMaxNodeScore));
  }

  ResourceScoring scoring_;
};

}  // namespace

std::unique_ptr<Plugin> NewNodeResourcesFit(ResourceScoring scoring) {
  return std::make_unique<NodeResourcesFit>(scoring);
}

}  // namespace huygens::sched
