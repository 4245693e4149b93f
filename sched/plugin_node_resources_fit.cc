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
#include <algorithm>
#include <utility>

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
    // kube-scheduler's resourceAllocationScorer: a resource the node has none of is left out of
    // the average (weights 1 each).
    int64_t sum = 0;
    int64_t resources = 0;
    for (auto [requested, allocatable] :
         {std::pair{node.requested.non_zero_cpu_milli + want.non_zero_cpu_milli, n.cpu_allocatable_milli},
          std::pair{node.requested.non_zero_memory_bytes + want.non_zero_memory_bytes, n.memory_allocatable_bytes}}) {
      if (allocatable <= 0) continue;
      sum += ResourceScore(requested, allocatable);
      ++resources;
    }
    return resources == 0 ? 0 : sum / resources;
  }

 private:
  static int64_t Allocatable(const NodeAllocatable& alloc, const std::string& name) {
    auto it = alloc.extended.find(name);
    return it == alloc.extended.end() ? 0 : it->second;
  }

  // kube-scheduler's leastRequestedScore and mostRequestedScore, in whole numbers as there.
  // REQUIRES: allocatable > 0. More requested than allocatable (pods without requests count the
  // non-zero defaults) scores 0 least-allocated and, capped, 100 most-allocated.
  int64_t ResourceScore(int64_t requested, int64_t allocatable) const {
    if (scoring_ == ResourceScoring::kMostAllocated) return Percent(std::min(requested, allocatable), allocatable);
    if (requested > allocatable) return 0;
    return Percent(allocatable - requested, allocatable);
  }

  // floor(part * kMaxNodeScore / whole) for 0 <= part <= whole, without the product (bytes x 100
  // could overflow int64 on very large nodes): part = q * whole + r gives 100q + floor(100r / whole).
  static int64_t Percent(int64_t part, int64_t whole) {
    return part / whole * kMaxNodeScore + part % whole * kMaxNodeScore / whole;
  }

  ResourceScoring scoring_;
};

}  // namespace

std::unique_ptr<Plugin> NewNodeResourcesFit(ResourceScoring scoring) {
  return std::make_unique<NodeResourcesFit>(scoring);
}

}  // namespace huygens::sched
