// CpuLedger: the simulator's own record of which pod holds which exclusive CPU on one node.
//
// What it is: per logical CPU, the pod holding it (or none), kept beside the scheduler's and
// kubelet's bookkeeping so the simulator can check them independently (no two pods ever hold
// one exclusive CPU; every held CPU is in the user pool) and measure the node: CPUs held,
// cores whose SMT siblings are held by two different pods, and fragmentation (free user-pool
// CPUs on NUMA nodes with fewer than kFragmentUnit free CPUs, i.e. CPUs that cannot host a
// 4-CPU single-NUMA pod: alloc/waste.h's StrandedCpus, the rule Huygens' allocator and
// scheduler rank choices by), and the NUMA load spread. Counters are updated incrementally,
// O(CPUs touched).
//
// Invariants: Owner(cpu) is -1 or the id of the one pod that took it; counters equal a recount.
//
// Thread-safety: not thread-safe; one simulation owns its ledgers.
#ifndef HUYGENS_SIM_CPU_LEDGER_H_
#define HUYGENS_SIM_CPU_LEDGER_H_

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "alloc/waste.h"
#include "cpuset/cpuset.h"
#include "topology/topology.h"

namespace huygens::sim {

// Index tables of one machine shape, shared by every ledger of that shape.
struct LedgerShape {
  explicit LedgerShape(std::shared_ptr<const CpuTopology> topology);
  std::shared_ptr<const CpuTopology> topology;
  std::vector<int> core_of;              // cpu id -> dense core index, -1 when offline/unknown
  std::vector<std::vector<int>> cores;   // dense core index -> its online CPUs
  std::vector<int> numa_of;              // cpu id -> index into NumaNodes(), -1 when unknown
};

class CpuLedger {
 public:
  // REQUIRES: user_pool is a set of online CPUs of the shape's topology.
  CpuLedger(std::shared_ptr<const LedgerShape> shape, const CpuSet& user_pool);

  // Records `cpus` as held by `pod` (>= 0). Errors (FailedPrecondition, naming the CPUs and
  // the other holder): a CPU outside the user pool, or held by another pod. Nothing changes
  // on error. Taking a CPU the same pod already holds is allowed (kubelet's init-container reuse).
  absl::Status Take(int pod, const CpuSet& cpus);
  // Frees every CPU of `cpus` that `pod` holds.
  void Release(int pod, const CpuSet& cpus);

  int Owner(int cpu) const;  // -1 when free or unknown
  int UserCpus() const { return user_cpus_; }
  int HeldCpus() const { return held_; }
  int SharedSiblingCores() const { return shared_cores_; }
  int FragmentedFreeCpus() const { return fragmented_; }
  // NUMA load spread: over the NUMA nodes with user-pool CPUs, the most exclusive CPUs held on
  // one minus the fewest; 0 with fewer than two such NUMA nodes. O(NUMA nodes).
  int NumaLoadSpread() const;
  // NUMA nodes with user-pool CPUs (a node with at least 2 has a spread to measure).
  int UserNumaNodes() const { return user_numa_nodes_; }
  const CpuTopology& Topology() const { return *shape_->topology; }
  const CpuSet& UserPool() const { return user_pool_; }

 private:
  bool CoreShared(int core) const;
  int FragmentOf(int numa_index) const;

  std::shared_ptr<const LedgerShape> shape_;
  CpuSet user_pool_;
  std::vector<int> owner_;      // cpu id -> pod, -1 free
  std::vector<int> free_per_numa_;
  std::vector<int> user_per_numa_;  // user-pool CPUs per NUMA node (index into NumaNodes())
  int user_numa_nodes_ = 0;
  int user_cpus_ = 0;
  int held_ = 0;
  int shared_cores_ = 0;
  int fragmented_ = 0;
};

}  // namespace huygens::sim

#endif  // HUYGENS_SIM_CPU_LEDGER_H_
