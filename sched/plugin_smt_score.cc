// SmtScore: prefers nodes where the pod's exclusive CPUs can be placed on whole free cores, so
// its threads share no core with another pod (packed and full-cores: ceil(cpus / threads per
// core) cores; spread-cores: one free core per CPU, the siblings then stay idle).
// Score: 100 when one NUMA node has that many free whole cores; else 50 + 50 x (best NUMA
// node's free cores / needed) when the node as a whole has them; else 50 x (node's free cores
// / needed). Machines without SMT, NUMA-blind nodes and pods without exclusive CPUs score 100.
#include <algorithm>

#include "sched/numa_view.h"
#include "sched/plugins.h"

namespace huygens::sched {
namespace {

class SmtScore final : public ScorePlugin {
 public:
  std::string_view Name() const override { return "SmtScore"; }

  int64_t Score(CycleState& state, const NodeInfo& node) override {
    const NodeSummary& config = node.summary;
    if (!config.has_cpu_state) return kMaxNodeScore;
    const int cpus = state.facts().Demand(config.mode).exclusive_cpus;
    if (cpus == 0) return kMaxNodeScore;
    const NumaView view(node, state.pod().spec.bind_policy.value_or(config.default_bind_policy));
    const int tpc = view.threads_per_core();
    if (tpc == 1) return kMaxNodeScore;
    const int needed = view.bind() == BindPolicy::kSpreadCores ? cpus : (cpus + tpc - 1) / tpc;
    int best = 0;
    for (int i = 0; i < view.size(); ++i) best = std::max(best, view.at(i).free_cores);
    if (best >= needed) return kMaxNodeScore;
    const int total = view.TotalFreeCores();
    if (total >= needed) return 50 + 50 * int64_t{best} / needed;
    return 50 * int64_t{total} / needed;
  }
};

}  // namespace

std::unique_ptr<Plugin> NewSmtScore() { return std::make_unique<SmtScore>(); }

}  // namespace huygens::sched
