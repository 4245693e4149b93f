// Waste: what placing part of an exclusive request on one NUMA node costs the node afterwards,
// beyond the CPUs it takes. The one rule the allocator (alloc/huygens_allocator.h, NUMA set
// choice), the scheduler's NUMA view (sched/numa_view.h, node choice) and the simulator's
// figures (sim/cpu_ledger.h) share, so that what Huygens avoids is exactly what is measured.
//
// What a share leaves behind:
//   shared cores   - cores whose SMT threads the share would split with another pod (a noisy
//                    neighbour on the same core). Huygens takes whole free cores first under
//                    every bind policy, so a share shares a core only when the NUMA node's whole
//                    free cores cannot hold it:
//                      packed       - share - threads_per_core x free_cores - unshared_threads
//                                     CPUs beyond whole cores and the free threads of cores
//                                     no other pod holds part of (unshared_threads: the pod's
//                                     own half cores, user threads beside the system pool),
//                                     each from a core another pod holds part of (exact for 2
//                                     threads per core, an upper bound above);
//                      spread-cores - share - free_cores (one thread per core);
//                      full-cores   - never (whole cores only);
//                    0 on machines without SMT.
//   stranded CPUs  - the free CPUs the NUMA node keeps after the share when they are fewer than
//                    kFragmentUnit: too few for the smallest exclusive pod the figures count,
//                    so they stay idle until a neighbour leaves (0 free is no waste).
//   clean fit      - the share strands nothing and uses a hole that could not hold a second
//                    pod of its size: it fills the NUMA node's free CPUs exactly, or leaves at
//                    least kFragmentUnit and fewer than `share` free.
//
// How choices rank (Rank, lower is better): fewer shared cores first, always. Then, when
// packing (most-allocated, nearest), clean fits before the others, and among the others the
// strategy's best fit decides even if it strands CPUs: avoiding a stranded CPU by breaking a
// hole that could hold two pods of this size costs more pods later than the stranded CPUs (two
// 6-CPU pods in a 20-CPU NUMA node leave no room for a 12-CPU one; best fit, 12 + 6, strands 2
// but fits both). When spreading (least-allocated), fewer stranded CPUs, then the strategy.
// Tried and dropped (HUYGENS_PROPERTY_TABLE=1 HUYGENS_PROPERTY_LAST=120
// build/sim/sim_placement_property_test, seeds 1-120):
// ranking, when packing, the placements that strand CPUs after the other unclean ones strands
// less (summed mean fragmented CPUs 292 -> 262) but schedules one pod fewer than the baseline in
// SimulatorTest.HuygensBeatsTheBaselineWhereKubeletWouldRejectPods; only while the cluster has
// room for its largest pods (sched/plugin_numa_score.cc) it still loses that pod, and strands
// about as much as today (284). Measured again with the unshared threads of the system pool
// counted (this file's unshared_threads): summed fragmented CPUs mean 272 -> 235 and peak
// 1047 -> 939, but summed SMT-shared peak 190 -> 202 (worse than the baseline on 9 -> 14
// seeds), and seed 38 becomes worse on both SMT-shared and fragmented CPUs: a trade, not a win.
//
// Thread-safety: pure functions over values.
#ifndef HUYGENS_ALLOC_WASTE_H_
#define HUYGENS_ALLOC_WASTE_H_

#include <span>
#include <utility>

#include "alloc/pod.h"

namespace huygens {

// Free CPUs of a NUMA node below this count are stranded: they cannot host a 4-CPU
// single-NUMA pod (the unit of `huygens simulate`'s fragmentation figure, docs/simulate.md).
inline constexpr int kFragmentUnit = 4;

// The waste of one or more shares (see the file comment). Sums with +=: counts add up, and a
// set of shares is a clean fit when every share is.
struct Waste {
  int shared_cores = 0;
  int stranded_cpus = 0;
  bool clean_fit = true;

  Waste& operator+=(const Waste& o) {
    shared_cores += o.shared_cores;
    stranded_cpus += o.stranded_cpus;
    clean_fit = clean_fit && o.clean_fit;
    return *this;
  }
  friend bool operator==(const Waste&, const Waste&) = default;
};

// The rank of a waste among the choices for one request (lower is better), see the file
// comment: (shared cores, not a clean fit) when `packing`, else (shared cores, stranded CPUs).
// Choices of equal rank are told apart by the NUMA strategy.
std::pair<int, int> Rank(const Waste& waste, bool packing);

// Free CPUs of a NUMA node that are stranded: `free_cpus` when 0 < free_cpus < kFragmentUnit,
// else 0. The simulator's fragmentation figure sums this over NUMA nodes.
int StrandedCpus(int free_cpus);

// The waste of taking `share` CPUs (REQUIRES: 0 <= share <= free_cpus) out of a NUMA node that
// has `free_cpus` free CPUs, `free_cores` of whose cores have every thread free, on a machine
// with `threads_per_core` threads per core (1 without SMT), under `bind`; see the file comment.
// `unshared_threads`: free threads of the NUMA node on cores that are not wholly free but of
// which no other pod holds a thread: the rest belongs to the same pod
// (ExclusiveRequest::pod_cpus) or lies outside the user pool (a system-pool sibling); taking
// them shares no core with another pod (packed only).
Waste ShareWaste(BindPolicy bind, int threads_per_core, int free_cpus, int free_cores,
                 int share, int unshared_threads = 0);

// One core's contribution to ShareWaste's `unshared_threads`: its `free` free threads when the
// core is partly free (0 < free < threads) and none of its taken threads is held by another
// pod (`held_by_others` == 0: each taken thread is the same pod's or outside the user pool),
// else 0. The allocator (per request, with ExclusiveRequest::pod_cpus) and NodeState's counters
// (NumaCounters::unshared_threads, without a pod) both count with it.
constexpr int UnsharedThreadsOfCore(int threads, int free, int held_by_others) {
  return free > 0 && free < threads && held_by_others == 0 ? free : 0;
}

// The most CPUs a share can take out of a NUMA node that offers `offer` without splitting a
// core with another pod (ShareWaste's shared cores stay 0 up to it): under packed on a machine
// with SMT, the CPUs of its `free_cores` whole free cores plus `unshared_threads` (as ShareWaste),
// at most `offer`; under the other bind policies and without SMT, `offer` (their units are
// whole cores or single threads of whole cores already). SplitShares' `whole`.
int UnsharedCapacity(BindPolicy bind, int threads_per_core, int offer, int free_cores,
                     int unshared_threads = 0);

// How a request of `cpus` CPUs spread over several NUMA nodes is divided among them, the nodes
// taken in the order given: first each gives what its whole free cores hold, min(whole[i],
// what is left), then each gives min(offers[i] minus what it gave, what is left). `offers[i]`:
// what node i offers the request (its bind-policy units); `whole[i]` (<= offers[i]): the part
// of it a share can take without splitting a core with another pod (packed with SMT: the CPUs
// of its whole free cores plus its unshared threads; otherwise offers[i] itself, and the
// rule is plain first-come). So a share splits a core with another pod only when the whole
// cores of the entire set cannot hold the request, as kubelet's take over an aligned NUMA set
// also takes whole cores first (without this, the first node gave all its free threads and
// shared cores that a later node's whole cores could have spared: property test, SMT-shared
// peak worse than the NRT peer / baseline on 17 / 18 seeds -> 12 / 14). Writes shares[i]
// (0 for a node that gives nothing); what the nodes cannot give stays unassigned.
// REQUIRES: offers, whole and shares have one size. Pure; allocates nothing.
void SplitShares(std::span<const int> offers, std::span<const int> whole, int cpus,
                 std::span<int> shares);

}  // namespace huygens

#endif  // HUYGENS_ALLOC_WASTE_H_
