// StaticPolicy: kubelet's CPU manager `static` policy, one container at a time.
//
// What it is: the configuration of kubelet's static policy (topology, reserved CPUs, options of
// --cpu-manager-policy-options) and its per-container decisions, matching kubelet's
// pkg/kubelet/cm/cpumanager/policy_static.go (1.34+): only containers of Guaranteed pods with
// whole-number CPU requests get exclusive CPUs; the rest run in the shared pool (the default
// cpuset). CPUs of regular init containers are reused by later containers of the same pod;
// restartable init containers (sidecars) keep theirs.
//
// State: the policy holds none. CpuManagerState (kubelet's cpu_manager_state content) is passed
// in and updated by Allocate / RemoveContainer.
//
// Invariants of a state produced by InitialState + Allocate/RemoveContainer: the default set
// and every assignment are pairwise disjoint; their union is every online CPU (minus reserved
// with strict-cpu-reservation).
//
// Thread-safety: a StaticPolicy is immutable; Allocate/RemoveContainer modify only the state
// they are given (callers serialise access to one state).
#ifndef HUYGENS_ALLOC_STATIC_POLICY_H_
#define HUYGENS_ALLOC_STATIC_POLICY_H_

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "alloc/hint.h"
#include "alloc/pod.h"
#include "alloc/take.h"
#include "alloc/topology_index.h"
#include "cpuset/cpuset.h"
#include "topology/topology.h"

namespace huygens {

// kubelet's --cpu-manager-policy-options, parsed. Every field defaults to false (the option
// absent), as in kubelet.
struct StaticPolicyOptions {
  bool full_pcpus_only = false;                   // "full-pcpus-only"
  bool distribute_cpus_across_numa = false;       // "distribute-cpus-across-numa"
  bool align_by_socket = false;                   // "align-by-socket"
  bool distribute_cpus_across_cores = false;      // "distribute-cpus-across-cores"
  bool prefer_align_cpus_by_uncorecache = false;  // "prefer-align-cpus-by-uncorecache"
  bool strict_cpu_reservation = false;            // "strict-cpu-reservation"

  friend bool operator==(const StaticPolicyOptions&, const StaticPolicyOptions&) = default;
};

// Parses --cpu-manager-policy-options as kubelet does (NewStaticPolicyOptions + its
// validation): values are Go booleans ("true", "1", "t", "T", "TRUE", "True", "false", ...).
// Errors (InvalidArgument, naming the option): an unknown key; a value that is not a boolean;
// the combinations kubelet rejects (see static_policy.cc, each from kubelet's
// policy_options.go).
absl::StatusOr<StaticPolicyOptions> ParseStaticPolicyOptions(
    const std::map<std::string, std::string>& options);

// kubelet's cpu_manager_state content: the shared pool and the exclusive assignments.
struct CpuManagerState {
  CpuSet default_cpu_set;
  // pod UID -> container name -> its exclusive CPUs.
  std::map<std::string, std::map<std::string, CpuSet>> assignments;

  friend bool operator==(const CpuManagerState&, const CpuManagerState&) = default;
};

// True for the error Allocate returns when full-pcpus-only cannot be honoured (kubelet's
// SMTAlignmentError; its message has kubelet's shape, e.g. "SMT Alignment Error: requested 3
// cpus not multiple cpus per core = 2").
bool IsSmtAlignmentError(const absl::Status& status);

class StaticPolicy {
 public:
  // Builds the policy. `reserved_cpus`, when given, is the reserved set (kubelet's
  // reservedSystemCPUs; its size must equal num_reserved_cpus when num_reserved_cpus > 0);
  // otherwise kubelet's choice: TakeByTopology of num_reserved_cpus over all online CPUs.
  // Errors (InvalidArgument): num_reserved_cpus < 0; no reservation at all (kubelet requires a
  // non-zero reservation for the static policy); a reserved set outside the online CPUs or of
  // the wrong size; a reservation larger than the machine; align-by-socket on a machine with
  // more sockets than NUMA nodes (kubelet's ValidateStaticPolicyOptions; its check against the
  // single-numa-node topology policy belongs to the caller, who knows the topology policy).
  static absl::StatusOr<StaticPolicy> Create(const CpuTopology& topo,
                                             std::optional<CpuSet> reserved_cpus,
                                             int num_reserved_cpus, StaticPolicyOptions options);

  const CpuTopology& Topology() const { return topo_; }
  const StaticPolicyOptions& Options() const { return options_; }
  CpuSet Reserved() const { return reserved_; }
  // The reserved CPUs and all their siblings (kubelet's reservedPhysicalCPUs).
  CpuSet ReservedPhysical() const { return reserved_physical_; }
  // kubelet's cpuGroupSize: CPUs per core.
  int CpuGroupSize() const { return index_.CpusPerCore(); }

  // A fresh state: default = all online CPUs (minus the reserved ones with
  // strict-cpu-reservation), no assignments.
  CpuManagerState InitialState() const;

  // kubelet's static policy Allocate for one container of `pod`: returns the container's
  // exclusive cpuset and records it in `state` (assignment added, CPUs removed from the default
  // set; CPUs reused from the pod's init containers are removed from those). A container that
  // gets no exclusive CPUs (not Guaranteed, fractional request, 0 CPUs) returns the shared pool
  // (the default set) and leaves `state` unchanged. A container already assigned returns its
  // assignment and leaves `state` unchanged, before the full-pcpus-only checks (kubernetes PR
  // 129079; kubelet v1.35.4 checks them first and can refuse the re-admission).
  // On machines whose cores or sockets differ in size (hybrid parts, offline threads) the take
  // is kubelet's to the letter (TakeOptions::whole_units_by_average_size): a core or socket
  // kubelet calls free is given whole, so the cpuset can hold CPUs outside the default set,
  // even CPUs another container holds, as kubelet v1.35.4 does.
  // `affinity`: the topology manager's merged hint for the container (nullopt = none).
  // Errors: the container is not in the pod (NotFound); full-pcpus-only and the request is not
  // a multiple of CpusPerCore(), or not enough free whole cores (SMT alignment error, see
  // IsSmtAlignmentError); not enough CPUs (ResourceExhausted). On error `state` is unchanged.
  absl::StatusOr<CpuSet> Allocate(CpuManagerState& state, const PodSpec& pod,
                                  const std::string& container_name,
                                  const std::optional<TopologyHint>& affinity) const;

  // Returns the container's CPUs to the default set and drops its assignment (kubelet's
  // RemoveContainer). Unknown pods/containers are ignored.
  void RemoveContainer(CpuManagerState& state, const std::string& pod_uid,
                       const std::string& container_name) const;

  // CPUs any new exclusive allocation may use: the default set minus the reserved CPUs
  // (kubelet's GetAvailableCPUs).
  CpuSet AvailableCpus(const CpuManagerState& state) const;

  // CPUs held by `pod`'s regular (non-restartable) init containers in `state`, minus those also
  // held by its app containers and restartable init containers: what later containers of the
  // same pod may reuse. Equals kubelet's cpusToReuse after updateCPUsToReuse when containers
  // are allocated in kubelet's order (init containers first); derived from the state, so it
  // survives a restart (kubelet's in-memory map does not).
  CpuSet ReusableCpus(const CpuManagerState& state, const PodSpec& pod) const;

  // kubelet's policy takeByTopology: distributed across NUMA nodes (group size CpusPerCore()
  // with full-pcpus-only, else 1) or packed, with the sorting and uncore options configured.
  absl::StatusOr<CpuSet> Take(const CpuSet& available, int num_cpus) const;

 private:
  StaticPolicy(CpuTopology topo, StaticPolicyOptions options)
      : topo_(std::move(topo)), index_(topo_), options_(options) {}

  CpuTopology topo_;
  TopologyIndex index_;
  CpuSet reserved_, reserved_physical_;
  StaticPolicyOptions options_;
};

}  // namespace huygens

#endif  // HUYGENS_ALLOC_STATIC_POLICY_H_
