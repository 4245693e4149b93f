// NumaView: one node's per-NUMA CPU figures for one exclusive request, on the stack.
//
// What it is: the NUMA arithmetic the Huygens plugins share (NumaFit, NumaScore, SmtScore),
// computed from NodeState::Counters() only (never walking CPUs), in a fixed-size array so that
// judging a node allocates nothing. Per NUMA node with user-pool CPUs:
//   user       - user-pool CPUs (kubelet's "allocatable" for hints);
//   free       - user-pool CPUs not held exclusively (kubelet's "available");
//   free_cores - cores whose threads are all free;
//   unshared   - free threads of cores split with the system pool that no pod holds part of
//                (NumaCounters::unshared_threads): a share takes them, like whole cores,
//                without splitting a core with another pod (alloc/waste.h);
//   offer      - what Huygens' allocator (alloc/huygens_allocator.h, step 2) offers a request
//                of the given bind policy, from the counts (NumaOfferFromCounts):
//                floor(capacity factor x free), then packed: all of it; full-cores: the whole
//                free cores' CPUs under that bound; spread-cores: cores with a free thread
//                (free_cores + the partly free cores, exact for up to 2 threads per core, an
//                upper bound above).
//
// The answers:
//   KubeletAdmits    - kubelet's topology manager with the CPU manager as the only hint
//                      provider, in closed form: none and best-effort always admit;
//                      single-numa-node admits when one NUMA node has `cpus` free; restricted
//                      when some set of the preferred size (the fewest NUMA nodes whose user
//                      CPUs could hold the request; all of them when none can) has `cpus` free,
//                      i.e. when the largest frees of that many nodes add up. Equal to
//                      CpuHintsFromCounts + MergeHints (sched/numa_view_test.cc checks it).
//   AllocatorFits    - the allocator's step 3 on the offers: one node (single-numa-node), a
//                      set of the preferred size (restricted), any set (none, best-effort).
//   WasteOf          - the waste (alloc/waste.h: cores shared with other pods, then stranded
//                      CPUs) of a choice; Choose ranks single nodes by it before the strategy,
//                      as the allocator does.
//   OfferWithin      - the offers inside a NUMA set kubelet fixes (its devices, its memory).
//   Place            - subtracts a request from the figures where the allocator would most
//                      likely put it (one node by strategy: the smallest sufficient offer for
//                      most-allocated / nearest, the largest for least-allocated; several
//                      nodes: the largest offers first), to judge a pod's next container in
//                      scope `container`. An estimate: Reserve is the authority.
//
// Thread-safety: a value; functions are pure.
#ifndef HUYGENS_SCHED_NUMA_VIEW_H_
#define HUYGENS_SCHED_NUMA_VIEW_H_

#include <array>
#include <span>
#include <vector>

#include "alloc/huygens_allocator.h"
#include "alloc/pod.h"
#include "alloc/waste.h"
#include "node/node_state.h"
#include "sched/cache.h"

namespace huygens::sched {

class NumaView {
 public:
  static constexpr int kMaxNuma = 64;
  // No default values on purpose: a view is built on every node judged, and its arrays are
  // written by Add before they are read (only the first size() entries are meaningful).
  struct Figures {
    int numa;
    int user;
    int free;
    int free_cores;
    int unshared;
    int offer;
  };

  // From a NodeState. NUMA nodes beyond kMaxNuma with user CPUs are ignored.
  NumaView(const NodeState& state, BindPolicy bind);
  // From the node's summary when it holds the figures inline, else from its NodeState.
  // REQUIRES: node.cpu_state != nullptr.
  NumaView(const NodeInfo& node, BindPolicy bind);

  int size() const { return size_; }
  const Figures& at(int i) const { return figures_[static_cast<size_t>(i)]; }
  int threads_per_core() const { return tpc_; }
  BindPolicy bind() const { return bind_; }
  int TotalFree() const;
  int TotalFreeCores() const;

  // PreferredNumaCount (alloc/huygens_allocator.h) over the nodes' user CPUs: the fewest NUMA
  // nodes whose user CPUs add up to `cpus` (all nodes when none suffices). The allocator at
  // Reserve sizes restricted sets by the same call over the same user pool.
  int PreferredSize(int cpus) const;
  bool KubeletAdmits(TopologyPolicy policy, int cpus) const;
  bool AllocatorFits(TopologyPolicy policy, int cpus) const;
  // The fewest NUMA nodes the allocator would use for `cpus` under `policy` (0 when it does
  // not fit).
  int NodesNeeded(TopologyPolicy policy, int cpus) const;
  // Indexes (into at()) of the NUMA nodes the allocator would most likely use, per the file
  // comment; empty when it does not fit. Written into `out` (cleared first).
  void Choose(TopologyPolicy policy, NumaStrategy strategy, int cpus,
              std::vector<int>& out) const;
  // The waste of putting `cpus` on the nodes `chosen` (indexes into at(), as Choose returns
  // them, dividing the request in that order as the allocator does: alloc/waste.h's
  // SplitShares, whole free cores first).
  Waste WasteOf(std::span<const int> chosen, int cpus) const;
  // Choose, then subtract the request from those nodes' figures.
  void Place(TopologyPolicy policy, NumaStrategy strategy, int cpus);
  // What the allocator can give `cpus` exclusive CPUs inside the NUMA node ids `set` (a NUMA
  // set kubelet has fixed, e.g. where it puts the pod's devices or memory): the offers of its
  // nodes added up; under restricted only the largest offers of a preferred-size subset
  // (PreferredSize), 0 when the set has fewer nodes.
  int OfferWithin(TopologyPolicy policy, const std::vector<int>& set, int cpus) const;

 private:
  void Add(int numa, int user, int free, int free_cores, int unshared, double factor);
  void Recompute(Figures& f) const;
  // The shares of `cpus` over `chosen` (by position; alloc/waste.h's SplitShares).
  std::array<int, kMaxNuma> Split(std::span<const int> chosen, int cpus) const;
  // Sum of the `k` largest values of `field` over the nodes.
  int TopSum(int Figures::*field, int k) const;

  std::array<Figures, kMaxNuma> figures_;
  std::array<double, kMaxNuma> factor_;
  int size_ = 0;
  int tpc_ = 1;
  BindPolicy bind_;
};

}  // namespace huygens::sched

#endif  // HUYGENS_SCHED_NUMA_VIEW_H_
